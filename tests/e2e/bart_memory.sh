#!/usr/bin/env bash
# The CPU memory bound: for the same gridding and CG jobs on the same files, larmor-cli's peak resident
# memory (whole process, as a user runs it: --device auto, so the GPU plugin's loading counts) is at most twice
# BART 0.8's (Debian's bart, installed by installer/install-deps.sh). The jobs and the measurement are
# tests/bench/bart_jobs.sh's (docs/benchmarks.md has its table), run once, with 5 CG iterations instead of 30 (a
# peak is reached in the set-up and the first iteration) and without BART's radial maps chain (`nufft -i`, the
# slow part; Larmor's own-maps radial job is compared with pics, the largest process of that chain). Peaks
# are deterministic to a few MiB; times are not asserted (benchmarks: tests/bench).
set -euo pipefail
cli=$1 dir=$2
deps="installer/install-deps.sh installs it"
command -v bart >/dev/null || { echo "bart_memory: bart is not installed ($deps)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bart_memory: /usr/bin/time is not installed ($deps)" >&2; exit 1; }
# A memory bound says nothing about an AddressSanitizer build (`make asan-test`): its shadow memory,
# redzones and quarantine are 4-10x a job's peak. The bound is asserted on the release build (`make test`).
if ldd "$cli" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: $cli is built with AddressSanitizer: peak memory is the sanitizer's, not Larmor's"
  exit 77
fi
rm -rf "$dir"; mkdir -p "$dir"
REPS=1 ITERS=5 BART_RADIAL_MAPS=0 PEAK_BOUND=2 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} \
  bash "$(dirname "$0")/../bench/bart_jobs.sh" "$cli" "$dir"
