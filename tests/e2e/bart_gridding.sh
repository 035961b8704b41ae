#!/usr/bin/env bash
# Larmor's gridding against BART (Debian's bart, installed by installer/install-deps.sh) on BART's own data:
# golden-angle radial, 256 samples x 101 spokes, 8 coils, BART's analytic phantom sampled at the trajectory
# (`bart phantom -k -s 8 -t`). Truth: BART's band-limited Cartesian phantom at 128^2 (inverse FFT of
# `bart phantom -k -s 8 -x 128`, root sum of squares). Peer: BART's adjoint NUFFT with the same ramp density
# compensation (weights |k|), root sum of squares. Both scored by `bart nrmse -s` (least-squares scale, so the
# tools' normalisations do not count; a flipped or transposed image would score badly). Larmor must be at
# least as close to the truth as BART, and it must read BART's .cfl k-space and trajectory as BART means them:
# its gridding and its exact DFT (conjugate phase, the phase recurrence of Stone's F^H d) with the same DCF, on
# the CPU, and where a CUDA device is present also on it (gridding by TRON's spreader, the DFT by the GPU's
# recurrence kernels).
set -euo pipefail
cli=$1 dir=$2 name=bart_gridding
here=$(cd "$(dirname "$0")" && pwd)
command -v bart >/dev/null || { echo "bart_gridding: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
q() { "$@" >/dev/null; }
q bart traj -x 256 -y 101 -r -G traj2x
q bart scale 0.5 traj2x traj                  # |k| <= 64 cycles/FOV: a 128 matrix, 2x oversampled readout
q bart phantom -k -s 8 -t traj ksp
q bart phantom -k -s 8 -x 128 kc
q bart fft -i 3 kc coils
q bart rss 8 coils truth
q bart rss 1 traj ramp                        # |k| per sample: the ramp density compensation
q bart fmac ksp ramp kspw
q bart nufft -a -d 128:128:1 traj kspw bartcoils
q bart rss 8 bartcoils bart_gridding
score() { bart nrmse -s truth "$1" | tail -n 1; }
peer=$(score bart_gridding)
source "$here/lib/devices.sh"
fail=0
for dev in $devices; do
  for method in gridding dft; do
    case $method/$dev in
      gridding/cpu) opts=() ;;
      gridding/cuda) opts=(--spreader tron) ;;
      dft/*) opts=(--trig recurrence) ;;
    esac
    recon_on $dev larmor_${method}_$dev ksp.cfl --traj traj.cfl --method $method "${opts[@]}" --dcf ramp --matrix 128
    larmor=$(score larmor_${method}_$dev)
    echo "NRMSE vs BART's band-limited truth: Larmor $method ($dev) $larmor, BART nufft -a (ramp DCF) $peer"
    python3 -c "import sys; l, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if l <= b else 1)" "$larmor" "$peer" ||
      { echo "bart_gridding: Larmor $method on $dev ($larmor) is further from the truth than BART ($peer)" >&2; fail=1; }
  done
done
exit $fail
