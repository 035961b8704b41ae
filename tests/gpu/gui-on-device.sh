#!/usr/bin/env bash
# The workstation on the lent GPU machine, under Xvfb with the CUDA plugin (the GUI on a GPU).
# Build and pack here first (tests/gpu/gui-pack.sh), carry build/gui-pack, then there:
#
#   tests/gpu/gui-on-device.sh OUTDIR
#
# Records into OUTDIR: the GPU GUI tests' log (larmor_gui_tests when packed), for each scripted run (CS-TV on a
# radial phantom, GRAPPA on an R 4 Cartesian phantom, CG-SENSE) the wall time from process start to the
# screenshot and the reconstruction's stage timings (the GUI's stderr), and the screenshots.
set -u -o pipefail
OUT=${1:?usage: tests/gpu/gui-on-device.sh OUTDIR}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The pack arrives whole (build/gui-pack) or in two halves on two calls (gui-pack.sh says why).
PARTS=/tmp/larmor-gui-parts && mkdir -p "$PARTS"
for h in 1 2; do cp "$ROOT"/build/gui-pack-$h/* "$PARTS/" 2>/dev/null || true; done
if [[ -f $ROOT/build/gui-pack/larmor-gui.tar.xz ]]; then
  PACK=$ROOT/build/gui-pack/larmor-gui.tar.xz
elif [[ -f $PARTS/part-00 && -f $PARTS/part-01 ]]; then
  cat "$PARTS/part-00" "$PARTS/part-01" > /tmp/larmor-gui.tar.xz
  PACK=/tmp/larmor-gui.tar.xz
  [[ ! -f $PARTS/sha256 ]] || [[ $(sha256sum "$PACK" | cut -d' ' -f1) == $(cat "$PARTS/sha256") ]] ||
    { echo "gui-on-device: the joined pack does not match its checksum" >&2; exit 2; }
else
  echo "gui-on-device: have $(ls "$PARTS" | tr '\n' ' ')- waiting for the other half (carry build/gui-pack-1, then build/gui-pack-2)"
  exit 0
fi
rm -rf /tmp/larmor-gui && tar -C /tmp -xJf "$PACK" || { echo "gui-on-device: cannot unpack $PACK" >&2; exit 2; }
P=/tmp/larmor-gui
CUDA_LIBS=$(dirname "$(find /usr/local/cuda/ -name 'libcudart.so.*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$P/lib:$CUDA_LIBS:${LD_LIBRARY_PATH:-}
export LIBGL_DRIVERS_PATH=$P/lib/dri GALLIUM_DRIVER=llvmpipe LIBGL_ALWAYS_SOFTWARE=1
export QT_PLUGIN_PATH=$P/plugins QT_QPA_PLATFORM=xcb FONTCONFIG_FILE=$P/etc/fonts.conf
export DCMDICTPATH=$P/share/dcmtk/dicom.dic:$P/share/dcmtk/private.dic
export XDG_RUNTIME_DIR=/tmp/larmor-gui-run && mkdir -p -m 700 "$XDG_RUNTIME_DIR"
# The GPU machine has no pydicom/nibabel and cannot install them: the export checks report a skip there.
export LARMOR_ALLOW_MISSING_VALIDATORS=1
mkdir -p /var/lib/xkb 2>/dev/null || true
# Xvfb runs xkbcomp by its compiled-in path; the GPU machine is ours to set up.
[[ -x /usr/bin/xkbcomp ]] || ln -sf "$P/bin/xkbcomp" /usr/bin/xkbcomp

"$P/bin/Xvfb" :77 -screen 0 1600x1000x24 -xkbdir "$P/share/xkb" -nolisten tcp >"$OUT/xvfb.log" 2>&1 &
XPID=$!
trap 'kill $XPID 2>/dev/null' EXIT
export DISPLAY=:77
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X77 ]] && break; sleep 0.1; done
[[ -e /tmp/.X11-unix/X77 ]] || { echo "gui-on-device: Xvfb did not start" >&2; cat "$OUT/xvfb.log" >&2; exit 2; }

CLI=$P/bin/larmor-cli
"$CLI" version | tee "$OUT/version.txt"
D=/tmp/larmor-gui-data && mkdir -p "$D"
"$CLI" simulate --matrix 256 --coils 8 --traj golden --spokes 101 --output "$D/radial.h5" >/dev/null
"$CLI" simulate --matrix 256 --coils 8 --traj cartesian --accel 4 --acs 24 --output "$D/cart-r4.h5" >/dev/null
"$CLI" simulate --matrix 256 --coils 8 --traj cartesian --accel 2 --acs 24 --output "$D/cart-r2.h5" >/dev/null

run() {  # name, then larmor's arguments
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  timeout 120 "$P/bin/larmor" "$@" --device cuda --run --screenshot "$OUT/$name.png" --quit >"$OUT/$name.log" 2>&1
  local rc=$?
  t1=$(date +%s.%N)
  local line
  line=$(awk -v a="$t0" -v b="$t1" -v n="$name" -v rc="$rc" 'BEGIN { printf "%-10s exit %d, process start to screenshot %.2f s", n, rc, b - a }')
  echo "$line; $(grep -h ' on cuda' "$OUT/$name.log" | head -1)" | tee -a "$OUT/summary.txt"
}
run empty-cold "$D/cart-r2.h5" --method fft
run cs-tv "$D/radial.h5" --method cs --reg tv
run grappa "$D/cart-r4.h5" --method grappa
run sense "$D/cart-r2.h5" --method cg
# The workflow tests measure slider-to-pixels for live λ and the live temporal λ; on this machine with the CUDA plugin.
WF=$P/bin/larmor_gui_workflow_tests
[[ -x $WF ]] || WF=$ROOT/build/default/bin/larmor_gui_workflow_tests  # carried beside an older pack
if [[ -x $WF ]]; then
  # The warm-up's effect needs a process of its own: the first run of a process after the start-up warm-up.
  timeout 300 "$WF" firstRunAfterWarmUp >"$OUT/gui-warmup.log" 2>&1
  echo "warm-up test exit $?: $(grep -E 'QINFO.*warm-up' "$OUT/gui-warmup.log" | sed 's/.*QINFO *: *//')" | tee -a "$OUT/summary.txt"
  timeout 300 "$WF" liveLambdaSliderToPixels demoRunsToTheEnd framesOfASeries dynamicSeriesJointly >"$OUT/gui-workflow-tests.log" 2>&1
  echo "larmor_gui_workflow_tests exit $?: $(grep -E 'Totals' "$OUT/gui-workflow-tests.log")" | tee -a "$OUT/summary.txt"
  grep -E "QINFO.*(slider|λ|ms)" "$OUT/gui-workflow-tests.log" | head -20 | tee -a "$OUT/summary.txt"
fi
if [[ -x $P/bin/larmor_gui_tests ]]; then
  timeout 400 "$P/bin/larmor_gui_tests" ${GUI_TEST_FILTER:+--gtest_filter=$GUI_TEST_FILTER} >"$OUT/gui-tests.log" 2>&1
  echo "larmor_gui_tests exit $?: $(grep -E 'Totals' "$OUT/gui-tests.log")" | tee -a "$OUT/summary.txt"
fi
grep -hiE "device|cuda" "$OUT"/*.log | sort | uniq -c | head -20 >"$OUT/devices-seen.txt"
