#!/usr/bin/env bash
# The one command for the lent GPU machine: configure (device preset), build, GPU tests, compute-sanitizer
# (memcheck, racecheck), benchmarks; logs and JSON into OUTDIR and a short summary table printed last.
#
#   tests/gpu/run-on-device.sh OUTDIR
#
# Time there is short (10 minutes a command), so every step has a time limit and the steps can be chosen:
#   STEPS=build,test,memcheck,racecheck,bench,cli,bart   (the default: all of them, in this order; bart runs the
#   BART comparisons on CPU and CUDA where build/bart-pack was carried: tests/gpu/bart-pack.sh, else it says so)
#   e.g. STEPS=build first, then STEPS=test,memcheck,racecheck,bench,cli: build outputs stay on a warm machine.
# Other knobs: CTEST_JOBS (4), TEST_TIMEOUT (240 s), MEMCHECK_TIMEOUT (180 s), RACECHECK_TIMEOUT (90 s),
#   BENCH_TIMEOUT (180 s), BENCH_FILTER (^cuda: the GPU cases; larmor_bench's CPU cases, timed on the build machine,
#   would not fit a device lease's time), CLI_TIMEOUT (300 s), BUILD_DIR (build/device), BENCH_CARD (the card whose
#   baselines the gate takes; default: nvidia-smi's name of the first GPU).
#   BUILD_TARGETS (larmor-cli larmor_gpu_tests larmor_bench: what the build step builds).
# Exit status: 2 configure/build failed, 1 GPU tests failed or any gpu test was SKIPPED (on this machine a
# skip means the CUDA plugin or device was not usable: it is a failure), 3 memcheck found errors, 4 a
# benchmark errored (larmor_bench or larmor-cli bench exited non-zero or timed out, a benchmark reported an
# error, or a requested one was not built), 5 the benchmark gate failed (tests/gpu/bench_gate.py, for larmor_bench
# and for larmor-cli bench): a benchmark more than 15 % (BENCH_MAX_REGRESSION) slower than this card's baseline in
# docs/benchmarks.md, a baselined benchmark that did not run, or no baseline block for this card (a new card: its
# figures are written to bench-baseline-*.txt to be recorded; BENCH_GATE=0 reports without failing),
# 6 a BART comparison failed (tests/gpu/bart-on-device.sh), 0 otherwise
# (racecheck hazards are reported, not fatal: cuFFT's own kernels are outside our control).
set -u -o pipefail

OUT=${1:?usage: tests/gpu/run-on-device.sh OUTDIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2

STEPS=",${STEPS:-build,test,memcheck,racecheck,bench,cli,bart},"
BUILD=${BUILD_DIR:-build/device}
BIN=$BUILD/bin
JOBS=$(nproc)
status=0
declare -a SUMMARY=()
note() { SUMMARY+=("$(printf '%-22s %s' "$1" "$2")"); }
want() { [[ $STEPS == *",$1,"* ]]; }
secs() { echo $(( $(date +%s) - $1 )); }
# The benchmark gate on one JSON (larmor_bench's or larmor-cli bench's): a summary line, status 5 unless BENCH_GATE=0.
#   bench_gate LABEL JSON [bench_gate.py options...]
bench_gate() {
  local label=$1 json=$2 grc; shift 2
  python3 "$ROOT/tests/gpu/bench_gate.py" "$json" "$ROOT/docs/benchmarks.md" --card "$CARD" \
    --max-regression "${BENCH_MAX_REGRESSION:-0.15}" --emit "$OUT/bench-baseline-$label.txt" "$@" \
    >"$OUT/bench-gate-$label.txt" 2>&1
  grc=$?
  note "gate $label" "$(tail -n 1 "$OUT/bench-gate-$label.txt") (rc $grc, bench-gate-$label.txt)"
  if [[ $grc -ne 0 && ${BENCH_GATE:-1} != 0 ]]; then
    grep -E "REGRESSION|MISSING|FAILED|no baseline for this card" "$OUT/bench-gate-$label.txt" | head -n 20 \
      | sed 's/^/    /' >>"$OUT/failed-tests.txt"
    [[ $status -eq 0 ]] && status=5
  fi
}

echo "== larmor GPU run: $(date -u +%FT%TZ) on $(hostname)" | tee "$OUT/run.log"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | tee -a "$OUT/run.log"
fi
git rev-parse --short HEAD 2>/dev/null | sed 's/^/commit /' | tee -a "$OUT/run.log"
# The card whose baselines the benchmark gate takes (docs/benchmarks.md: one block per GPU model).
CARD=${BENCH_CARD:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)}
echo "card ${CARD:-unknown}" | tee -a "$OUT/run.log"

# --- configure + build -----------------------------------------------------------------------------------------
if want build; then
  t=$(date +%s)
  if ! cmake --preset device >"$OUT/configure.log" 2>&1; then
    tail -n 40 "$OUT/configure.log"
    note configure "FAILED (configure.log)"
    printf '%s\n' "${SUMMARY[@]}"
    exit 2
  fi
  # The targets the later steps run (the unit tests need HDF5 and DCMTK, which the device preset leaves out).
  # shellcheck disable=SC2086
  if ! cmake --build "$BUILD" -j"$JOBS" --target ${BUILD_TARGETS:-larmor-cli larmor_gpu_tests larmor_bench} \
      >"$OUT/build.log" 2>&1; then
    grep -E "error|FAILED" "$OUT/build.log" | head -n 40
    note build "FAILED after $(secs "$t") s (build.log)"
    printf '%s\n' "${SUMMARY[@]}"
    exit 2
  fi
  note build "ok in $(secs "$t") s"
fi

# --- GPU tests through ctest -----------------------------------------------------------------------------------
if want test; then
  t=$(date +%s)
  timeout "${TEST_TIMEOUT:-240}" ctest --test-dir "$BUILD" -L gpu --output-on-failure -j"${CTEST_JOBS:-4}" \
    >"$OUT/ctest-gpu.log" 2>&1
  rc=$?
  line=$(grep -E "tests passed|No tests were found" "$OUT/ctest-gpu.log" | tail -n 1)
  skipped=$(grep -c -E "\*\*\*Skipped" "$OUT/ctest-gpu.log" || true)
  if [[ -z $line || $line == *"No tests were found"* ]] && [[ $rc -eq 0 ]]; then rc=1; fi  # nothing ran: not a pass
  if [[ $rc -eq 0 && $skipped -gt 0 ]]; then
    # ctest exits 0 when tests skip; here every gpu test must run.
    status=1
    note "gpu tests" "FAILED: $skipped skipped on the GPU machine; $line (ctest-gpu.log)"
    grep -E "\*\*\*Skipped" "$OUT/ctest-gpu.log" | head -n 20 | sed 's/^/    skipped: /' >"$OUT/failed-tests.txt"
  elif [[ $rc -ne 0 ]]; then
    status=1
    [[ $rc -eq 124 ]] && line="timed out after ${TEST_TIMEOUT:-240} s; $line"
    note "gpu tests" "FAILED: ${line:-rc $rc}, $skipped skipped (ctest-gpu.log)"
    grep -E "^\s*[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)" "$OUT/ctest-gpu.log" | head -n 20 \
      | sed 's/^/    /' >"$OUT/failed-tests.txt"
  else
    note "gpu tests" "${line:-?}, $skipped skipped, $(secs "$t") s"
  fi
fi
# The device as the backend describes it (ctest keeps the output of passing tests to itself).
if [[ -x $BIN/larmor_gpu_tests ]]; then
  "$BIN/larmor_gpu_tests" --gtest_filter='CudaBackendTest.DescribesItsDevice' 2>&1 \
    | grep -E "\[ device   \]|Skipped|no CUDA device" | head -n 2 >"$OUT/device.txt" || true
  cat "$OUT/device.txt" >>"$OUT/run.log"
fi

# --- compute-sanitizer -------------------------------------------------------------------------------------------
SANITIZER=""
for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
  [[ -x $c ]] && SANITIZER=$c && break
done
[[ -z $SANITIZER ]] && SANITIZER=$(command -v compute-sanitizer 2>/dev/null || true)

sanitize() {  # tool, gtest filter, timeout, log
  local tool=$1 filter=$2 limit=$3 log=$4 t rc errors
  t=$(date +%s)
  timeout "$limit" "$SANITIZER" --tool "$tool" --print-limit 50 \
    "$BIN/larmor_gpu_tests" --gtest_filter="$filter" --gtest_brief=1 >"$log" 2>&1
  rc=$?
  # memcheck ends with "ERROR SUMMARY: N errors", racecheck with "RACECHECK SUMMARY: N hazards displayed".
  errors=$(grep -Eo "SUMMARY: [0-9]+" "$log" | tail -n 1 | grep -Eo "[0-9]+$")
  if [[ $rc -eq 124 ]]; then
    echo "timed out after $limit s; ${errors:-?} reported so far"
  else
    echo "${errors:-?} reported (rc $rc, $(secs "$t") s; $(basename "$log"))"
  fi
}

if want memcheck || want racecheck; then
  if [[ -z $SANITIZER || ! -x $BIN/larmor_gpu_tests ]]; then
    note sanitizer "not run: compute-sanitizer or $BIN/larmor_gpu_tests not found"
  else
    if want memcheck; then
      # The deliberate 1 PiB allocation is an API error by design; the 32 GiB test would take minutes; the dynamic
      # reconstructions' lambda searches (dozens of series solves) too: their kernels are the other dynamic tests'.
      r=$(sanitize memcheck "-*OutOfMemory*:*Huge*:GpuDynamic.CrossValidated*:*DynamicRecon.TemporalLambda*" \
          "${MEMCHECK_TIMEOUT:-180}" "$OUT/memcheck.log")
      note memcheck "$r"
      [[ $r != 0\ reported* ]] && [[ $status -eq 0 ]] && status=3
    fi
    if want racecheck; then
      # Shared-memory hazards: our reductions, and cuFFT on a few small sizes (racecheck is slow on it).
      r=$(sanitize racecheck "*DotAndNorm2*:*FftMatchesTheDefinition*:*FftCentreConvention*" \
          "${RACECHECK_TIMEOUT:-90}" "$OUT/racecheck.log")
      note racecheck "$r"
    fi
  fi
fi

# --- benchmarks ----------------------------------------------------------------------------------------------------
BENCH_FILTER=${BENCH_FILTER-^cuda:}
if want bench; then
  if [[ -x $BIN/larmor_bench ]]; then
    t=$(date +%s)
    timeout "${BENCH_TIMEOUT:-180}" "$BIN/larmor_bench" --benchmark_format=json \
      --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
      ${BENCH_FILTER:+--benchmark_filter="$BENCH_FILTER"} >"$OUT/bench.log" 2>&1
    rc=$?
    # A benchmark that calls SkipWithError still exits 0: count the errors in the JSON too.
    errored=$(grep -c '"error_occurred": true' "$OUT/bench.json" 2>/dev/null || true)
    if [[ $rc -ne 0 || ${errored:-0} -gt 0 || ! -s $OUT/bench.json ]]; then
      why="rc $rc"
      [[ $rc -eq 124 ]] && why="timed out after ${BENCH_TIMEOUT:-180} s (raise BENCH_TIMEOUT or set BENCH_FILTER)"
      note bench "FAILED: $why, ${errored:-0} benchmarks errored, in $(secs "$t") s (bench.log, bench.json)"
      [[ $status -eq 0 ]] && status=4
    else
      note bench "rc $rc in $(secs "$t") s (bench.json)"
      # Every benchmark against this card's baseline (docs/benchmarks.md); baselines outside BENCH_FILTER are not
      # selected (not missing), every other larmor_bench baseline must have run.
      bench_gate larmor_bench "$OUT/bench.json" --filter "${BENCH_FILTER:-.}"
    fi
  else
    note bench "FAILED: not run, $BIN/larmor_bench not built"
    [[ $status -eq 0 ]] && status=4
  fi
fi

if want cli; then
  if [[ -x $BIN/larmor-cli ]] && "$BIN/larmor-cli" bench --help >/dev/null 2>&1; then
    t=$(date +%s)
    # The user-facing suite (docs/benchmarks.md, "larmor-cli bench"): table in cli-bench.txt, JSON, PNG chart.
    timeout "${CLI_TIMEOUT:-300}" "$BIN/larmor-cli" bench --suite seeds --device cuda --json "$OUT/cli-bench.json" \
      --chart "$OUT/cli-bench.png" >"$OUT/cli-bench.txt" 2>"$OUT/cli-bench.log"
    rc=$?
    if [[ $rc -ne 0 ]]; then
      note "cli bench" "FAILED: rc $rc in $(secs "$t") s (cli-bench.log)"
      [[ $status -eq 0 ]] && status=4
    else
      note "cli bench" "rc $rc in $(secs "$t") s (cli-bench.json)"
    fi
    # The gate on the suite's device-resident and host-to-host medians (also after a workload failed: the
    # others are judged, the failed one is MISSING).
    [[ -s $OUT/cli-bench.json ]] && bench_gate cli "$OUT/cli-bench.json"
  else
    note "cli bench" "FAILED: not run, larmor-cli has no bench command"
    [[ $status -eq 0 ]] && status=4
  fi
fi

if want bart; then
  if [[ -x build/bart-pack/bin/bart ]]; then
    t=$(date +%s)
    # Both BART comparisons with this build's CLI on the CPU and the GPU (tests/e2e/bart_gridding.sh, bart_pics.sh).
    LARMOR_CLI=$ROOT/$BIN/larmor-cli timeout "${BART_TIMEOUT:-400}" tests/gpu/bart-on-device.sh "$OUT/bart" >"$OUT/bart.log" 2>&1
    rc=$?
    if [[ $rc -ne 0 ]]; then
      note bart "FAILED: rc $rc in $(secs "$t") s (bart.log)"
      [[ $status -eq 0 ]] && status=6
    else
      note bart "claims hold on cpu and cuda, $(secs "$t") s (bart.log)"
    fi
    cp "$OUT/bart/summary.txt" "$OUT/bart-summary.txt" 2>/dev/null
  else
    note bart "not run: build/bart-pack was not carried (tests/gpu/bart-pack.sh)"
  fi
fi

# --- summary (last, so it survives a truncated output tail) --------------------------------------------------------
echo
echo "================ larmor GPU summary ================"
[[ -s $OUT/device.txt ]] && sed 's/^\[ device   \] /device: /' "$OUT/device.txt"
printf '%s\n' "${SUMMARY[@]}"
[[ -s $OUT/failed-tests.txt ]] && { echo "failed tests:"; cat "$OUT/failed-tests.txt"; }
if [[ -s $OUT/bench.json ]] && command -v python3 >/dev/null; then
  python3 - "$OUT/bench.json" <<'PY'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception as e:  # a run cut off by its time limit leaves the file incomplete
    print(f"bench.json unreadable: {e}")
    sys.exit(0)
print(f"{'benchmark':58} {'time':>12} {'GB/s':>9}")
for b in data.get("benchmarks", []):
    if b.get("error_occurred"):
        print(f"{b['name'][:58]:58} {'error: ' + b.get('error_message', '')[:40]}")
        continue
    gbs = b.get("bytes_per_second")
    gbs = f"{gbs / 1e9:9.1f}" if gbs else f"{'':>9}"
    print(f"{b['name'][:58]:58} {b['real_time']:9.3f} {b['time_unit']:>2} {gbs}")
PY
fi
if [[ -s $OUT/cli-bench.json ]] && command -v python3 >/dev/null; then
  python3 - "$OUT/cli-bench.json" <<'PY'
import json, sys
try:
    data = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
for r in data.get("results", []):
    d, h = r["device_ms"]["median"], r["host_to_host_ms"]["median"]
    ratio = r["ratio"]["device"]
    print(f"cli {r['name'][:30]:30} device {d:10.3f} ms  host-to-host {h:10.3f} ms  "
          f"{'' if ratio is None else f'{ratio:.1f}x limit'}")
for e in data.get("errors", []):
    print(f"cli {e['name']}: FAILED: {e['error'][:80]}")
PY
fi
echo "exit status $status (logs in $OUT)"
# The device tool brings back at most 8 files: the logs travel as one archive.
if [[ -n ${PACK_LOGS:-1} ]]; then
  (cd "$OUT" && tar czf logs.tgz ./*.log ./*.txt $([[ -d bart ]] && echo ./bart) 2>/dev/null &&
    rm -rf ./*.log failed-tests.txt ./bart) || true
fi
exit $status
