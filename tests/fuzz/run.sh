#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS]: configures build/fuzz with clang (libFuzzer, ASan, UBSan), builds the
# fuzz targets, makes the seed corpora and runs each fuzzer for SECONDS (default 600), one after the
# other. The growing corpora stay in build/fuzz/corpus/NAME, findings in build/fuzz/artifacts/NAME/.
# Environment: JOBS (build parallelism, default 2), FUZZERS (default "cfl rawarray ismrmrd twix nifti dicom_reference stream").
# Exit status: non-zero when any fuzzer found something.
set -euo pipefail
seconds=${1:-600}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$root/build/fuzz
fuzzers=${FUZZERS:-cfl rawarray ismrmrd twix nifti dicom_reference stream}

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLARMOR_FUZZ=ON -DLARMOR_CUDA=OFF -DLARMOR_GUI=OFF -DLARMOR_TESTS=OFF -DLARMOR_BENCH=OFF >/dev/null
targets=fuzz_make_corpus
for f in $fuzzers; do targets="$targets fuzz_$f"; done
case " $fuzzers " in *" ismrmrd "*) targets="$targets larmor-h5check" ;; esac  # the reader's crash sandbox
# shellcheck disable=SC2086
cmake --build "$build" -j"${JOBS:-2}" --target $targets
bash "$root/tests/fuzz/make-corpus.sh" "$build/seeds" "$build"

export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
for f in $fuzzers; do
  mkdir -p "$build/corpus/$f" "$build/artifacts/$f"
  echo "== fuzz_$f for ${seconds}s (corpus $build/corpus/$f)"
  # Inputs are small files; 10 s per input or 2 GiB of memory is a hang or an allocation bomb.
  set +e
  "$build/bin/fuzz_$f" "$build/corpus/$f" "$build/seeds/$f" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$f/" >"$build/fuzz_$f.log" 2>&1
  rc=$?
  set -e
  grep -E "^#[0-9]+ +(INITED|DONE)|stat::number_of_executed_units|ERROR|SUMMARY" "$build/fuzz_$f.log" || true
  if [[ $rc -ne 0 ]]; then
    echo "fuzz_$f: FOUND SOMETHING (exit $rc; see $build/fuzz_$f.log and $build/artifacts/$f/)"
    status=1
  fi
done
exit $status
