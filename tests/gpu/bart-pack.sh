#!/usr/bin/env bash
# Packs BART (Debian's bart, installed by installer/install-deps.sh) for the lent GPU machine, which has no
# bart, so that the BART comparisons run there with Larmor's CUDA path (tests/gpu/bart-on-device.sh).
#
#   tests/gpu/bart-pack.sh      (writes build/bart-pack/bin/bart and build/bart-pack/lib: ~20 MB)
#
# What travels: the bart binary and its shared-library closure (ldd: FFTW, LAPACK/BLAS, gfortran, libpng,
# libgomp, ...). What stays: the C/C++ runtimes, which the GPU machine has (glibc 2.39 there, newer than
# Debian 12's 2.36, so binaries built here run there). Carry build/bart-pack on the run call.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BART=$(command -v bart) || { echo "bart-pack: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
OUT=$ROOT/build/bart-pack
rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
cp -L "$BART" "$OUT/bin/bart"
ldd "$BART" | awk '/=> \// {print $3}' | while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libgcc_s.so.*|libstdc++.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$OUT/lib/" ;;
  esac
done
echo "bart-pack: $(du -sh "$OUT" | cut -f1) in $OUT ($(ls "$OUT/lib" | wc -l) libraries); carry build/bart-pack"
