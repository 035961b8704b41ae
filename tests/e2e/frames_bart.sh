#!/usr/bin/env bash
# End-to-end, series not merges: BART files.
#  - radial k-space made by BART itself (bart traj -r, bart phantom -k -t) opened without --traj is an error
#    that says so, naming the trajectory beside it when one fits (it used to become a 1 x N x P "Cartesian"
#    volume); with --traj it reconstructs;
#  - the Cartesian ky-kz plane of ../shared/data/brain-poisson-8ch beside the repository (1 x 180 x 230 x 8) is
#    still read (absent, the test fails);
#  - k-space with TE (dim 5) and TIME (dim 10) reconstructs frame by frame into the same BART dims.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/a" "$dir/b"
command -v bart >/dev/null || { echo "FAIL: bart is not installed (installer/install-deps.sh installs it)"; exit 1; }
bart traj -r -x 128 -y 64 "$dir/a/traj" >/dev/null
bart phantom -k -s 4 -t "$dir/a/traj" "$dir/a/ksp" >/dev/null
cp "$dir/a/ksp.cfl" "$dir/a/ksp.hdr" "$dir/b/"
expect_fail() {  # expect_fail TEXT cmd...
  local text=$1; shift
  if "$@" > "$dir/out.txt" 2> "$dir/err.txt"; then echo "FAIL: $* succeeded"; exit 1; fi
  grep -qF -- "$text" "$dir/err.txt" || { echo "FAIL: $* said:"; cat "$dir/err.txt"; exit 1; }
  [[ $(wc -l < "$dir/err.txt") -eq 1 ]] || { echo "FAIL: not one line"; cat "$dir/err.txt"; exit 1; }
}
expect_fail "beside it fits it as a trajectory; pass --traj $dir/a/traj.cfl" "$cli" info "$dir/a/ksp"
expect_fail "looks non-Cartesian (readout dimension 1, every profile through k = 0) and no trajectory was given" \
  "$cli" recon "$dir/b/ksp" --output "$dir/x.png"
"$cli" recon "$dir/b/ksp" --traj "$dir/a/traj" --method gridding --device cpu --output "$dir/rad.png" >/dev/null

data=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/shared/data/brain-poisson-8ch/ksp
[[ -f $data.hdr ]] || { echo "FAIL: $data.hdr is absent (shared/ belongs beside the clone)"; exit 1; }
"$cli" info "$data" | grep -q "trajectory   cartesian" || { echo "FAIL: brain-poisson-8ch is not read as Cartesian"; exit 1; }

# TE x TIME: 2 echoes x 3 time points of a Cartesian phantom, each scaled differently.
bart phantom -k -x 64 -s 2 "$dir/k0" >/dev/null
bart scale 2 "$dir/k0" "$dir/k1" >/dev/null
bart join 5 "$dir/k0" "$dir/k1" "$dir/kte" >/dev/null
bart scale 3 "$dir/kte" "$dir/kte3" >/dev/null
bart scale 5 "$dir/kte" "$dir/kte5" >/dev/null
bart join 10 "$dir/kte" "$dir/kte3" "$dir/kte5" "$dir/kall" >/dev/null
"$cli" info "$dir/kall" | grep -q "the file holds 2 contrasts x 3 repetitions" || { echo "FAIL: info"; exit 1; }
"$cli" recon "$dir/kall" --method fft --device cpu --output "$dir/img.cfl" >/dev/null
"$cli" recon "$dir/kall" --method fft --device cpu --contrast 1 --repetition 2 --output "$dir/one.cfl" >/dev/null
/usr/bin/python3 - "$dir" <<'PYEOF'
import sys, numpy as np
d = sys.argv[1]
def cfl(b):
    dims = [int(x) for x in open(b + ".hdr").read().split("\n")[1].split()]
    return np.fromfile(b + ".cfl", dtype=np.complex64).reshape(dims[::-1]).T, dims
img, dims = cfl(d + "/img")
assert dims[5] == 2 and dims[10] == 3, dims
img = img.squeeze()  # [x, y, TE, TIME]
base = np.abs(img[:, :, 0, 0]).sum()
for te, a in enumerate((1, 2)):
    for t, b in enumerate((1, 3, 5)):
        r = np.abs(img[:, :, te, t]).sum() / base
        assert abs(r - a * b) < 1e-3 * a * b, (te, t, r)
one, _ = cfl(d + "/one")
assert np.abs(one.squeeze() - img[:, :, 1, 2]).max() <= 1e-6 * np.abs(one).max()
print("TE x TIME frames in BART dims 5 and 10: OK")
PYEOF
echo PASS
