#!/usr/bin/env bash
# End-to-end, dynamic imaging from the command line (recon/dynamic.hpp, docs/dynamic.md):
#  - `recon --method cs` on a series reconstructs the frames jointly (it says so; the sidecar's provenance too),
#    and each frame is nearer its own truth than frame-by-frame CS's (--frames-independent) on average;
#  - `recon --spokes-per-frame K` cuts a continuous acquisition into frames (TIME in dimension 10), and
#    --frame-overlap a sliding window; bad cuts are one-line errors;
#  - `batch` reconstructs a series item jointly and writes what `recon` writes, byte for byte.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
fail() { echo "FAIL: $*"; exit 1; }

"$cli" simulate --frames 6 --matrix 48 --coils 4 --traj golden --spokes-per-frame 13 --noise 0.01 \
  --output "$dir/in/dyn.h5" >/dev/null
"$cli" recon "$dir/in/dyn.h5" --method cs --iters 40 --device cpu --output "$dir/joint.cfl" --json "$dir/joint.json" \
  --save-settings "$dir/S.json" > "$dir/joint.txt"
grep -q "the 6 frames jointly" "$dir/joint.txt" || { cat "$dir/joint.txt"; fail "recon does not say jointly"; }
"$cli" recon "$dir/in/dyn.h5" --method cs --iters 40 --frames-independent --device cpu --output "$dir/alone.cfl" \
  --json "$dir/alone.json" > "$dir/alone.txt"
grep -q "jointly" "$dir/alone.txt" && fail "--frames-independent still joint"

# A continuous acquisition: one frame of 78 golden-angle spokes, cut into 6 frames of 13 (and a sliding window).
"$cli" simulate --matrix 48 --coils 4 --traj golden --spokes 78 --output "$dir/cont.h5" >/dev/null
"$cli" recon "$dir/cont.h5" --method cs --iters 20 --spokes-per-frame 13 --device cpu --output "$dir/cut.cfl" >/dev/null
"$cli" recon "$dir/cont.h5" --method cs --iters 20 --spokes-per-frame 13 --frame-overlap 5 --device cpu \
  --output "$dir/slide.cfl" >/dev/null
for bad in "--spokes-per-frame 100" "--spokes-per-frame 13 --frame-overlap 13" "--frame-overlap 2" \
           "--frames 2 --spokes-per-frame 13"; do
  if "$cli" recon "$dir/cont.h5" --method cs $bad --device cpu --output "$dir/bad.cfl" > "$dir/bad.txt" 2>&1; then
    fail "recon $bad succeeded"
  fi
  [[ $(grep -c . "$dir/bad.txt") -le 2 ]] || { cat "$dir/bad.txt"; fail "recon $bad: not a one-line error"; }
done
if "$cli" recon "$dir/in/dyn.h5" --method cs --spokes-per-frame 5 --device cpu --output "$dir/bad.cfl" >/dev/null 2>&1; then
  fail "cutting a file that has frames already succeeded"
fi

# batch: the same joint reconstruction as recon, byte for byte.
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/out" --format cfl --devices cpu --jobs 1 \
  > "$dir/batch.txt" 2>&1 || { cat "$dir/batch.txt"; fail "batch failed"; }
cmp "$dir/out/dyn.cfl" "$dir/joint.cfl" || fail "batch's series differs from recon's"

"$PY" - "$dir" <<'PYEOF'
import json, sys
import numpy as np
from oracle import read_cfl, check
d = sys.argv[1]
j, a = json.load(open(d + "/joint.json")), json.load(open(d + "/alone.json"))
check(j["dynamic"]["joint"] is True and j["dynamic"]["frames"] == 6, "the sidecar says joint over 6 frames")
check("dynamic" not in a, "frame by frame has no joint record")
ej = [f["metrics"]["percent_error"] for f in j["frames"]]
ea = [f["metrics"]["percent_error"] for f in a["frames"]]
print("joint", np.mean(ej), "frame by frame", np.mean(ea))
check(np.mean(ej) < np.mean(ea), "joint error below frame-by-frame CS on average")
cut, slide = read_cfl(d + "/cut"), read_cfl(d + "/slide")
check(cut.shape[10] == 6, f"6 frames of 13 spokes in TIME, got {cut.shape}")
check(slide.shape[10] == 9, f"a window of 13 moving by 8: 9 frames, got {slide.shape}")
PYEOF
echo "PASS"
