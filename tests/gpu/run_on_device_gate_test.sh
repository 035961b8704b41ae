#!/usr/bin/env bash
# tests/gpu/run-on-device.sh's bench and cli steps with fake programs (no GPU): the card comes from nvidia-smi's
# name and picks its baseline block; larmor_bench's JSON and larmor-cli bench's JSON both go through the gate
# (a regression in either exits 5 and is listed under "failed tests"); a card with no block exits 5 with "no
# baseline for this card" and leaves the run's figures as bench-baseline-*.txt; BENCH_GATE=0 reports without
# failing. The script and the gate are copied into a scratch tree with a fake docs/benchmarks.md.
#   run_on_device_gate_test.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:-$(mktemp -d)}
rm -rf "$dir"; mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
root=$dir/root
mkdir -p "$root/tests/gpu" "$root/docs" "$dir/build/bin" "$dir/path"
cp "$here/run-on-device.sh" "$here/bench_gate.py" "$root/tests/gpu/"
cat >"$root/docs/benchmarks.md" <<'MD'
```bench-baseline NVIDIA H100 80GB HBM3
cuda:0/copy/256MiB 0.189 ms
cuda:0/bench/copy 0.191 ms
cuda:0/bench/copy/host-to-host 10.2 ms
```
MD
# nvidia-smi: the card in $FAKE_CARD.
printf '#!/usr/bin/env bash\necho "$FAKE_CARD"\n' >"$dir/path/nvidia-smi"
# larmor_bench: writes --benchmark_out with copy at $FAKE_COPY_MS.
cat >"$dir/build/bin/larmor_bench" <<'SH'
#!/usr/bin/env bash
for a in "$@"; do [[ $a == --benchmark_out=* ]] && out=${a#--benchmark_out=}; done
printf '{"benchmarks": [{"name": "cuda:0/copy/256MiB/min_time:0.200/manual_time", "run_type": "iteration", "real_time": %s, "time_unit": "ms"}]}\n' \
  "$FAKE_COPY_MS" >"$out"
SH
# larmor-cli: `bench --help`, and `bench ... --json F`: copy at $FAKE_CLI_MS host to host, on $FAKE_CARD.
cat >"$dir/build/bin/larmor-cli" <<'SH'
#!/usr/bin/env bash
[[ $* == *--help* ]] && exit 0
while [[ $# -gt 0 ]]; do [[ $1 == --json ]] && out=$2; shift; done
printf '{"schema": "larmor-bench", "schema_version": 1, "device": {"id": "cuda:0", "name": "%s"}, "results": [{"name": "copy", "device_ms": {"median": 0.19}, "host_to_host_ms": {"median": %s}, "ratio": {"device": 1.0}}], "errors": []}\n' \
  "$FAKE_CARD" "$FAKE_CLI_MS" >"$out"
SH
chmod +x "$dir/path/nvidia-smi" "$dir/build/bin/larmor_bench" "$dir/build/bin/larmor-cli"

run() {  # expected status, description, then VAR=value settings for the run
  local want=$1 what=$2 out=$dir/out got; shift 2
  rm -rf "$out"
  set +e
  env PATH="$dir/path:$PATH" STEPS=bench,cli BUILD_DIR="$dir/build" FAKE_CARD="NVIDIA H100 80GB HBM3" \
    FAKE_COPY_MS=0.19 FAKE_CLI_MS=10.3 "$@" bash "$root/tests/gpu/run-on-device.sh" "$out" >"$dir/run.txt" 2>&1
  got=$?
  set -e
  (cd "$out" && tar xzf logs.tgz)
  if [[ $got -ne $want ]]; then echo "FAIL: $what: exit $got, expected $want"; cat "$dir/run.txt"; exit 1; fi
  echo "ok: $what (exit $got)"
}
has() {  # file, regex, what it shows
  grep -qE -- "$2" "$dir/out/$1" || { echo "FAIL: $3 (no line matching '$2' in $1)"; cat "$dir/run.txt"; exit 1; }
}
run 0 "both programs at their H100 baselines pass"
has run.log "^card NVIDIA H100 80GB HBM3$" "the card is nvidia-smi's name"
has bench-gate-larmor_bench.txt "ok +cuda:0/copy/256MiB:" "larmor_bench's JSON went through the gate"
has bench-gate-cli.txt "ok +cuda:0/bench/copy/host-to-host:" "larmor-cli bench's JSON went through the gate"
has bench-gate-cli.txt "on NVIDIA H100 80GB HBM3: 0 regression" "the cli gate judged the H100's block"
run 5 "larmor-cli bench 50 % slower host to host fails" FAKE_CLI_MS=15.3
has failed-tests.txt "REGRESSION cuda:0/bench/copy/host-to-host" "the regression is listed as failed"
run 0 "... and is reported only with BENCH_GATE=0" FAKE_CLI_MS=15.3 BENCH_GATE=0
has ../run.txt "gate cli .*1 regression" "the summary still shows it"
run 5 "larmor_bench 50 % slower fails" FAKE_COPY_MS=0.28
has failed-tests.txt "REGRESSION cuda:0/copy/256MiB" "the regression is listed as failed"
run 5 "a card with no block is not a pass" FAKE_CARD="NVIDIA B200"
has failed-tests.txt "no baseline for this card \(NVIDIA B200\)" "the missing block is named"
has bench-baseline-cli.txt "^cuda:0/bench/copy/host-to-host 10.3 ms$" "the run's figures are left to record"
has bench-baseline-larmor_bench.txt "^cuda:0/copy/256MiB 0.19 ms$" "larmor_bench's figures are left to record"
run 0 "a card with no block passes with BENCH_GATE=0" FAKE_CARD="NVIDIA B200" BENCH_GATE=0
echo "run_on_device_gate: all checks passed"
