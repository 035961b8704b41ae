#!/usr/bin/env bash
# The benchmark gate (tests/gpu/bench_gate.py) on fake inputs, no GPU and no timing of this machine: baselines are
# chosen by the card (one ```bench-baseline NAME block per GPU model; the same run against another card's block
# gives another verdict); a card with no block exits 3 ("no baseline for this card"), and so does a larmor-cli
# bench JSON measured on it; a larmor_bench JSON without --card, or a --card that contradicts the JSON's device, is
# an error (2). Within a block: a benchmark 10 % slower passes, 20 % slower fails, faster passes, units are
# converted (us vs ms), Google Benchmark's run-setting suffixes are stripped, a benchmark without a baseline is
# listed but not failed, a baseline of the run's program whose benchmark is absent or errored is MISSING and fails
# (unless --filter leaves it out), the other program's baselines are not asked for; larmor-cli bench JSON (device
# and host-to-host medians) likewise; --emit writes a block that the same run passes against. Malformed blocks are
# errors. The real docs/benchmarks.md blocks parse, and with LARMOR_BENCH (larmor_bench) and LARMOR_CLI given every
# name in them is one the programs register (cuda:N/... checked as cpu/... in larmor_bench's list, except
# GPU-only registrations; cuda:N/bench/W against `larmor-cli bench --list`).
#   bench_gate_test.sh [DIR] [LARMOR_BENCH] [LARMOR_CLI]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
[[ -x $py ]] || py=python3
gate="$py $here/bench_gate.py"
real_md=$here/../../docs/benchmarks.md
dir=${1:-$(mktemp -d)}
larmor_bench=${2:+$(realpath "$2")}
larmor_cli=${3:+$(realpath "$3")}
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
H100="NVIDIA H100 80GB HBM3"
H200="NVIDIA H200"
cat >base.md <<'MD'
# fake benchmarks page
```bench-baseline NVIDIA H100 80GB HBM3
# name time unit
cuda:0/fft2d 2.0 ms
cuda:0/axpby 300 us   # 0.3 ms
cuda:0/gone 1 ms
cuda:0/bench/nufft2d-adjoint 0.444 ms
cuda:0/bench/nufft2d-adjoint/host-to-host 1.318 ms
cuda:0/bench/fhd-exact 165 ms
```
Text between the blocks.
```bench-baseline NVIDIA H200
cuda:0/fft2d 1.5 ms
cuda:0/axpby 250 us
cuda:0/bench/nufft2d-adjoint 0.30 ms
cuda:0/bench/nufft2d-adjoint/host-to-host 1.0 ms
```
MD
bench() {  # fft time (ms), axpby time (us)
  cat <<JSON
{"context": {"host_name": "x"}, "benchmarks": [
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
has() {  # regex, what it shows
  grep -qE -- "$1" out.txt || { echo "FAIL: $2 (no line matching '$1')"; cat out.txt; exit 1; }
}
hasnt() {
  if grep -qE -- "$1" out.txt; then echo "FAIL: $2 (a line matches '$1')"; cat out.txt; exit 1; fi
}

# --- larmor_bench JSON, keyed by --card ------------------------------------------------------------------------------
bench 2.2 310 >a.json
expect 0 "H100: 10 % and 3 % slower pass (names with run-setting suffixes)" $gate a.json base.md --card "$H100"
has "new      cuda:0/new" "the new benchmark is listed"
has "ok         cuda:0/fft2d:.*baseline 2.0000 ms" "the suffixed name is matched to the H100 baseline"
hasnt "bench/" "a larmor_bench run does not ask for larmor-cli bench's baselines"
has "on $H100: 0 regression\(s\) over 15 % among 3 compared, 0 baseline\(s\) missing" "the summary names the card"
expect 1 "the same run against the H200's block: 47 % slower there" $gate a.json base.md --card "$H200"
has "REGRESSION cuda:0/fft2d:.*baseline 1.5000 ms" "the H200's baseline is used"
expect 0 "the card's name matched without case and extra blanks" $gate a.json base.md --card "nvidia  h100 80gb hbm3"
expect 3 "a card without a block is not a pass" $gate a.json base.md --card "NVIDIA A100-SXM4-80GB"
has "no baseline for this card \(NVIDIA A100-SXM4-80GB\)" "the missing block is named"
has "new      cuda:0/fft2d" "the run's figures are still listed"
expect 2 "a larmor_bench JSON without --card is an error" $gate a.json base.md
has "give --card" "the error says what to give"
grep -v gone a.json >g.json
expect 1 "a baseline without its benchmark fails" $gate g.json base.md --card "$H100"
has "MISSING  cuda:0/gone .*no benchmark of this name ran" "the missing benchmark is named"
expect 0 "... unless --filter leaves it out" $gate g.json base.md --card "$H100" --filter 'fft2d|axpby'
has "not selected cuda:0/gone" "the unselected baseline is listed"
sed 's|"cuda:0/gone/min_time:0.200/manual_time", "run_type": "iteration",|"cuda:0/gone", "run_type": "iteration", "error_occurred": true,|' a.json >e1.json
expect 1 "a baseline whose benchmark errored fails" $gate e1.json base.md --card "$H100"
has "MISSING  cuda:0/gone.*errored" "the errored benchmark is named"
bench 2.4 300 >b.json; expect 1 "20 % slower fails" $gate b.json base.md --card "$H100"
has "REGRESSION cuda:0/fft2d" "the regression is named"
bench 2.0 360 >c.json; expect 1 "20 % slower in microseconds fails" $gate c.json base.md --card "$H100"
has "REGRESSION cuda:0/axpby" "the regression in us is named"
bench 1.0 100 >d.json; expect 0 "faster passes" $gate d.json base.md --card "$H100"
expect 0 "20 % slower passes with --max-regression 0.25" $gate b.json base.md --card "$H100" --max-regression 0.25

# --- larmor-cli bench JSON: the card from the JSON's device --------------------------------------------------------
suite() {  # card, nufft device ms, nufft host-to-host ms, fhd present (1/0)
  local fhd=""
  [[ $4 == 1 ]] && fhd=', {"name": "fhd-exact", "device_ms": {"median": 160}, "host_to_host_ms": {"median": 170}}'
  echo "{\"schema\": \"larmor-bench\", \"schema_version\": 1, \"device\": {\"id\": \"cuda:0\", \"name\": \"$1\"},
 \"results\": [{\"name\": \"nufft2d-adjoint\", \"device_ms\": {\"median\": $2}, \"host_to_host_ms\": {\"median\": $3}}$fhd],
 \"errors\": []}"
}
suite "$H100" 0.45 1.3 1 >s1.json
expect 0 "larmor-cli bench JSON at its H100 baseline passes, without --card" $gate s1.json base.md
has "ok         cuda:0/bench/nufft2d-adjoint/host-to-host" "the host-to-host median is compared"
hasnt "MISSING  cuda:0/(fft2d|axpby|gone)" "a larmor-cli bench run does not ask for larmor_bench's baselines"
expect 0 "... and with the same --card" $gate s1.json base.md --card "$H100"
expect 2 "a --card that contradicts the JSON's device is an error" $gate s1.json base.md --card "$H200"
has "measured on 'NVIDIA H100 80GB HBM3', --card says 'NVIDIA H200'" "the contradiction is named"
suite "$H100" 0.60 1.3 1 >s2.json; expect 1 "larmor-cli bench JSON 35 % slower fails" $gate s2.json base.md
has "REGRESSION cuda:0/bench/nufft2d-adjoint:" "the device-resident regression is named"
suite "$H100" 0.45 1.7 1 >s2h.json; expect 1 "host to host 29 % slower fails" $gate s2h.json base.md
has "REGRESSION cuda:0/bench/nufft2d-adjoint/host-to-host" "the host-to-host regression is named"
suite "$H100" 0.45 1.3 0 >s3.json; expect 1 "larmor-cli bench JSON without a baselined workload fails" $gate s3.json base.md
has "MISSING  cuda:0/bench/fhd-exact" "the missing workload is named"
suite "$H200" 0.45 1.3 0 >s4.json; expect 1 "the same figures on an H200 are judged by its block" $gate s4.json base.md
has "REGRESSION cuda:0/bench/nufft2d-adjoint: 0.4500 ms vs baseline 0.3000 ms" "the H200's baseline is used"
suite "NVIDIA L40S" 0.45 1.3 1 >s5.json; expect 3 "a larmor-cli bench JSON of a card without a block" $gate s5.json base.md
has "no baseline for this card \(NVIDIA L40S\)" "the card is named"

# --- --emit: the run's figures as a block that the same run passes against ------------------------------------------
expect 3 "--emit on a card without a block still writes the figures" $gate s5.json base.md --emit new.txt
grep -q "^cuda:0/bench/nufft2d-adjoint/host-to-host 1.3 ms$" new.txt || { echo "FAIL: --emit wrote"; cat new.txt; exit 1; }
{ echo '```bench-baseline NVIDIA L40S'; cat new.txt; echo '```'; } >l40s.md
expect 0 "the emitted block parses and the run passes against it" $gate s5.json l40s.md
has "0 regression\(s\) over 15 % among 4 compared" "every emitted figure is compared"

# --- malformed input is never a pass ------------------------------------------------------------------------------------
echo '{"benchmarks": [' >e.json; expect 2 "truncated JSON is an error" $gate e.json base.md --card "$H100"
echo '{"foo": 1}' >f.json; expect 2 "JSON of neither program is an error" $gate f.json base.md --card "$H100"
echo "# no block" >nb.md; expect 2 "no baseline block is an error" $gate a.json nb.md --card "$H100"
printf '```bench-baseline %s\nx 1 parsecs\n```\n' "$H100" >bad.md; expect 2 "a malformed line is an error" $gate a.json bad.md --card "$H100"
printf '```bench-baseline\nx 1 ms\n```\n' >nocard.md; expect 2 "a block without a card is an error" $gate a.json nocard.md --card "$H100"
printf '```bench-baseline A\nx 1 ms\n```\n```bench-baseline a\ny 1 ms\n```\n' >dup.md
expect 2 "two blocks for one card are an error" $gate a.json dup.md --card A
expect 2 "an unknown option is an error" $gate a.json base.md --card "$H100" --frobnicate

# --- the real page ------------------------------------------------------------------------------------------------------
$py - "$real_md" "$here/bench_gate.py" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("gate", sys.argv[2]); gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)
cards = gate.baselines(sys.argv[1])
for want in ("NVIDIA H100 80GB HBM3", "NVIDIA H200"):
    if gate.block_for(cards, want) is None:
        sys.exit(f"FAIL: docs/benchmarks.md has no block for {want}")
print("ok: docs/benchmarks.md's blocks parse: " + ", ".join(f"{c} ({len(t)})" for c, t in cards.items()))
PY
# The real blocks' names are names the programs emit.
if [[ -n $larmor_bench || -n $larmor_cli ]]; then
  [[ -n $larmor_bench ]] && { "$larmor_bench" --benchmark_list_tests 2>/dev/null >list.txt || true; }
  [[ -n $larmor_cli ]] && "$larmor_cli" bench --list >suite-list.txt
  $py - "$real_md" "$here/bench_gate.py" <<'PY'
import importlib.util, os, re, sys
spec = importlib.util.spec_from_file_location("gate", sys.argv[2]); gate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gate)
cards = gate.baselines(sys.argv[1])
gb = {gate.registered_name(l.strip()) for l in open("list.txt")} if os.path.exists("list.txt") else None
suite = {l.split()[0] for l in open("suite-list.txt") if l.strip()} if os.path.exists("suite-list.txt") else None
# Registered on a GPU only (tests/bench: bench_noncartesian.cpp, bench_iterative.cpp, bench_model_based.cpp,
# bench_grappa.cpp's GPU batch sizes): not in the CPU's list.
gpu_only = re.compile(r"/dft/|/(tron|sector)(/W\d+)?$|/spiral|/iterative/.*(64|128)\^3|/model-based/.*128\^3"
                      r"|/lambda-change-warm10/256\^2|/grappa/table5\.1/.*/batch(32|8)$")
bad = []
for card, base in cards.items():
    for name in sorted(base):
        dev, _, rest = name.partition("/")
        if rest.startswith("bench/"):
            if suite is not None and rest[len("bench/"):].split("/")[0] not in suite:
                bad.append(f"{card}: {name}: no such larmor-cli bench workload")
        elif gb is not None and not gpu_only.search(name) and f"cpu/{rest}" not in gb:
            bad.append(f"{card}: {name}: larmor_bench registers no {rest} (no cpu/{rest} in its --benchmark_list_tests)")
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
print(f"ok: the {sum(len(b) for b in cards.values())} baseline names of docs/benchmarks.md are names the programs emit")
PY
fi
echo "bench_gate: all checks passed"
