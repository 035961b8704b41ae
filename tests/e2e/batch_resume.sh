#!/usr/bin/env bash
# End-to-end: the batch journal survives `kill -9` (the issue's CPU target). A batch of 8 simulated 32^2
# radial datasets (CG-SENSE, one CPU worker) is killed with SIGKILL once 2 items are done and before all are;
# `batch --status` then reports the interrupted item as started but not finished, and a re-run
#  - does not redo the items the journal says are done (their outputs keep their modification time),
#  - redoes the interrupted one and the rest,
#  - ends with every output byte-identical to an uninterrupted run of the same batch (the reconstructions are
#    deterministic on one worker), and no output of ours half-written.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
fail() { echo "FAIL: $*" >&2; exit 1; }
for i in 1 2 3 4 5 6 7 8; do
  "$cli" simulate --matrix 32 --coils 4 --traj golden --spokes 64 --noise 0.01 --seed $i --output "$dir/in/d$i.h5" >/dev/null
done
"$cli" recon "$dir/in/d1.h5" --method cg --iters 40 --device cpu --output "$dir/check.cfl" --save-settings "$dir/S.json" >/dev/null
batch() { "$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$1" --format cfl,png --devices cpu --jobs 1; }

batch "$dir/ref" > "$dir/ref.log" 2>&1 || { cat "$dir/ref.log"; fail "the uninterrupted batch failed"; }

# The interrupted run: SIGKILL as soon as the journal shows 2 items done.
for attempt in 1 2 3; do
  rm -rf "$dir/out"
  # larmor-cli itself in the background (not a shell function's subshell), so that the kill reaches it.
  "$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/out" --format cfl,png --devices cpu --jobs 1 \
    > "$dir/killed.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do
    n=$(grep -c '"event":"done"' "$dir/out/journal.jsonl" 2>/dev/null || true)
    [[ ${n:-0} -ge 2 ]] && break
    sleep 0.02
  done
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  done_before=$(grep -c '"event":"done"' "$dir/out/journal.jsonl" || true)
  [[ $done_before -lt 8 ]] && break
  echo "attempt $attempt: the batch finished before the kill; again"
done
[[ $done_before -ge 2 && $done_before -lt 8 ]] || fail "could not kill the batch between 2 and 8 items done ($done_before)"
echo "killed with $done_before of 8 done"
set +e; "$cli" batch --status "$dir/out" > "$dir/status.txt"; rc=$?; set -e
cat "$dir/status.txt"
[[ $rc -eq 1 ]] || fail "--status of an interrupted batch must exit 1"
grep -q "8 items: $done_before done, 0 failed" "$dir/status.txt" || fail "--status after the kill"
grep -q "started but not finished" "$dir/status.txt" || fail "--status does not show the interrupted item"

# The items the journal called done before the re-run, with their outputs' modification times.
done_names=$(grep '"event":"done"' "$dir/out/journal.jsonl" | sed 's/.*"name":"\([^"]*\)".*/\1/')
declare -A stamp
for n in $done_names; do stamp[$n]=$(stat -c %y "$dir/out/$n.cfl"); done
[[ ${#stamp[@]} -eq $done_before ]] || fail "journal names ${#stamp[@]} done items, expected $done_before"
batch "$dir/out" > "$dir/resumed.log" 2>&1 || { cat "$dir/resumed.log"; fail "the re-run failed"; }
tail -2 "$dir/resumed.log"
grep -q "$((8 - done_before)) done, 0 failed, $done_before already done" "$dir/resumed.log" || fail "the re-run did not resume"
for n in "${!stamp[@]}"; do
  [[ $(stat -c %y "$dir/out/$n.cfl") == "${stamp[$n]}" ]] || fail "$n was done before the kill and was redone"
done
for i in 1 2 3 4 5 6 7 8; do
  for ext in cfl hdr png; do
    cmp "$dir/out/d$i.$ext" "$dir/ref/d$i.$ext" || fail "d$i.$ext differs from the uninterrupted run"
  done
done
"$cli" batch --status "$dir/out" >/dev/null || fail "--status after the resume must exit 0"
echo "batch_resume: OK"
