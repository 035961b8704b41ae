#!/bin/sh
# The GUI contract of ARCHITECTURE.md, end to end through the `larmor` executable:
#   1. under X: `larmor --run --screenshot PNG --export-dicom DIR --quit` writes a non-trivial picture
#      (and a DICOM series where the engine has the writer);
#   2. without a display: `larmor` says so in one line and writes a PNG (and DICOM) into ./out.
# Usage: app_contract.sh LARMOR WORKDIR
set -eu
larmor=$1
work=$2
rm -rf "$work" && mkdir -p "$work"
cd "$work"

# 0. --version: one line, no display needed
ver=$(env -u DISPLAY "$larmor" --version 2>&1) || { echo "$ver"; echo "FAIL: larmor --version exited non-zero"; exit 1; }
echo "$ver" | grep -Eq '^larmor [0-9]+\.[0-9]+\.[0-9]+' || { echo "FAIL: larmor --version printed '$ver'"; exit 1; }

# 2. headless first (needs no X server at all)
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$larmor" --method fft > headless.log 2>&1 || {
  cat headless.log; echo "FAIL: headless larmor exited non-zero"; exit 1; }
cat headless.log
grep -q "no display" headless.log || { echo "FAIL: headless run did not say it has no display"; exit 1; }
png=$(ls out/*.png 2>/dev/null | head -n 1)
[ -n "$png" ] && [ -s "$png" ] || { echo "FAIL: headless run wrote no PNG into ./out"; exit 1; }
grep -q "wrote out/" headless.log || { echo "FAIL: headless run did not name its files"; exit 1; }

# 1. the window
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "SKIP: xvfb-run is not installed: the window part did not run"
  exit 77
fi
xvfb-run -a -s "-screen 0 1600x1000x24" "$larmor" --method fft --run --screenshot "$work/shot.png" \
  --export-dicom "$work/dicom" --quit > window.log 2>&1 || true
cat window.log
[ -s "$work/shot.png" ] || { echo "FAIL: no screenshot"; exit 1; }
size=$(wc -c < "$work/shot.png")
[ "$size" -gt 20000 ] || { echo "FAIL: the screenshot is suspiciously small ($size bytes)"; exit 1; }
if grep -q "DICOM series" window.log; then
  n=$(find "$work/dicom" -type f | wc -l)
  [ "$n" -ge 1 ] || { echo "FAIL: --export-dicom wrote no files"; exit 1; }
  echo "DICOM: $n files"
else
  grep -q "not in this build" window.log || { echo "FAIL: --export-dicom neither exported nor explained"; exit 1; }
fi

# 3. a BART .cfl with its trajectory given on the command line: --traj comes with FILE (it used to be dropped)
command -v bart >/dev/null || { echo "FAIL: bart is not installed (installer/install-deps.sh installs it)"; exit 1; }
bart traj -r -x 64 -y 48 "$work/rad_t" >/dev/null
bart phantom -k -s 4 -t "$work/rad_t" "$work/rad_k" >/dev/null
xvfb-run -a -s "-screen 0 1600x1000x24" "$larmor" "$work/rad_k.cfl" --traj "$work/rad_t.cfl" --method gridding \
  --run --quit > traj.log 2>&1 || { cat traj.log; echo "FAIL: larmor K.cfl --traj T.cfl --run exited non-zero"; exit 1; }
grep -q "run 1: " traj.log || { cat traj.log; echo "FAIL: larmor K.cfl --traj T.cfl did not reconstruct"; exit 1; }
echo "PASS"
