#!/usr/bin/env bash
# The benchmark gate (tests/gpu/bench_gate.py) on fake inputs: a benchmark 10 % slower passes, 20 % slower fails,
# faster passes, units are converted (us vs ms), a benchmark without a baseline is reported but not failed,
# errored benchmarks are ignored, a missing or malformed baseline block is an error (exit 2), and the real
# docs/perf.md block parses. No GPU and no timing of this machine involved.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gate="python3 $here/bench_gate.py"
dir=${1:-$(mktemp -d)}
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
 {"name": "cuda:0/fft2d", "run_type": "iteration", "real_time": $1, "time_unit": "ms"},
 {"name": "cuda:0/axpby", "run_type": "iteration", "real_time": $2, "time_unit": "us"},
 {"name": "cuda:0/new", "run_type": "iteration", "real_time": 5, "time_unit": "ms"},
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
bench 2.2 310 >a.json; expect 0 "10 % and 3 % slower pass" $gate a.json perf.md
grep -q "new      cuda:0/new" out.txt || { echo "FAIL: the new benchmark is not listed"; exit 1; }
grep -q "not run  cuda:0/gone" out.txt || { echo "FAIL: the missing benchmark is not listed"; exit 1; }
bench 2.4 300 >b.json; expect 1 "20 % slower fails" $gate b.json perf.md
grep -q "REGRESSION cuda:0/fft2d" out.txt || { echo "FAIL: the regression is not named"; exit 1; }
bench 2.0 360 >c.json; expect 1 "20 % slower in microseconds fails" $gate c.json perf.md
bench 1.0 100 >d.json; expect 0 "faster passes" $gate d.json perf.md
expect 0 "20 % slower passes with --max-regression 0.25" $gate b.json perf.md --max-regression 0.25
echo '{"benchmarks": [' >e.json; expect 2 "truncated JSON is an error" $gate e.json perf.md
echo "# no block" >nb.md; expect 2 "no baseline block is an error" $gate a.json nb.md
printf '```bench-baseline\nx 1 parsecs\n```\n' >bad.md; expect 2 "a malformed line is an error" $gate a.json bad.md
expect 0 "the real docs/perf.md block parses" $gate a.json "$here/../../docs/perf.md"
echo "bench_gate: all checks passed"
