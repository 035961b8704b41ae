#!/usr/bin/env bash
# End-to-end: phantom in, numbers out. Data + reference + tolerance:
#  - fully sampled 8-coil 128^2 phantom, FFT + SoS vs the SoS-weighted truth: percent error < 10 %
#    (what remains is Gibbs ringing at the phantom's sharp edges and partial volume: the truth is the
#    pixel-averaged object, the reconstruction the band-limited one; the single-coil inverse DFT of the
#    analytic k-space already measures 8.6 % at 128^2, tests/unit/test_simulate.cpp), PSNR > 30 dB,
#    SSIM > 0.85;
#  - R = 4 zero-filled must be clearly worse (> 3x the error): the metrics see undersampling.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
"$cli" simulate --matrix 128 --coils 8 --traj cartesian --output "$dir/full.h5" >/dev/null
"$cli" simulate --matrix 128 --coils 8 --traj cartesian --accel 4 --acs 16 --output "$dir/r4.h5" >/dev/null
"$cli" recon "$dir/full.h5" --method fft --device cpu --output "$dir/full.cfl" --json "$dir/full.json" >/dev/null
"$cli" recon "$dir/r4.h5" --method fft --device cpu --output "$dir/r4.cfl" --json "$dir/r4.json" >/dev/null
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
full = json.load(open(f"{d}/full.json"))["metrics"]
r4 = json.load(open(f"{d}/r4.json"))["metrics"]
print(f"full: {full['percent_error']:.2f} % {full['psnr_db']:.1f} dB SSIM {full['ssim']:.3f}")
print(f"R=4 : {r4['percent_error']:.2f} % {r4['psnr_db']:.1f} dB SSIM {r4['ssim']:.3f}")
assert full["percent_error"] < 10, full
assert full["psnr_db"] > 30, full
assert full["ssim"] > 0.85, full
assert r4["percent_error"] > 3 * full["percent_error"], (full, r4)
PY
