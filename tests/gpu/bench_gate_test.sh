#!/usr/bin/env bash
# The benchmark gate (tests/gpu/bench_gate.py) on fake inputs: a benchmark 10 % slower passes, 20 % slower fails,
# faster passes, units are converted (us vs ms), Google Benchmark's run-setting suffixes (/min_time:0.200/
# manual_time, /iterations:5) are stripped, a benchmark without a baseline is reported but not failed, a baseline
# whose benchmark is absent or errored is MISSING and fails (unless --filter leaves it out), larmor-cli bench's
# JSON is read too, a missing or malformed baseline block is an error (exit 2), and the real docs/perf.md block
# parses. With LARMOR_BENCH (larmor_bench) and LARMOR_CLI given: every name of the real block is one the programs
# register (cuda:N/... checked as cpu/... in larmor_bench's list, except GPU-only registrations;
# cuda:N/bench/W against `larmor-cli bench --list`). No GPU and no timing of this machine involved.
#   bench_gate_test.sh [DIR] [LARMOR_BENCH] [LARMOR_CLI]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gate="python3 $here/bench_gate.py"
dir=${1:-$(mktemp -d)}
larmor_bench=${2:+$(realpath "$2")}
larmor_cli=${3:+$(realpath "$3")}
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
cat >perf.md <<'MD'
# fake perf log
```bench-baseline
# name time unit
cuda:0/fft2d 2.0 ms
cuda:0/axpby 300 us   # 0.3 ms
cuda:0/gone 1 ms
```
MD
bench() {  # fft time (ms), axpby time (us)
  cat <<JSON
{"benchmarks": [
 {"name": "cuda:0/fft2d/min_time:0.200/manual_time", "run_type": "iteration", "real_time": $1, "time_unit": "ms"},
 {"name": "cuda:0/axpby/iterations:5/manual_time", "run_type": "iteration", "real_time": $2, "time_unit": "us"},
 {"name": "cuda:0/new", "run_type": "iteration", "real_time": 5, "time_unit": "ms"},
 {"name": "cuda:0/gone/min_time:0.200/manual_time", "run_type": "iteration", "real_time": 1.0, "time_unit": "ms"},
 {"name": "cuda:0/broken", "run_type": "iteration", "error_occurred": true, "error_message": "x", "real_time": 0, "time_unit": "ms"}
]}
JSON
}
expect() {  # status, description, command...
  local want=$1 what=$2; shift 2
  set +e; "$@" >out.txt 2>&1; local got=$?; set -e
  if [[ $got -ne $want ]]; then echo "FAIL: $what: exit $got, expected $want"; cat out.txt; exit 1; fi
  echo "ok: $what (exit $got)"
}
bench 2.2 310 >a.json; expect 0 "10 % and 3 % slower pass (names with run-setting suffixes)" $gate a.json perf.md
grep -q "new      cuda:0/new" out.txt || { echo "FAIL: the new benchmark is not listed"; exit 1; }
grep -q "ok         cuda:0/fft2d:" out.txt || { echo "FAIL: the suffixed name was not matched to its baseline"; exit 1; }
grep -v gone a.json >g.json
expect 1 "a baseline without its benchmark fails" $gate g.json perf.md
grep -q "MISSING  cuda:0/gone" out.txt || { echo "FAIL: the missing benchmark is not named"; exit 1; }
expect 0 "... unless --filter leaves it out" $gate g.json perf.md --filter 'fft2d|axpby'
grep -q "not selected cuda:0/gone" out.txt || { echo "FAIL: the unselected baseline is not listed"; exit 1; }
sed 's|"cuda:0/gone/min_time:0.200/manual_time", "run_type": "iteration",|"cuda:0/gone", "run_type": "iteration", "error_occurred": true,|' a.json >e1.json
expect 1 "a baseline whose benchmark errored fails" $gate e1.json perf.md
grep -q "MISSING  cuda:0/gone.*errored" out.txt || { echo "FAIL: the errored benchmark is not named"; exit 1; }
bench 2.4 300 >b.json; expect 1 "20 % slower fails" $gate b.json perf.md
grep -q "REGRESSION cuda:0/fft2d" out.txt || { echo "FAIL: the regression is not named"; exit 1; }
bench 2.0 360 >c.json; expect 1 "20 % slower in microseconds fails" $gate c.json perf.md
bench 1.0 100 >d.json; expect 0 "faster passes" $gate d.json perf.md
expect 0 "20 % slower passes with --max-regression 0.25" $gate b.json perf.md --max-regression 0.25
echo '{"benchmarks": [' >e.json; expect 2 "truncated JSON is an error" $gate e.json perf.md
echo "# no block" >nb.md; expect 2 "no baseline block is an error" $gate a.json nb.md
printf '```bench-baseline\nx 1 parsecs\n```\n' >bad.md; expect 2 "a malformed line is an error" $gate a.json bad.md
# larmor-cli bench --json: DEVICE/bench/WORKLOAD (device-resident median) and .../host-to-host.
cat >suite.md <<'MD'
```bench-baseline
cuda:0/bench/nufft2d-adjoint 0.444 ms
cuda:0/bench/nufft2d-adjoint/host-to-host 1.318 ms
cuda:0/bench/fhd-exact 165 ms
```
MD
suite() {  # nufft device ms, fhd present (1/0)
  local fhd=""
  [[ $2 == 1 ]] && fhd=', {"name": "fhd-exact", "device_ms": {"median": 160}, "host_to_host_ms": {"median": 170}}'
  echo "{\"schema\": \"larmor-bench\", \"schema_version\": 1, \"device\": {\"id\": \"cuda:0\"}, \"results\": [
 {\"name\": \"nufft2d-adjoint\", \"device_ms\": {\"median\": $1}, \"host_to_host_ms\": {\"median\": 1.3}}$fhd], \"errors\": []}"
}
suite 0.45 1 >s1.json; expect 0 "larmor-cli bench JSON at its baseline passes" $gate s1.json suite.md
suite 0.60 1 >s2.json; expect 1 "larmor-cli bench JSON 35 % slower fails" $gate s2.json suite.md
suite 0.45 0 >s3.json; expect 1 "larmor-cli bench JSON without a baselined workload fails" $gate s3.json suite.md
expect 0 "the real docs/perf.md block parses" $gate a.json "$here/../../docs/perf.md" --filter '^$'
# The real block's names are names the programs emit.
if [[ -n $larmor_bench || -n $larmor_cli ]]; then
  [[ -n $larmor_bench ]] && { "$larmor_bench" --benchmark_list_tests 2>/dev/null >list.txt || true; }
  [[ -n $larmor_cli ]] && "$larmor_cli" bench --list >suite-list.txt
  python3 - "$here/../../docs/perf.md" "$here/bench_gate.py" <<'PY'
import importlib.util, os, re, sys
spec = importlib.util.spec_from_file_location("gate", sys.argv[2]); gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)
base = gate.baseline(sys.argv[1])
gb = {gate.registered_name(l.strip()) for l in open("list.txt")} if os.path.exists("list.txt") else None
suite = {l.split()[0] for l in open("suite-list.txt") if l.strip()} if os.path.exists("suite-list.txt") else None
# Registered on a GPU only (bench_noncartesian.cpp, bench_iterative.cpp): not in the CPU's list.
gpu_only = re.compile(r"/dft/|/(tron|sector)$|/iterative/.*(64|128)\^3|/model-based/.*128\^3")
bad = []
for name in sorted(base):
    dev, _, rest = name.partition("/")
    if rest.startswith("bench/"):
        if suite is not None and rest[len("bench/"):].split("/")[0] not in suite:
            bad.append(f"{name}: no such larmor-cli bench workload")
    elif gb is not None and not gpu_only.search(name) and f"cpu/{rest}" not in gb:
        bad.append(f"{name}: larmor_bench registers no {rest} (no cpu/{rest} in its --benchmark_list_tests)")
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
print(f"ok: the {len(base)} baseline names of docs/perf.md are names the programs emit")
PY
fi
echo "bench_gate: all checks passed"
