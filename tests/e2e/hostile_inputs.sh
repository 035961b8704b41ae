#!/usr/bin/env bash
# Hostile inputs, crafted here from files this script makes (larmor-cli simulate, bart, python3): header lies,
# corrupt samples and sizes past the memory limit. Each must end in exit 1 with one line on stderr that names
# the file and the reason (docs/reliability.md, "Limits and plausibility"); never a crash, an exit 0 with a
# wrong image, or an out-of-memory kill. Every command runs under `ulimit -v` (8 GiB), so an attempted huge
# allocation fails this test instead of the machine. The one case that is read rather than refused (a
# trajectory in normalised units) must give the same image size as the trajectory in cycles per FOV, with a
# warning.
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
command -v bart >/dev/null || { echo "FAIL: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
vlimit=$((8 * 1024 * 1024))  # KiB
fails=0

# run NAME NEEDLE CMD...: CMD must exit 1 with exactly one line on stderr containing NEEDLE.
refused() {
  local name=$1 needle=$2; shift 2
  local rc=0
  ( ulimit -v $vlimit; exec "$@" ) >"$name.out" 2>"$name.err" || rc=$?
  local lines; lines=$(grep -c '' "$name.err" || true)
  if [[ $rc -ne 1 || $lines -ne 1 ]] || ! grep -qF -- "$needle" "$name.err"; then
    echo "FAIL $name: exit $rc, $lines stderr lines, expected exit 1 and one line containing '$needle':" >&2
    sed 's/^/  | /' "$name.err" | head -5 >&2
    fails=$((fails + 1))
  else
    echo "ok   $name: $(cat "$name.err")"
  fi
}

cpu=(--device cpu)
q() { ( ulimit -v $vlimit; exec "$@" ) >/dev/null; }

# --- seeds ---------------------------------------------------------------------------------------------------
q "$cli" simulate --matrix 64 --coils 4 --output c.h5
q "$cli" recon c.h5 --method fft "${cpu[@]}" --output img.cfl
q "$cli" recon c.h5 --method fft "${cpu[@]}" --output ref.nii
q "$cli" recon c.h5 --method fft "${cpu[@]}" --output dcm/
bart traj -r -x 128 -y 96 t >/dev/null
bart phantom -s 4 -k -t t k >/dev/null
q "$cli" recon k.cfl --traj t.cfl --method gridding "${cpu[@]}" --output radial.cfl
cp "$here/../unit/data/twix/meas_MID00118_FID33075_sol24.dat" vb.dat
q "$cli" recon vb.dat --traj radial:180 --method gridding "${cpu[@]}" --output vb.cfl

"$PY" - <<'PY'
import re, struct, shutil, numpy as np, pydicom, os
from oracle import read_cfl

def write_cfl(base, a):
    a = np.asarray(a, dtype=np.complex64)
    with open(base + ".hdr", "w") as f:
        f.write("# Dimensions\n" + " ".join(str(d) for d in a.shape) + " " + " ".join(["1"] * (16 - a.ndim)) + "\n")
    a.ravel(order="F").tofile(base + ".cfl")

# .cfl header lies: 1024x1024x48x32 over 4 KiB; a 67 MB array (sparse zeros) for the memory limit.
open("lie.hdr", "w").write("# Dimensions\n1024 1024 48 32 1 1 1 1 1 1 1 1 1 1 1 1\n")
open("lie.cfl", "wb").write(b"\0" * 4096)
open("big.hdr", "w").write("# Dimensions\n256 256 32 4 1 1 1 1 1 1 1 1 1 1 1 1\n")
with open("big.cfl", "wb") as f: f.truncate(256 * 256 * 32 * 4 * 8)

# ISMRMRD encoded field of view: same-length edits of the XML's <encodedSpace> ... <fieldOfView_mm><y>.
raw = open("c.h5", "rb").read()
m = re.search(rb"<encodedSpace>.*?<fieldOfView_mm>.*?<y>([^<]*)</y>", raw, re.S)
v = m.group(1)
for name, lies in [("nan", [b"nan"]), ("zero", [b"0"]), ("neg", [b"-5"]), ("inf", [b"inf"]), ("huge", [b"1e30", b"9e9"])]:
    lie = next(l for l in lies if len(l) <= len(v)).ljust(len(v), b" ")
    open("fov-%s.h5" % name, "wb").write(raw[:m.start(1)] + lie + raw[m.end(1):])

# Trajectories: normalised units, one coordinate at -1000, denormal; k-space with one sample of 1e30.
t = read_cfl("t"); k = read_cfl("k")
write_cfl("tnorm", t / 128)
def damaged(src, dst, index, value):  # the .cfl's element `index` (file order) set to `value`
    shutil.copy(src + ".hdr", dst + ".hdr")
    a = np.fromfile(src + ".cfl", dtype=np.complex64); a[index] = value; a.tofile(dst + ".cfl")
damaged("t", "tfar", 3 * 1000, -1000)  # coordinate 0 of sample 1000
write_cfl("tden", (t.real * np.float32(1e-40)).astype(np.complex64))
damaged("k", "khuge", 777, 1e30)
write_cfl("zero", np.zeros((64, 64)))  # an all-zero reference of img.cfl's size

# twix VB cut after half of its scans (at a scan boundary: no ACQEND, fewer spokes than the file had).
b = open("vb.dat", "rb").read()
pos = struct.unpack_from("<I", b, 0)[0]
scans = []
while pos + 128 <= len(b):
    mask = struct.unpack_from("<Q", b, pos + 20)[0]
    if mask & 1: break  # ACQEND
    if mask & (1 << 5):  # SYNCDATA
        pos += struct.unpack_from("<I", b, pos)[0] & 0x1FFFFFF; continue
    samples, channels = struct.unpack_from("<HH", b, pos + 28)
    scans.append(pos); pos += channels * (128 + 8 * samples)
open("vb-cut.dat", "wb").write(b[:scans[len(scans) // 2]])

# NIfTI reference: vox_offset 1e30; a datatype (float32) whose bitpix says 16.
n = bytearray(open("ref.nii", "rb").read())
bad = bytearray(n); struct.pack_into("<f", bad, 108, 1e30); open("ref-offset.nii", "wb").write(bad)
bad = bytearray(n); struct.pack_into("<h", bad, 72, 16); open("ref-bitpix.nii", "wb").write(bad)

# DICOM reference: Rows one more than the pixels hold; no PixelData.
files = sorted(f for f in os.listdir("dcm") if f.endswith(".dcm"))
for name, damage in [("dcm-rows", "rows"), ("dcm-nopixels", "pixels")]:
    shutil.copytree("dcm", name)
    ds = pydicom.dcmread(os.path.join(name, files[0]))
    if damage == "rows": ds.Rows = ds.Rows + 1
    else: del ds.PixelData
    ds.save_as(os.path.join(name, files[0]))
PY

# --- 6: limits before allocation -----------------------------------------------------------------------------
refused cfl-lie-info "lie.cfl: holds 4096 bytes but" "$cli" info lie.cfl
refused cfl-lie-recon "lie.cfl: holds 4096 bytes but" "$cli" recon lie.cfl --method fft "${cpu[@]}" --output o1.cfl
refused cfl-limit-info "big.cfl: the array [256, 256, 32, 4] needs 68 MB of memory" \
  env LARMOR_MEMORY_LIMIT=50000000 "$cli" info big.cfl
refused cfl-limit-recon "LARMOR_MEMORY_LIMIT" env LARMOR_MEMORY_LIMIT=50000000 "$cli" recon big.cfl --method fft \
  "${cpu[@]}" --output o2.cfl
q "$cli" simulate --matrix 32x32x32 --coils 4 --output s3d.h5
refused cg-1024 "s3d.h5: cg" env LARMOR_MEMORY_LIMIT=16000000000 "$cli" recon s3d.h5 --method cg "${cpu[@]}" \
  --matrix 1024x1024x1024 --output o3.cfl
# maps at --matrix 2048x2048x512: the maps alone need far more than the limit (was std::bad_alloc); nothing written.
refused maps-matrix "s3d.h5: coil maps 2048x2048x512 x 4 coils x 1 slice need at least" \
  env LARMOR_MEMORY_LIMIT=16000000000 "$cli" maps s3d.h5 --matrix 2048x2048x512 "${cpu[@]}" --output om.cfl
if [[ -e om.cfl || -e om.hdr ]] || grep -q bad_alloc maps-matrix.err; then
  echo "FAIL maps-matrix: an output was written or the error is std::bad_alloc" >&2; fails=$((fails + 1))
fi

# --- 7: header lies and corrupt samples ----------------------------------------------------------------------
for lie in nan zero neg inf huge; do
  refused "fov-$lie" "fov-$lie.h5: the XML header's encodedSpace fieldOfView_mm y is" \
    "$cli" recon "fov-$lie.h5" --method fft "${cpu[@]}" --output "o-fov-$lie.cfl"
done
refused twix-cut "vb-cut.dat: the measurement has no ACQEND" \
  "$cli" recon vb-cut.dat --traj radial:180 --method gridding "${cpu[@]}" --output o4.cfl
rc=0; "$cli" info vb-cut.dat >info-cut.out 2>info-cut.err || rc=$?  # info describes it, with the reason
if [[ $rc -ne 0 ]] || ! grep -q "vb-cut.dat: the measurement has no ACQEND" info-cut.err; then
  echo "FAIL twix-cut-info: exit $rc; expected exit 0 and the warning" >&2; sed 's/^/  | /' info-cut.err >&2
  fails=$((fails + 1))
else
  echo "ok   twix-cut-info: $(cat info-cut.err)"
fi
refused traj-far "tfar.cfl: coordinate 0 of sample 1000 is -1000 cycles/FOV, outside the k-space extent" \
  "$cli" recon k.cfl --traj tfar.cfl --method gridding "${cpu[@]}" --output o5.cfl
refused traj-denormal "tden.cfl: the trajectory is effectively all zero" \
  "$cli" recon k.cfl --traj tden.cfl --method gridding "${cpu[@]}" --output o6.cfl
refused sample-1e30 "khuge.cfl: k-space sample 777 has magnitude 1e+30" \
  "$cli" recon khuge.cfl --traj t.cfl --method gridding "${cpu[@]}" --output o7.cfl
refused nifti-offset "ref-offset.nii: NIfTI vox_offset 1e+30" "$cli" compare --ref ref-offset.nii --test img.cfl
refused nifti-bitpix "ref-bitpix.nii: NIfTI datatype 16 has 32 bits a voxel but bitpix says 16" \
  "$cli" compare --ref ref-bitpix.nii --test img.cfl

# --- 11: errors that name the file ----------------------------------------------------------------------------
refused dicom-rows "PixelData holds" "$cli" compare --ref dcm-rows --test img.cfl
refused dicom-nopixels "has no 16-bit pixel data" "$cli" compare --ref dcm-nopixels --test img.cfl
refused ref-all-zero "zero.cfl: the reference image is all zero" "$cli" compare --ref zero.cfl --test img.cfl

# --- read, not refused: a trajectory in [-0.5, 0.5] is scaled to cycles per FOV, with a warning --------------
rc=0
( ulimit -v $vlimit; exec "$cli" recon k.cfl --traj tnorm.cfl --method gridding "${cpu[@]}" --output norm.cfl ) \
  >norm.out 2>norm.err || rc=$?
if [[ $rc -ne 0 ]] || ! grep -q "normalised units, scaled to cycles/FOV by 128 x 128" norm.err ||
   ! cmp -s norm.hdr radial.hdr; then
  echo "FAIL traj-normalised: exit $rc; expected exit 0, a warning and the image size of radial.hdr:" >&2
  cat norm.err norm.hdr radial.hdr 2>/dev/null | sed 's/^/  | /' >&2
  fails=$((fails + 1))
else
  echo "ok   traj-normalised: $(cat norm.err)"
fi

[[ $fails -eq 0 ]] || { echo "FAIL: $fails hostile input(s) not refused as one line" >&2; exit 1; }
echo "PASS: every hostile input refused with one line naming the file"
