#!/usr/bin/env bash
# tests/fuzz/make-corpus.sh OUTDIR [BUILD]: writes the seed corpora OUTDIR/{cfl,rawarray,ismrmrd,twix,nifti,dicom_reference,stream} with
# fuzz_make_corpus (built by run.sh in build/fuzz): small valid inputs from Larmor's own writers, so the
# repository holds no binary seeds.
set -euo pipefail
out=${1:?usage: make-corpus.sh OUTDIR [BUILD]}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build/fuzz}
gen=$build/bin/fuzz_make_corpus
[[ -x $gen ]] || { echo "make-corpus.sh: $gen not built (run tests/fuzz/run.sh, or build target fuzz_make_corpus)" >&2; exit 1; }
rm -rf "$out"
mkdir -p "$out"
ASAN_OPTIONS=detect_leaks=0 "$gen" "$out"
