#!/usr/bin/env bash
# End-to-end: batch resume trusts the disk, not the journal, and a batch replaces only its own files.
#  - settings A, then B, then A into one folder: the third run redoes every item ("redone: settings
#    changed") and ends with A's images, byte for byte;
#  - an output deleted, or overwritten with garbage, is redone with a line that says why;
#  - a second batch of other settings is refused while one runs in the folder; two shards of one plan run
#    side by side;
#  - a user's summary.json, contact-sheet.png, batch-plan.json or journal.jsonl in the folder, and with
#    `--slurm --dry-run` a user's manifest.txt, settings.json or larmor-batch.sbatch, is refused before
#    any work and left as it is; the batch's own earlier files are replaced;
#  - a disk that takes no more bytes: the error says why (errno's text), no empty .thumbs/ is left.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
fail() { echo "FAIL: $*" >&2; exit 1; }
for i in 1 2 3; do
  "$cli" simulate --matrix 32 --coils 4 --traj golden --spokes 64 --noise 0.01 --seed $i --output "$dir/in/d$i.h5" >/dev/null
done
"$cli" recon "$dir/in/d1.h5" --method cg --iters 8 --lambda 5 --device cpu --output "$dir/a.cfl" --save-settings "$dir/A.json" >/dev/null
"$cli" recon "$dir/in/d1.h5" --method cg --iters 8 --lambda 0 --device cpu --output "$dir/b.cfl" --save-settings "$dir/B.json" >/dev/null
batch() { local s=$1 out=$2; shift 2; "$cli" batch "$dir/in" --settings "$dir/$s.json" --output-dir "$out" --format cfl,png --devices cpu --jobs 1 "$@"; }
expect_refused() {  # LOG WHAT: exit 1 and the message names WHAT
  grep -q "$2" "$1" || { cat "$1"; fail "the refusal does not name $2"; }
}

# ---- A, B, A ----
batch A "$dir/out" > "$dir/a1.log" 2>&1 || { cat "$dir/a1.log"; fail "batch A"; }
mkdir -p "$dir/refA"; cp "$dir/out"/d*.cfl "$dir/out"/d*.hdr "$dir/refA/"
batch B "$dir/out" > "$dir/b.log" 2>&1 || { cat "$dir/b.log"; fail "batch B"; }
grep -q "d1: redone: settings changed" "$dir/b.log" || { cat "$dir/b.log"; fail "B does not say why it redoes d1"; }
cmp -s "$dir/out/d1.cfl" "$dir/refA/d1.cfl" && fail "lambda 0 gave the same image as lambda 5: the test cannot tell them apart"
batch A "$dir/out" > "$dir/a2.log" 2>&1 || { cat "$dir/a2.log"; fail "batch A again"; }
for i in 1 2 3; do
  grep -q "d$i: redone: settings changed" "$dir/a2.log" || { cat "$dir/a2.log"; fail "A after B kept d$i"; }
  cmp "$dir/out/d$i.cfl" "$dir/refA/d$i.cfl" || fail "d$i.cfl is not A's image after A, B, A"
done
grep -q "3 done, 0 failed, 0 already done" "$dir/a2.log" || { cat "$dir/a2.log"; fail "A after B: counts"; }

# ---- an output deleted, one overwritten with garbage ----
rm "$dir/out/d2.cfl"
echo garbage > "$dir/out/d3.png"
set +e; "$cli" batch --status "$dir/out" > "$dir/status.txt"; rc=$?; set -e
[[ $rc -eq 1 ]] || { cat "$dir/status.txt"; fail "--status must see the missing and altered outputs"; }
grep -q "output missing (d2.cfl)" "$dir/status.txt" || { cat "$dir/status.txt"; fail "--status: d2"; }
batch A "$dir/out" > "$dir/a3.log" 2>&1 || { cat "$dir/a3.log"; fail "batch A after the damage"; }
grep -q "d2: redone: output missing (d2.cfl)" "$dir/a3.log" || { cat "$dir/a3.log"; fail "d2 deleted: not redone"; }
grep -q "d3: redone: output altered since it was written (d3.png)" "$dir/a3.log" || { cat "$dir/a3.log"; fail "d3 garbage: not redone"; }
grep -q "2 done, 0 failed, 1 already done" "$dir/a3.log" || { cat "$dir/a3.log"; fail "damage: counts"; }
cmp "$dir/out/d2.cfl" "$dir/refA/d2.cfl" || fail "d2 redone differs"
[[ $(head -c 4 "$dir/out/d3.png" | od -An -c | tr -d ' ') == "211PNG" ]] || fail "d3.png is still garbage"
batch A "$dir/out" > "$dir/a4.log" 2>&1 || { cat "$dir/a4.log"; fail "batch A, nothing to do"; }
grep -q "0 done, 0 failed, 3 already done" "$dir/a4.log" || { cat "$dir/a4.log"; fail "an intact batch was redone"; }

# ---- two batches at once ----
for i in 4 5 6 7 8 9; do
  "$cli" simulate --matrix 48 --coils 4 --traj golden --spokes 96 --noise 0.01 --seed $i --output "$dir/in/d$i.h5" >/dev/null
done
"$cli" recon "$dir/in/d1.h5" --method cg --iters 300 --lambda 5 --device cpu --output "$dir/a.cfl" --save-settings "$dir/slow.json" >/dev/null
batch slow "$dir/busy" > "$dir/slow.log" 2>&1 &
pid=$!
for _ in $(seq 1 1000); do grep -q '"event":"started"' "$dir/busy/journal.jsonl" 2>/dev/null && break; sleep 0.01; done
set +e; batch B "$dir/busy" > "$dir/other.log" 2>&1; rc=$?; set -e
kill -0 $pid 2>/dev/null || echo "note: the first batch ended before the second was refused"
wait $pid || { cat "$dir/slow.log"; fail "the first batch failed"; }
[[ $rc -eq 1 ]] || { cat "$dir/other.log"; fail "a batch of other settings ran beside a running one (rc $rc)"; }
expect_refused "$dir/other.log" "another batch with other settings"
batch B "$dir/busy" > "$dir/after.log" 2>&1 || { cat "$dir/after.log"; fail "the other batch after the first one ended"; }
batch A "$dir/shards" --shard 0/2 > "$dir/s0.log" 2>&1 & p0=$!
batch A "$dir/shards" --shard 1/2 > "$dir/s1.log" 2>&1 & p1=$!
wait $p0 || { cat "$dir/s0.log"; fail "shard 0 beside shard 1"; }
wait $p1 || { cat "$dir/s1.log"; fail "shard 1 beside shard 0"; }
"$cli" batch --status "$dir/shards" >/dev/null || fail "two shards of one plan did not complete it"

# ---- the batch's own files, someone else's ----
for f in summary.json contact-sheet.png batch-plan.json journal.jsonl; do
  rm -rf "$dir/u"; mkdir -p "$dir/u"; echo "mine, not Larmor's" > "$dir/u/$f"
  set +e; batch A "$dir/u" > "$dir/u.log" 2>&1; rc=$?; set -e
  [[ $rc -eq 1 ]] || { cat "$dir/u.log"; fail "$f of a user: rc $rc"; }
  expect_refused "$dir/u.log" "$dir/u/$f"
  [[ $(cat "$dir/u/$f") == "mine, not Larmor's" ]] || fail "$f of a user was changed"
  [[ ! -e "$dir/u/d1.cfl" ]] || fail "$f of a user: the batch worked before refusing"
done
echo '{"mine": 1}' > "$dir/out/summary.json"  # in a batch folder too
set +e; batch A "$dir/out" > "$dir/u.log" 2>&1; rc=$?; set -e
[[ $rc -eq 1 ]] && grep -q '"mine"' "$dir/out/summary.json" || { cat "$dir/u.log"; fail "a user's summary.json in a batch folder"; }
rm "$dir/out/summary.json"
slurm() { "$cli" batch "$dir/in" --settings "$dir/A.json" --output-dir "$1" --slurm --dry-run; }
slurm "$dir/sl" > "$dir/sl.log" 2>&1 || { cat "$dir/sl.log"; fail "--slurm --dry-run"; }
slurm "$dir/sl" > "$dir/sl.log" 2>&1 || { cat "$dir/sl.log"; fail "--slurm --dry-run over its own files"; }
for f in manifest.txt settings.json larmor-batch.sbatch batch-plan.json; do
  rm -rf "$dir/u"; mkdir -p "$dir/u"; echo "mine" > "$dir/u/$f"
  set +e; slurm "$dir/u" > "$dir/u.log" 2>&1; rc=$?; set -e
  [[ $rc -eq 1 ]] || { cat "$dir/u.log"; fail "--slurm --dry-run over a user's $f: rc $rc"; }
  expect_refused "$dir/u.log" "$dir/u/$f"
  [[ $(cat "$dir/u/$f") == "mine" ]] || fail "--slurm --dry-run changed a user's $f"
done

# ---- a disk that takes no more bytes (a file-size limit of 0: every write fails with EFBIG) ----
set +e
# (through a pipe: the limit would stop the messages written to a file too)
( ulimit -f 0; trap '' XFSZ; exec "$cli" batch "$dir/in" --settings "$dir/A.json" --output-dir "$dir/full" --devices cpu ) \
  2>&1 | cat > "$dir/full.log"
rc=${PIPESTATUS[0]}; set -e
[[ $rc -eq 1 ]] || { cat "$dir/full.log"; fail "a full disk: rc $rc"; }
grep -q "File too large" "$dir/full.log" || { cat "$dir/full.log"; fail "a full disk: the error does not say why"; }
[[ ! -e "$dir/full/.thumbs" ]] || fail "a full disk left .thumbs/"
cat "$dir/full.log"
# A file system really full (a 64 KiB tmpfs filled up; where mounting is not allowed, only the case above).
mkdir -p "$dir/fs"
if mount -t tmpfs -o size=64k tmpfs "$dir/fs" 2>/dev/null; then
  trap 'umount "$dir/fs" 2>/dev/null || true' EXIT
  dd if=/dev/zero of="$dir/fs/fill" bs=4k 2>/dev/null || true
  set +e; batch A "$dir/fs/out" > "$dir/fs.log" 2>&1; rc=$?; set -e
  [[ $rc -eq 1 ]] || { cat "$dir/fs.log"; fail "a full file system: rc $rc"; }
  grep -q "No space left on device" "$dir/fs.log" || { cat "$dir/fs.log"; fail "a full file system: the error does not say why"; }
  [[ ! -e "$dir/fs/out" ]] || fail "a full file system: the output folder the batch made is left"
  umount "$dir/fs"; trap - EXIT
else
  echo "note: cannot mount a tmpfs here; the full file system case is the file-size limit above"
fi
echo "batch_journal: OK"
