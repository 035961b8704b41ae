#!/usr/bin/env bash
# End-to-end, the dynamic phantom (phantom/dynamic.hpp): `larmor-cli simulate --frames 4` writes one ISMRMRD file
# whose frames are repetitions, each with its own reference image:
#  - `info` lists 4 repetitions and the reference; its JSON says 4 repetitions;
#  - the file holds 4 reference arrays (h5dump, not our reader), frame 0's the static phantom's (the single-frame
#    simulation's reference, exactly), the others different (the object beats, breathes and enhances);
#  - `recon` reconstructs 4 frames into BART's TIME dimension (10), and each frame is nearer its own reference
#    than any other frame's (the reader gives frame r the reference of repetition r);
#  - Cartesian frames and .cfl output (k-space and --traj-output with TIME in dimension 10), which recon reads back
#    (each frame with its own spokes);
#  - bad --frames settings, and non-Cartesian .cfl output without --traj-output, are one-line errors.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }

"$cli" simulate --frames 4 --matrix 64 --coils 1 --traj golden --spokes-per-frame 101 --output "$dir/dyn.h5" \
  > "$dir/sim.txt"
grep -q "wrote $dir/dyn.h5: golden \[128, 101, 1, 1, 1\], 1 coils, 4 frames" "$dir/sim.txt" || { cat "$dir/sim.txt"; fail "simulate's line"; }
"$cli" info "$dir/dyn.h5" --json "$dir/info.json" > "$dir/info.txt"
grep -q "frames       4 read; the file holds 4 repetitions" "$dir/info.txt" || { cat "$dir/info.txt"; fail "info: 4 repetitions"; }
grep -q "reference    \[64, 64, 1, 1, 1\]" "$dir/info.txt" || fail "info: the reference"
for r in 1 2 3; do grep -q "frame   $r  repetition $r:" "$dir/info.txt" || fail "info: frame $r"; done
"$cli" simulate --matrix 64 --coils 1 --traj golden --output "$dir/static.h5" >/dev/null
"$cli" recon "$dir/dyn.h5" --method gridding --device cpu --output "$dir/img.cfl" --json "$dir/recon.json" >/dev/null

"$PY" - "$dir" <<'PYEOF'
import json, sys
import numpy as np
from oracle import read_cfl, h5_array, check
d = sys.argv[1]
info = json.load(open(d + "/info.json"))
check(info["dims"]["repetitions"] == 4, "info --json: 4 repetitions")
ref = h5_array(d + "/dyn.h5", "/dataset/reference")
check(ref.shape == (4, 1, 1, 1, 64, 64), f"the file holds one reference per repetition {ref.shape}")
ref = ref.reshape(4, 64, 64)
static = h5_array(d + "/static.h5", "/dataset/reference").reshape(64, 64)
check(np.array_equal(ref[0], static), "frame 0's reference is the static phantom")
for f in range(1, 4):
    change = np.linalg.norm(ref[f] - ref[0]) / np.linalg.norm(ref[0])
    check(change > 0.05, f"frame {f}'s reference differs from frame 0's ({change:.3f})")
img = read_cfl(d + "/img")
check(img.shape[10] == 4 and img.shape[:2] == (64, 64), f"4 frames in TIME (dim 10): {list(img.shape)}")
img = np.abs(img.reshape(64, 64, 4, order="F"))
def err(a, b):  # relative error after the least-squares gain (a: image, b: reference magnitude)
    s = (a * b).sum() / (b * b).sum()
    return np.linalg.norm(a - s * b) / np.linalg.norm(a)
for f in range(4):
    e = [err(img[:, :, f], np.abs(ref[g]).T) for g in range(4)]  # reference [y, x] -> [x, y]
    check(int(np.argmin(e)) == f, f"frame {f} is nearest its own reference: " + ", ".join(f"{x:.3f}" for x in e))
frames = json.load(open(d + "/recon.json"))["frames"]
check([x["repetition"] for x in frames] == [0, 1, 2, 3] and all("metrics" in x for x in frames),
      "recon --json: metrics for each of the 4 repetitions")
PYEOF

"$cli" simulate --frames 3 --matrix 32 --coils 2 --accel 3 --acs 6 --output "$dir/cart.h5" >/dev/null
"$cli" info "$dir/cart.h5" | grep -q "the file holds 3 repetitions" || fail "Cartesian frames"
"$cli" simulate --frames 4 --matrix 32 --coils 2 --traj golden --output "$dir/k.cfl" --traj-output "$dir/t.cfl" >/dev/null
[[ $(sed -n 2p "$dir/k.hdr") == "64 21 1 2 1 1 1 1 1 1 4 1 1 1 1 1 " ]] || fail "k.cfl dims: $(sed -n 2p "$dir/k.hdr")"
[[ $(sed -n 2p "$dir/t.hdr") == "3 64 21 1 1 1 1 1 1 1 4 1 1 1 1 1 " ]] || fail "t.cfl dims: $(sed -n 2p "$dir/t.hdr")"
"$cli" recon "$dir/k.cfl" --traj "$dir/t.cfl" --method gridding --device cpu --output "$dir/kimg.cfl" >/dev/null
[[ $(sed -n 2p "$dir/kimg.hdr") == "32 32 1 1 1 1 1 1 1 1 4 1 1 1 1 1 " ]] || fail "recon of k.cfl: $(sed -n 2p "$dir/kimg.hdr")"

expect_fail() {  # expect_fail TEXT cmd...
  local text=$1; shift
  if "$@" > "$dir/out.txt" 2> "$dir/err.txt"; then fail "$* succeeded"; fi
  grep -qF -- "$text" "$dir/err.txt" || { cat "$dir/err.txt"; fail "$* did not say: $text"; }
  [[ $(wc -l < "$dir/err.txt") -eq 1 ]] || { cat "$dir/err.txt"; fail "not one line"; }
}
expect_fail "--frames: Value 0 not in range" "$cli" simulate --frames 0 --output "$dir/e.h5"
expect_fail "frames need a 2D single-slice simulation" "$cli" simulate --frames 2 --slices 2 --matrix 32 --output "$dir/e.h5"
expect_fail "frames support cartesian, radial and golden, not spiral" "$cli" simulate --frames 2 --traj spiral --matrix 32 --output "$dir/e.h5"
expect_fail "--spokes-per-frame needs --frames N" "$cli" simulate --spokes-per-frame 5 --traj golden --matrix 32 --output "$dir/e.h5"
expect_fail "40 spokes are not 4 frames x 9 spokes per frame" \
  "$cli" simulate --frames 4 --spokes 40 --spokes-per-frame 9 --traj golden --matrix 32 --output "$dir/e.h5"
# The trajectory beside the k-space but no --traj: one line naming it, not an image of a Cartesian plane.
expect_fail "$dir/t.cfl beside k-space [64, 21, 1, 2" "$cli" recon "$dir/k.cfl" --method gridding --device cpu --output "$dir/nt-img.cfl"
expect_fail "golden k-space in a .cfl needs its trajectory: add --traj-output" \
  "$cli" simulate --frames 2 --traj golden --matrix 32 --output "$dir/nt.cfl"
[[ ! -e $dir/nt.cfl && ! -e $dir/nt.hdr ]] || fail "a refused simulate wrote nt.cfl"
echo PASS
