#!/usr/bin/env bash
# End-to-end: `larmor-cli batch` over a small cohort (6 simulated 32^2 radial 4-coil datasets, CG-SENSE),
# checked against `larmor-cli recon` of each file and against the journal:
#  - one corrupt file in the middle: reported by name, the 5 others done, exit status 2, summary.json and
#    `batch --status` say 5 done / 1 failed (status exit 1), the contact sheet is a PNG with 6 tiles;
#  - each batch output is byte-identical to `recon FILE` with the settings that `recon --save-settings` wrote
#    (the settings file carries every setting, exactly);
#  - a re-run skips what is done (no new journal record for those items, outputs untouched) and retries the
#    failed item; once the bad file is replaced it is done and --status exits 0;
#  - manifest overrides (`path --lambda 0.5 --iters 3`) change that item only: = recon with those flags;
#  - a GUI session file (ui/session.cpp's format: {"larmor_session": 1, "settings": ...}) as --settings gives
#    the same outputs as the CLI's settings file;
#  - a file in the output folder that is not ours is never overwritten (that item fails, saying so);
#  - --devices all on a machine without a GPU runs on the CPU and says why;
#  - BART .cfl inputs with the trajectory from the settings file give the images of the same data as .h5.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
fail() { echo "FAIL: $*" >&2; exit 1; }
for i in 1 2 4 5 6; do
  "$cli" simulate --matrix 32 --coils 4 --traj radial --spokes 48 --noise 0.01 --seed $i --output "$dir/in/s$i.h5" >/dev/null
done
head -c 5000 /dev/urandom > "$dir/in/s3.h5"   # corrupt, in the middle of the sorted folder
# The settings, checked on one file first (what docs/cluster.md tells users to do).
"$cli" recon "$dir/in/s1.h5" --method cg --iters 20 --lambda 0.01 --device cpu --output "$dir/check.cfl" \
  --save-settings "$dir/S.json" >/dev/null
"$PY" -c "import json,sys; j=json.load(open(sys.argv[1])); assert j['larmor_settings']==1 and j['settings']['method']=='cg', j" "$dir/S.json"

# 1. The cohort with a bad input in the middle.
set +e
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/out" --format cfl,png --devices cpu --jobs 2 \
  > "$dir/run1.out" 2> "$dir/run1.err"
rc=$?
set -e
cat "$dir/run1.out" "$dir/run1.err"
[[ $rc -eq 2 ]] || fail "a batch with a failed item must exit 2, got $rc"
grep -q "failed: s3: .*s3.h5" "$dir/run1.err" || fail "the bad input is not reported by name"
for i in 1 2 4 5 6; do
  [[ -f $dir/out/s$i.cfl && -f $dir/out/s$i.png ]] || fail "s$i was not reconstructed"
  "$cli" recon "$dir/in/s$i.h5" --method cg --iters 20 --lambda 0.01 --device cpu --output "$dir/ref-s$i.cfl" >/dev/null
  cmp "$dir/out/s$i.cfl" "$dir/ref-s$i.cfl" || fail "batch s$i differs from recon with the same settings"
done
[[ ! -e $dir/out/s3.cfl ]] || fail "the failed item left an output"
set +e; "$cli" batch --status "$dir/out" > "$dir/status1.txt"; src=$?; set -e
cat "$dir/status1.txt"
[[ $src -eq 1 ]] || fail "--status with a failed item must exit 1"
grep -q "6 items: 5 done, 1 failed, 0 pending" "$dir/status1.txt" || fail "--status counts"
"$PY" - "$dir/out" <<'PY'
import json, sys, oracle
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
oracle.check(s["total"] == 6 and s["done"] == 5 and s["failed"] == 1, "summary counts 6 total, 5 done, 1 failed")
bad = [i for i in s["items"] if i["status"] == "failed"]
oracle.check(len(bad) == 1 and bad[0]["name"] == "s3" and "s3.h5" in bad[0]["error"], "summary names the failure")
for i in s["items"]:
    if i["status"] == "done":
        oracle.check(i["timings_ms"]["recon"] > 0 and i["device"] == "cpu", "timings and device per item")
        st = i["timings_ms"]["stages"]
        oracle.check(len(st) > 0 and 0 < sum(st.values()) <= i["timings_ms"]["recon"] * 1.01,
                     "recon's stages per item add up to at most its recon time: %s" % st)
png = oracle.read_png(d + "/contact-sheet.png")
# 6 tiles: 3 columns x 2 rows of (96 + 8) x (96 + 8 + 11) pixels
oracle.check(png.shape[:2] == (2 * 115, 3 * 104), "contact sheet size %s" % (png.shape,))
PY
lines1=$(wc -l < "$dir/out/journal.jsonl")
stamp1=$(stat -c %Y.%y "$dir/out/s1.cfl")

# 2. Re-run: what is done is skipped, the failure retried (and fails again).
set +e
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/out" --format cfl,png --devices cpu \
  > "$dir/run2.out" 2> "$dir/run2.err"
rc=$?
set -e
cat "$dir/run2.out"
[[ $rc -eq 2 ]] || fail "the re-run with the still bad input must exit 2, got $rc"
grep -q "0 done, 1 failed, 5 already done" "$dir/run2.out" || fail "the re-run did not skip the done items"
[[ $(wc -l < "$dir/out/journal.jsonl") -eq $((lines1 + 2)) ]] || fail "the re-run journalled more than the retried item"
[[ $(stat -c %Y.%y "$dir/out/s1.cfl") == "$stamp1" ]] || fail "a done output was rewritten"

# 3. The input fixed: it is done now, and the batch is complete (the corrupt file is removed first: simulate
#    replaces only a file Larmor wrote).
rm "$dir/in/s3.h5"
"$cli" simulate --matrix 32 --coils 4 --traj radial --spokes 48 --noise 0.01 --seed 3 --output "$dir/in/s3.h5" >/dev/null
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/out" --format cfl,png --devices cpu > "$dir/run3.out" 2>&1
grep -q "1 done, 0 failed, 5 already done" "$dir/run3.out" || { cat "$dir/run3.out"; fail "the fixed input was not redone"; }
"$cli" batch --status "$dir/out" || fail "--status of a complete batch must exit 0"

# 4. Manifest with per-item overrides (relative paths are relative to the manifest).
cat > "$dir/in/list.txt" <<'LIST'
# cohort with one item tuned
s1.h5
s2.h5 --lambda 0.5 --iters 3
LIST
"$cli" batch "@$dir/in/list.txt" --settings "$dir/S.json" --output-dir "$dir/man" --devices cpu > /dev/null 2>&1
"$cli" recon "$dir/in/s2.h5" --method cg --iters 3 --lambda 0.5 --device cpu --output "$dir/ref-s2-tuned.cfl" >/dev/null
cmp "$dir/man/s2.cfl" "$dir/ref-s2-tuned.cfl" || fail "the manifest's overrides were not applied"
cmp "$dir/man/s1.cfl" "$dir/ref-s1.cfl" || fail "an item without overrides must keep the file's settings"
! cmp -s "$dir/man/s2.cfl" "$dir/ref-s2.cfl" || fail "the overrides made no difference (the test would not see them)"

# 5. The GUI's saved session as the settings file (ui/session.cpp: larmor_session, settings, device, trajectory).
"$PY" - "$dir/S.json" "$dir/in/s1.h5.larmor.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
json.dump({"larmor_session": 1, "settings": s["settings"], "device": "cuda:0", "trajectory": ""}, open(sys.argv[2], "w"), indent=2)
PY
"$cli" batch "$dir/in/s1.h5" "$dir/in/s2.h5" --settings "$dir/in/s1.h5.larmor.json" --output-dir "$dir/gui" \
  --devices cpu > "$dir/gui.out" 2>&1
grep -q "settings from the GUI session" "$dir/gui.out" || fail "the session file is not named as such"
cmp "$dir/gui/s1.cfl" "$dir/ref-s1.cfl" && cmp "$dir/gui/s2.cfl" "$dir/ref-s2.cfl" || fail "GUI session settings differ"

# 6. A user's file where an output would go is not overwritten.
mkdir -p "$dir/mine"; echo "my notes" > "$dir/mine/s1.png"
set +e
"$cli" batch "$dir/in/s1.h5" --settings "$dir/S.json" --output-dir "$dir/mine" --format png --devices cpu > "$dir/mine.out" 2>&1
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "overwriting a user's file must fail the item"
grep -q "s1.png: exists and is not an output of this batch" "$dir/mine.out" || { cat "$dir/mine.out"; fail "no reason given"; }
[[ $(cat "$dir/mine/s1.png") == "my notes" ]] || fail "the user's file was changed"

# 7. --devices all without a GPU: the CPU, with the reason.
if "$cli" devices | grep -q "^cuda"; then
  echo "SKIPPED part 7 only: this machine has a GPU, so --devices all does not fall back"
else
  "$cli" batch "$dir/in/s1.h5" --settings "$dir/S.json" --output-dir "$dir/all" --devices all > "$dir/all.out" 2>&1
  grep -q "note: no GPU (.*): running on the CPU with 1 worker" "$dir/all.out" || { cat "$dir/all.out"; fail "no fallback message"; }
  cmp "$dir/all/s1.cfl" "$dir/ref-s1.cfl" || fail "--devices all on the CPU differs"
fi
# 8. BART .cfl k-space with the trajectory named in the settings file (`recon --traj T --save-settings`):
#    `simulate --traj-output` writes the trajectory, and the batch of .cfl files = recon of the same data as .h5.
mkdir -p "$dir/cfl"
for i in 1 2; do
  "$cli" simulate --matrix 32 --coils 4 --traj radial --spokes 48 --noise 0.01 --seed $i --output "$dir/cfl/r$i.cfl" \
    --traj-output "$dir/traj.cfl" >/dev/null
done
"$cli" recon "$dir/cfl/r1.cfl" --traj "$dir/traj.cfl" --method cg --iters 20 --lambda 0.01 --device cpu \
  --output "$dir/check-cfl.cfl" --save-settings "$dir/S-cfl.json" >/dev/null
"$cli" batch "$dir/cfl" --settings "$dir/S-cfl.json" --output-dir "$dir/cfl-out" --devices cpu > "$dir/cfl.out" 2>&1 \
  || { cat "$dir/cfl.out"; fail "the .cfl batch failed"; }
for i in 1 2; do
  cmp "$dir/cfl-out/r$i.cfl" "$dir/ref-s$i.cfl" || fail ".cfl k-space + trajectory gives another image than the .h5"
done
# Bad arguments are one line and exit 1.
set +e
"$cli" batch "$dir/in" --settings "$dir/in/s1.h5" --output-dir "$dir/x" 2> "$dir/bad.err"; rc=$?
set -e
[[ $rc -eq 1 && $(wc -l < "$dir/bad.err") -eq 1 ]] || fail "a bad settings file must be one line and exit 1"
# A series: every frame of a multi-frame input, as `recon` writes it (frames at BART's TIME dim).
if command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null; then
  mkdir -p "$dir/series"
  (cd "$dir/series" && ismrmrd_generate_cartesian_shepp_logan -m 32 -c 4 -a 2 -n 0 -o rep.h5 >/dev/null)
  "$cli" recon "$dir/series/rep.h5" --method fft --device cpu --output "$dir/series-ref.cfl" \
    --save-settings "$dir/S-fft.json" >/dev/null
  "$cli" batch "$dir/series/rep.h5" --settings "$dir/S-fft.json" --output-dir "$dir/series-out" --format cfl \
    --devices cpu > "$dir/series.out" 2>&1 || { cat "$dir/series.out"; fail "the batch of a two-frame file failed"; }
  cmp "$dir/series-out/rep.cfl" "$dir/series-ref.cfl" || fail "the batch of a series differs from recon's"
  cmp "$dir/series-out/rep.hdr" "$dir/series-ref.hdr" || fail "the batch of a series has other dims than recon's"
  read -r -a dims < <(sed -n 2p "$dir/series-out/rep.hdr")
  [[ ${dims[10]} -eq 2 ]] || fail "the two repetitions are not two frames at TIME (dims ${dims[*]})"
else
  fail "ismrmrd_generate_cartesian_shepp_logan is not installed (installer/install-deps.sh: ismrmrd-tools): the series case cannot run"
fi
echo "batch_cohort: OK"
