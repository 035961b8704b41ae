#!/usr/bin/env bash
# larmor-cli's outputs read back by independent readers (tests/e2e/py/oracle.py; pydicom, nibabel, numpy, zlib,
# h5dump), none sharing code with Larmor. Proves, on a simulated 64^2 4-coil phantom (FFT + SoS, CPU):
#  - DICOM (pydicom): ImageOrientationPatient = the acquisition's read_dir, phase_dir; PixelSpacing = recon
#    FOV / matrix; ImagePositionPatient = position - c dx read - c dy phase (pixel c = N/2 at the centre,
#    docs/conventions.md), header values read by h5dump from the ISMRMRD file; pixels x RescaleSlope +
#    RescaleIntercept = |image| of the .cfl within half a quantisation step;
#  - --anonymize (pydicom): no patient name / ID / birth date of the original, no dates, PatientIdentityRemoved;
#  - NIfTI (nibabel): shape, the affine = LPS->RAS of the DICOM geometry, values = |image| (float);
#  - PNG (zlib): every pixel = round(255 clamp(|image| / hi)), hi the 99.5th percentile (the default window);
#  - `compare --json` and its printed lines = percent error, PSNR, fitted gain computed here in numpy from the
#    .cfl and the file's reference (h5dump);
#  - `--q-trig`: CG with --q-trig accurate, fast and recurrence each run, record the mode, and give the accurate image.
# A missing tool is a failure: installer/install-deps.sh installs them all.
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
command -v h5dump >/dev/null || { echo "FAIL: h5dump missing (hdf5-tools)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
q() { "$@" >/dev/null; }
q "$cli" simulate --matrix 64 --coils 4 --output rt.h5
q "$cli" recon rt.h5 --method fft --device cpu --output rt.cfl
q "$cli" recon rt.h5 --method fft --device cpu --output dcm/
q "$cli" recon rt.h5 --method fft --device cpu --anonymize --output anon/
q "$cli" recon rt.h5 --method fft --device cpu --output rt.nii
q "$cli" recon rt.h5 --method fft --device cpu --output rt.png
"$cli" compare --ref rt.h5 --test rt.cfl --json cmp.json >cmp.txt
# A DICOM series as the reference (one file stands for its folder): our own export of the same image.
"$cli" compare --ref "$(ls dcm/*.dcm | head -1)" --test rt.cfl --json cmp-dcm.json >/dev/null
"$cli" compare --ref dcm --test rt.cfl --json cmp-dcmdir.json >/dev/null
"$PY" - <<'PY'
import glob, json, re, subprocess
import numpy as np
import nibabel, pydicom
from oracle import read_cfl, h5_array, read_png, check

img = np.abs(read_cfl("rt")).squeeze()  # [x, y]
nx, ny = img.shape

# The ISMRMRD header, by h5dump: acquisition 0's direction cosines and position, the recon FOV from the XML.
acq = subprocess.run(["h5dump", "-d", "/dataset/data", "-s", "0", "-c", "1", "-y", "-w", "0", "-m", "%.9g", "rt.h5"],
                     check=True, capture_output=True, text=True).stdout
head = acq[acq.index("DATA {"):].split("}, (")[0]
triples = [[float(v) for v in a.split(",")] for a in re.findall(r"\[([^\]]*)\]", head) if a.count(",") == 2]
# AcquisitionHeader's [3] arrays in order: physiology_time_stamp, position, read_dir, phase_dir, slice_dir, table.
position, read, phase = map(np.array, triples[1:4])
xml = subprocess.run(["h5dump", "-d", "/dataset/xml", "-y", "rt.h5"], check=True, capture_output=True, text=True).stdout
recon = re.search(r"<reconSpace>.*?</reconSpace>", xml.replace("\\n", ""), re.S).group(0)
fov = [float(re.search(rf"<fieldOfView_mm>.*?<{a}>([^<]*)</{a}>", recon, re.S).group(1)) for a in "xyz"]
dx, dy = fov[0] / nx, fov[1] / ny
print(f"header: position {position}, read {read}, phase {phase}, FOV {fov}")

files = sorted(glob.glob("dcm/*.dcm"))
check(len(files) == 1, "one DICOM file for one slice")
ds = pydicom.dcmread(files[0])
check((ds.Rows, ds.Columns) == (ny, nx), f"Rows x Columns = {ny} x {nx}")
check(np.allclose(np.array(ds.ImageOrientationPatient, float), np.r_[read, phase], atol=1e-6), "ImageOrientationPatient = read_dir, phase_dir")
check(np.allclose(np.array(ds.PixelSpacing, float), [dy, dx], atol=1e-6), f"PixelSpacing = FOV / matrix = [{dy}, {dx}]")
ipp = position - (nx // 2) * dx * read - (ny // 2) * dy * phase
check(np.allclose(np.array(ds.ImagePositionPatient, float), ipp, atol=1e-3), f"ImagePositionPatient = {ipp}")
slope, icpt = float(ds.RescaleSlope), float(ds.RescaleIntercept)
values = ds.pixel_array.astype(float) * slope + icpt  # [row = y, column = x]
err = np.abs(values.T - img).max()
check(err <= 0.5 * slope * 1.0001, f"DICOM pixels x slope + intercept = |image| within half a step (max {err:.3g}, step {slope:.3g})")

a = pydicom.dcmread(sorted(glob.glob("anon/*.dcm"))[0])
for key in ("PatientName", "PatientID"):
    check(str(a.get(key, "")) != str(ds.get(key, "")) and "PHANTOM" not in str(a.get(key, "")), f"--anonymize replaced {key} ({a.get(key)})")
check(str(a.get("PatientBirthDate", "")) == "", "--anonymize: no PatientBirthDate")
dates = [el.keyword for el in a.iterall() if el.VR in ("DA", "DT") and str(el.value).strip()]
check(not dates, f"--anonymize: no dates left ({dates})")
check(str(a.get("PatientIdentityRemoved", "")) == "YES", "--anonymize: PatientIdentityRemoved = YES")
check(np.array_equal(a.pixel_array, ds.pixel_array), "--anonymize keeps the pixels")

n = nibabel.load("rt.nii")
check(n.shape[:2] == (nx, ny), f"NIfTI shape {n.shape}")
lps_to_ras = np.diag([-1.0, -1.0, 1.0])
expected = np.eye(4)
expected[:3, 0], expected[:3, 1], expected[:3, 3] = lps_to_ras @ (dx * read), lps_to_ras @ (dy * phase), lps_to_ras @ ipp
check(np.allclose(n.affine[:3, [0, 1, 3]], expected[:3, [0, 1, 3]], atol=1e-4), f"NIfTI affine columns x, y and origin = LPS->RAS of the DICOM geometry\n{n.affine}")
v = np.asarray(n.get_fdata())[:, :, 0]
check(np.abs(v - img).max() <= 1e-6 * img.max(), "NIfTI values = |image|")

png = read_png("rt.png")
check(png.shape[:2] == (ny, nx), f"PNG {png.shape[1]} x {png.shape[0]}")
flat = np.sort(img.ravel().astype(np.float32))
hi = float(flat[min(flat.size - 1, int(0.995 * flat.size))])
want = np.rint(255 * np.clip(img.T.astype(np.float32) / np.float32(hi), 0, 1))
diff = np.abs(png[:, :, 0] - want)
check(diff.max() <= 1, f"PNG pixels = the windowed image [0, 99.5th percentile {hi:.4g}] within 1 grey level (max {diff.max()}, {int((diff > 0).sum())} off by 1)")

rho = h5_array("rt.h5", "/dataset/reference").squeeze().T
r = np.abs(rho).astype(float); t = img.astype(float)
gain = (t * r).sum() / (t * t).sum()
e = gain * t - r
pe = 100 * np.sqrt((e ** 2).sum() / (r ** 2).sum())
psnr = 20 * np.log10(r.max() / np.sqrt((e ** 2).mean()))
c = json.load(open("cmp.json"))
print(f"compare: {c['percent_error']:.4f} % / {c['psnr_db']:.3f} dB / gain {c['scale']:.6f}; numpy: {pe:.4f} % / {psnr:.3f} dB / gain {gain:.6f}")
check(abs(c["percent_error"] - pe) < 1e-3 * pe and abs(c["psnr_db"] - psnr) < 1e-3 and abs(c["scale"] - gain) < 1e-5 * gain,
      "compare --json = percent error, PSNR, fitted gain against the file's reference, computed in numpy")
txt = open("cmp.txt").read()
check(re.search(r"percent error\s+" + f"{pe:.3f}", txt) is not None and f"{psnr:.3f}" in txt, "compare prints the same figures")
PY
# --q-trig: each mode of the exact Q's trigonometry runs, is recorded in the JSON settings, and gives the image of
# the accurate mode (30 CG iterations, 24^2 radial; bound 1e-3 relative: measured fast 5.3e-4, recurrence 2.5e-4).
q "$cli" simulate --matrix 24 --traj radial --output cg.h5
for mode in accurate fast recurrence; do
  q "$cli" recon cg.h5 --method cg --reg fd --lambda 0.01 --iters 30 --q-trig "$mode" --coil-maps dataset \
    --device cpu --output "q-$mode.cfl" --json "q-$mode.json"
done
"$PY" - <<'PY'
import json
from oracle import read_cfl, rel_l2, check
acc = read_cfl("q-accurate")
for mode in ("accurate", "fast", "recurrence"):
    j = json.load(open(f"q-{mode}.json"))
    check(j["settings"]["iterative"]["q_trig"] == mode, f"--q-trig {mode} recorded in the JSON settings")
    e = rel_l2(read_cfl(f"q-{mode}"), acc)
    print(f"--q-trig {mode}: {j['metrics']['percent_error']:.3f} %, image vs accurate Q {e:.2e}")
    check(e < 1e-3, f"--q-trig {mode}: the image of the accurate Q within 1e-3")
    check(j["metrics"]["percent_error"] < 30, f"--q-trig {mode}: a reconstruction, not a blank ({j['metrics']['percent_error']:.1f} %)")
PY
"$PY" - <<'PY'
import json
for f in ("cmp-dcm.json", "cmp-dcmdir.json"):
    j = json.load(open(f))
    assert j["percent_error"] < 0.1, f"{f}: the DICOM export of the same image differs by {j['percent_error']} %"
    print(f"compare against the DICOM series ({f}): {j['percent_error']:.4f} %")
PY
echo "cli_outputs: all checks passed"
