#!/usr/bin/env bash
# End-to-end, series not merges: ismrmrd_generate_cartesian_shepp_logan -a 4 -w 24 writes 4
# repetitions, each 4x undersampled with shifted lines and its own 24 ACS lines (noise-free here, -n 0).
#  - `info` says R 4 for the file and for every frame, and that the file holds 4 repetitions;
#  - `recon --method grappa` gives 4 frames (BART TIME dim 10), each with an NRMSE against the fully sampled
#    file (-a 1, FFT + SoS) <= 1/3 of the same frame's zero-filled NRMSE (measured: ~0.05 vs ~0.36);
#  - --repetition 2 reconstructs one frame, equal to frame 2 of the series; `maps` without it is refused (which
#    frame?), with it writes that frame's maps;
#  - NIfTI gets a 4th dimension of 4, the DICOM series 4 instances with TemporalPositionIdentifier 1..4
#    (read back with DCMTK's dcmdump), JSON lists 4 frames with timings.
# NRMSE: || s |x| - |ref| || / || ref || with the least-squares gain s (numpy, /usr/bin/python3).
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
command -v ismrmrd_generate_cartesian_shepp_logan >/dev/null ||
  { echo "FAIL: ismrmrd_generate_cartesian_shepp_logan is not installed (installer/install-deps.sh: ismrmrd-tools)"; exit 1; }
PY=/usr/bin/python3
ismrmrd_generate_cartesian_shepp_logan -a 4 -w 24 -m 128 -c 8 -n 0 -o "$dir/r4.h5" >/dev/null
ismrmrd_generate_cartesian_shepp_logan -a 1 -m 128 -c 8 -n 0 -o "$dir/full.h5" >/dev/null

"$cli" info "$dir/r4.h5" --json "$dir/info.json" > "$dir/info.txt"
grep -q "acceleration 4 x 1" "$dir/info.txt" || { echo "FAIL: info does not say R 4"; cat "$dir/info.txt"; exit 1; }
grep -q "the file holds 4 repetitions" "$dir/info.txt" || { echo "FAIL: info does not list 4 repetitions"; exit 1; }
[[ $(grep -c "acceleration 4 x 1, calibration lines 24" "$dir/info.txt") -ge 4 ]] || { echo "FAIL: a frame is not R 4"; exit 1; }
# One frame cannot be taken from a series without saying which.
if "$cli" maps "$dir/r4.h5" --output "$dir/maps.cfl" 2> "$dir/err.txt"; then echo "FAIL: a 4-frame file was merged"; exit 1; fi
grep -q "holds 4 frames (4 repetitions); select one with --repetition N" "$dir/err.txt" || { cat "$dir/err.txt"; exit 1; }
# ... and maps take that advice: one frame's maps.
"$cli" maps "$dir/r4.h5" --repetition 2 --device cpu --output "$dir/maps2.cfl" > "$dir/maps2.txt" ||
  { echo "FAIL: maps --repetition 2"; cat "$dir/maps2.txt"; exit 1; }
[[ -s $dir/maps2.cfl ]] || { echo "FAIL: maps --repetition 2 wrote no maps"; exit 1; }

"$cli" recon "$dir/full.h5" --method fft --device cpu --output "$dir/full.cfl" >/dev/null
"$cli" recon "$dir/r4.h5" --method grappa --device cpu --output "$dir/grappa.cfl" --json "$dir/grappa.json" >/dev/null
"$cli" recon "$dir/r4.h5" --method fft --device cpu --output "$dir/zf.cfl" >/dev/null
"$cli" recon "$dir/r4.h5" --method grappa --device cpu --repetition 2 --output "$dir/rep2.cfl" >/dev/null
"$cli" recon "$dir/r4.h5" --method grappa --device cpu --output "$dir/grappa.nii" >/dev/null
"$cli" recon "$dir/r4.h5" --method grappa --device cpu --output "$dir/dicom/" >/dev/null

"$PY" - "$dir" <<'PYEOF'
import json, sys, struct, numpy as np
d = sys.argv[1]
def cfl(base):
    dims = [int(x) for x in open(base + ".hdr").read().split("\n")[1].split()]
    return np.fromfile(base + ".cfl", dtype=np.complex64).reshape(dims[::-1]).T, dims
ref, _ = cfl(d + "/full"); ref = np.abs(ref).reshape(128, 128)
g, gd = cfl(d + "/grappa"); z, zd = cfl(d + "/zf"); g = g.squeeze(); z = z.squeeze()
assert gd[10] == 4 and zd[10] == 4 and all(x == 1 for i, x in enumerate(gd) if i not in (0, 1, 10)), gd
def nrmse(x):
    x = np.abs(x).reshape(128, 128); s = (x * ref).sum() / (x * x).sum()
    return np.linalg.norm(s * x - ref) / np.linalg.norm(ref)
for f in range(4):
    eg, ez = nrmse(g[..., f]), nrmse(z[..., f])
    print("frame %d: GRAPPA NRMSE %.4f, zero-filled %.4f, ratio %.3f" % (f, eg, ez, eg / ez))
    assert eg <= ez / 3, "frame %d: GRAPPA is not 3x better than zero-filling" % f
r2, _ = cfl(d + "/rep2")
assert np.abs(r2.reshape(128, 128) - g[..., 2].reshape(128, 128)).max() <= 1e-6 * np.abs(r2).max(), "--repetition 2 != frame 2"
j = json.load(open(d + "/grappa.json"))
assert len(j["frames"]) == 4 and all(f["total_ms"] > 0 and f["acceleration"] == [4, 1] for f in j["frames"]), j["frames"]
assert [f["repetition"] for f in j["frames"]] == [0, 1, 2, 3]
dim = struct.unpack("<8h", open(d + "/grappa.nii", "rb").read(348)[40:56])
assert dim[:5] == (4, 128, 128, 1, 4), dim
print("NIfTI dims", dim[:5])
PYEOF
for i in 1 2 3 4; do
  f=$(printf "%s/dicom/magnitude_%04d.dcm" "$dir" "$i")
  tp=$(dcmdump +P TemporalPositionIdentifier "$f" | sed 's/.*\[\(.*\)\].*/\1/')
  n=$(dcmdump +P NumberOfTemporalPositions "$f" | sed 's/.*\[\(.*\)\].*/\1/')
  inst=$(dcmdump +P InstanceNumber "$f" | sed 's/.*\[\(.*\)\].*/\1/')
  [[ $tp == "$i" && $n == 4 && $inst == "$i" ]] || { echo "FAIL: $f: temporal position '$tp' of '$n', instance '$inst'"; exit 1; }
done
echo "PASS"
