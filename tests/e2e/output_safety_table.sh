#!/usr/bin/env bash
# The output-safety table (engine/include/larmor/io/output_safety.hpp, docs/reliability.md "Never
# overwritten"): every command and flag that writes, three ways.
#  (a) the output is one of the command's inputs (data, --traj, --ref, --coil-maps FILE): refused, exit 1,
#      one line on stderr naming the path, before any work; the input's bytes unchanged (sha256 before/after);
#  (b) the output is an existing file Larmor did not write (a BART pair made by `bart`, a hand-written
#      header, a twix-named file, foreign JSON, PNG, NIfTI, HDF5): refused the same way, the file unchanged;
#  (c) the output is the command's own earlier output (the same command run twice) or an empty file: allowed.
# Also the headless GUI run (`larmor` without a display, when the GUI is built beside larmor-cli): a foreign
# out/phantom-fft.png is refused before the work and nothing (no DICOM folder) is written; its own earlier
# outputs are replaced.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
q() { "$@" >/dev/null; }
fails=0
sums() { local f; for f in "$@"; do if [ -e "$f" ]; then sha256sum "$f"; else echo "absent $f"; fi; done; }

# refuse LABEL "FILES THAT MUST NOT CHANGE" CMD...: exit 1, one stderr line naming the first file, files unchanged.
refuse() {
  local label=$1 files=$2; shift 2
  local before after rc=0
  # shellcheck disable=SC2086
  before=$(sums $files)
  "$@" >out.log 2>err.log || rc=$?
  # shellcheck disable=SC2086
  after=$(sums $files)
  local first=${files%% *}
  if [ "$rc" != 1 ]; then echo "FAIL: $label: exit $rc, expected 1 (a refusal)"; cat err.log; fails=$((fails + 1))
  elif [ "$(wc -l <err.log)" != 1 ]; then echo "FAIL: $label: stderr is not one line:"; cat err.log; fails=$((fails + 1))
  elif ! grep -qF "${first%.*}" err.log; then echo "FAIL: $label: the error does not name $first:"; cat err.log; fails=$((fails + 1))
  elif [ "$before" != "$after" ]; then echo "FAIL: $label: a file changed"; diff <(echo "$before") <(echo "$after") || true; fails=$((fails + 1))
  elif grep -q "^wrote" out.log; then echo "FAIL: $label: wrote something"; cat out.log; fails=$((fails + 1))
  else echo "ok   refused: $label: $(cat err.log)"; fi
}
# allow LABEL CMD...: exit 0.
allow() {
  local label=$1; shift
  if "$@" >out.log 2>err.log; then echo "ok   allowed: $label"
  else echo "FAIL: $label: refused (exit $?)"; cat err.log; fails=$((fails + 1)); fi
}

# Inputs, all written by Larmor (so only rule (a) can refuse them).
q "$cli" simulate --matrix 32 --coils 4 --output cart.h5
q "$cli" simulate --matrix 32 --coils 4 --output kc.cfl
q "$cli" simulate --traj radial --matrix 32 --coils 4 --output rk.cfl --traj-output rt.cfl
q "$cli" recon cart.h5 --method fft --device cpu --output ref.cfl
q "$cli" maps cart.h5 --device cpu --coil-maps walsh --output cm.cfl
cg=(--method cg --device cpu --iters 2)
# Foreign files: a twix-named raw file, a BART pair made by BART (or a hand-written header: both lack
# Larmor's "# Creator"), JSON, PNG, NIfTI, HDF5 not of Larmor.
head -c 4096 /dev/urandom >gre.dat
if command -v bart >/dev/null; then bart ones 2 4 4 bart >/dev/null; else printf '# Dimensions\n4 4 \n# Creator\nBART\n' >bart.hdr; head -c 128 /dev/zero >bart.cfl; fi
printf '# Dimensions\n4 4 1 \n' >py.hdr; head -c 128 /dev/zero >py.cfl  # as BART's python cfl.py writes it
echo '{"patient": "mine", "notes": "do not lose"}' >notes.json
printf '\x89PNG\r\n\x1a\nnot Larmor' >photo.png
head -c 348 /dev/zero >brain.nii
printf '\x89HDF\r\n\x1a\nsomeone else' >scan.h5

echo "== (a) an output is an input"
refuse "maps kc.cfl --output kc.cfl" "kc.cfl kc.hdr" "$cli" maps kc.cfl --device cpu --output kc.cfl
refuse "maps --traj rt.cfl --output rt.cfl" "rt.cfl rt.hdr rk.cfl" "$cli" maps rk.cfl --traj rt.cfl --device cpu --output rt.cfl
refuse "maps --traj rt.cfl --output rt (bare)" "rt.cfl rt.hdr" "$cli" maps rk.cfl --traj rt.cfl --device cpu --output rt
refuse "maps --json cart.h5" "cart.h5 m.cfl m.hdr" "$cli" maps cart.h5 --device cpu --output m.cfl --json cart.h5
refuse "maps --json kc.hdr" "kc.hdr kc.cfl" "$cli" maps kc.cfl --device cpu --output m.cfl --json kc.hdr
refuse "recon --ref ref.cfl --output ref.cfl" "ref.cfl ref.hdr" \
  "$cli" recon cart.h5 "${cg[@]}" --reg anatomical --ref ref.cfl --output ref.cfl
refuse "recon --ref ref.cfl --json ref.hdr" "ref.hdr ref.cfl o.cfl" \
  "$cli" recon cart.h5 "${cg[@]}" --reg anatomical --ref ref.cfl --output o.cfl --json ref.hdr
refuse "recon --ref ref.cfl --save-settings ref.cfl" "ref.cfl ref.hdr" \
  "$cli" recon cart.h5 "${cg[@]}" --reg anatomical --ref ref.cfl --output o.cfl --save-settings ref.cfl
refuse "recon --coil-maps cm.cfl --output cm.cfl" "cm.cfl cm.hdr" "$cli" recon cart.h5 "${cg[@]}" --coil-maps cm.cfl --output cm.cfl
refuse "recon --coil-maps cm.cfl --json cm.hdr" "cm.hdr cm.cfl" \
  "$cli" recon cart.h5 "${cg[@]}" --coil-maps cm.cfl --output o.cfl --json cm.hdr
refuse "recon --traj rt.cfl --output rt.cfl" "rt.cfl rt.hdr" "$cli" recon rk.cfl --traj rt.cfl --method gridding --device cpu --output rt.cfl
refuse "recon gre.dat --json gre.dat" "gre.dat" "$cli" recon gre.dat --method fft --device cpu --output o.cfl --json gre.dat
refuse "recon --save-settings cart.h5" "cart.h5" "$cli" recon cart.h5 --method fft --device cpu --output o.cfl --save-settings cart.h5
refuse "info --json cart.h5" "cart.h5" "$cli" info cart.h5 --json cart.h5
refuse "compare --map onto --test" "ref.cfl ref.hdr" "$cli" compare --ref cart.h5 --test ref.cfl --map ref.cfl
refuse "compare --json ref.hdr" "ref.hdr ref.cfl" "$cli" compare --ref cart.h5 --test ref.cfl --json ref.hdr

echo "== (b) an output is a file Larmor did not write"
refuse "recon --output bart.cfl (written by BART)" "bart.cfl bart.hdr" "$cli" recon cart.h5 --method fft --device cpu --output bart.cfl
refuse "recon --output py.cfl (cfl.py's header)" "py.hdr py.cfl" "$cli" recon cart.h5 --method fft --device cpu --output py.cfl
refuse "recon --output photo.png" "photo.png" "$cli" recon cart.h5 --method fft --device cpu --output photo.png
refuse "recon --output brain.nii" "brain.nii" "$cli" recon cart.h5 --method fft --device cpu --output brain.nii
refuse "recon --json notes.json" "notes.json" "$cli" recon cart.h5 --method fft --device cpu --output o.cfl --json notes.json
refuse "recon --json gre.dat" "gre.dat" "$cli" recon cart.h5 --method fft --device cpu --output o.cfl --json gre.dat
refuse "recon --save-settings gre.dat" "gre.dat" "$cli" recon cart.h5 --method fft --device cpu --output o.cfl --save-settings gre.dat
refuse "info --json notes.json" "notes.json" "$cli" info cart.h5 --json notes.json
refuse "simulate --output scan.h5" "scan.h5" "$cli" simulate --matrix 32 --coils 4 --output scan.h5
refuse "simulate --output bart.cfl" "bart.cfl bart.hdr" "$cli" simulate --matrix 32 --coils 4 --output bart.cfl
refuse "simulate --json notes.json" "notes.json" "$cli" simulate --matrix 32 --coils 4 --output s.h5 --json notes.json
refuse "simulate --traj-output py.cfl" "py.cfl py.hdr" "$cli" simulate --traj radial --matrix 32 --coils 4 --output s.cfl --traj-output py.cfl
refuse "maps --output bart.cfl" "bart.cfl bart.hdr" "$cli" maps cart.h5 --device cpu --output bart.cfl
refuse "maps --json notes.json" "notes.json" "$cli" maps cart.h5 --device cpu --output m.cfl --json notes.json
refuse "compare --map photo.png" "photo.png" "$cli" compare --ref cart.h5 --test ref.cfl --map photo.png
refuse "compare --json notes.json" "notes.json" "$cli" compare --ref cart.h5 --test ref.cfl --json notes.json
refuse "devices --json notes.json" "notes.json" "$cli" devices --json notes.json
refuse "bench --json notes.json" "notes.json" "$cli" bench --quick --device cpu --json notes.json
for f in s.h5 s.cfl s.hdr m.cfl m.hdr o.cfl o.hdr; do
  [ ! -e "$f" ] || { echo "FAIL: a refused command left $f"; fails=$((fails + 1)); }
done

echo "== (c) an output is the command's own earlier output (run twice) or an empty file"
for round in 1 2; do
  allow "recon .cfl/.nii/.png/DICOM + --json + --save-settings (run $round)" bash -c "
    for o in o.cfl o.nii o.png dcm/; do \"$cli\" recon cart.h5 --method fft --device cpu --output \$o --json o.json --save-settings s.json || exit 1; done"
  allow "recon cg --ref --coil-maps (run $round)" "$cli" recon cart.h5 "${cg[@]}" --reg anatomical --ref ref.cfl --coil-maps cm.cfl --output a.cfl --json a.json
  allow "info --json (run $round)" "$cli" info cart.h5 --json i.json
  allow "simulate .h5 --json (run $round)" "$cli" simulate --matrix 32 --coils 4 --output s.h5 --json s.json
  allow "simulate .cfl --traj-output (run $round)" "$cli" simulate --traj radial --matrix 32 --coils 4 --output s.cfl --traj-output st.cfl
  allow "maps --output --json (run $round)" "$cli" maps cart.h5 --device cpu --coil-maps walsh --output m.cfl --json m.json
  allow "maps --output bare name (run $round)" "$cli" maps cart.h5 --device cpu --coil-maps walsh --output mb
  allow "compare --map --json (run $round)" "$cli" compare --ref cart.h5 --test o.cfl --map e.png --json c.json
  allow "devices --json (run $round)" "$cli" devices --json d.json
done
: >empty.json
allow "recon --json onto an empty file" "$cli" recon cart.h5 --method fft --device cpu --output o.cfl --json empty.json
grep -q '"software": "Larmor"' empty.json || { echo "FAIL: the JSON carries no \"software\": \"Larmor\""; fails=$((fails + 1)); }
grep -q '^# Creator$' o.hdr || { echo "FAIL: o.hdr has no '# Creator' section"; fails=$((fails + 1)); }
if command -v bart >/dev/null; then  # BART still reads a header with Larmor's "# Creator" section
  bart show -m o >/dev/null || { echo "FAIL: bart cannot read Larmor's o.hdr"; fails=$((fails + 1)); }
fi

# The headless GUI run, when `larmor` is built beside larmor-cli.
larmor=$(dirname "$cli")/larmor
if [ -x "$larmor" ]; then
  echo "== headless larmor (no display)"
  mkdir gui && cd gui
  headless() { env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$larmor" --method fft "$@"; }
  mkdir out && printf '\x89PNG\r\n\x1a\nthe user'"'"'s picture' >out/phantom-fft.png
  refuse "larmor headless onto a foreign out/phantom-fft.png" "out/phantom-fft.png" headless
  [ ! -e out/phantom-fft-dicom ] || { echo "FAIL: the refused headless run wrote out/phantom-fft-dicom"; fails=$((fails + 1)); }
  rm out/phantom-fft.png
  allow "larmor headless (run 1)" headless
  allow "larmor headless onto its own outputs (run 2)" headless
  cd ..
else
  echo "note: no larmor GUI binary beside $cli: the headless rows are not run"
fi

[ "$fails" = 0 ] || { echo "FAIL: $fails case(s)"; exit 1; }
echo "PASS"
