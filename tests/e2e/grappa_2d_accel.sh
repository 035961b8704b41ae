#!/usr/bin/env bash
# End-to-end: 2D GRAPPA on 3D data undersampled along pe1 and pe2. `simulate --accel 2x2 --acs 16` writes an
# ISMRMRD file with accelerationFactor 2 x 2 and a 16 x 16 calibration centre box; `info` must report 2 x 2 and
# `recon --method grappa` must reconstruct it. Against the fully sampled reconstruction of the same phantom and
# coils (`larmor-cli compare`: least-squares scaled magnitudes) GRAPPA must beat zero-filling by at least 2x
# in error (tests/shared/grappa2d.cpp measures it at 64 x 64 x 32), and 1 x 2 must
# do at least as well as 2 x 2. Then BART's layout of a ky-kz plane ([1, ny, nz, coils]: one readout column, as
# after the readout's inverse FFT of a 3D scan), 2 x 2 with a 20 x 20 centre (`bart upat`): GRAPPA with its
# defaults must run (the kernel's readout extent fits the one column) and beat zero-filling by 2x too.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
sim=(simulate --traj cartesian --matrix 48x48x24 --coils 8 --coil-rings 2)
"$cli" "${sim[@]}" --output "$dir/full.h5" >/dev/null
"$cli" "${sim[@]}" --accel 2x2 --acs 16 --output "$dir/r22.h5" >/dev/null
"$cli" "${sim[@]}" --accel 1x2 --acs 16 --output "$dir/r12.h5" >/dev/null
"$cli" info "$dir/r22.h5" | grep -q "acceleration 2 x 2" || { echo "info does not report 2 x 2"; exit 1; }
"$cli" recon "$dir/full.h5" --method fft --device cpu --output "$dir/full.cfl" >/dev/null
"$cli" recon "$dir/r22.h5" --method grappa --device cpu --output "$dir/grappa.cfl" >/dev/null
"$cli" recon "$dir/r22.h5" --method fft --device cpu --output "$dir/zf.cfl" >/dev/null
"$cli" recon "$dir/r12.h5" --method grappa --device cpu --output "$dir/grappa12.cfl" >/dev/null
err() { "$cli" compare --ref "$dir/full.cfl" --test "$1" | awk '/percent error/ {print $3}'; }
g=$(err "$dir/grappa.cfl"); z=$(err "$dir/zf.cfl"); g12=$(err "$dir/grappa12.cfl")
echo "vs fully sampled: 2x2 GRAPPA $g %, zero-filled $z %; 1x2 GRAPPA $g12 %"
python3 -c "import sys; g,z,g12=map(float,sys.argv[1:]); assert z >= 2*g, (g, z); assert g12 <= g, (g12, g)" "$g" "$z" "$g12"

command -v bart >/dev/null || { echo "grappa_2d_accel: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
( cd "$dir"
  bart phantom -k -s 8 -x 96 p >/dev/null; bart transpose 0 2 p plane >/dev/null
  bart upat -Y 96 -Z 96 -y 2 -z 2 -c 20 pattern >/dev/null; bart fmac plane pattern plane_us >/dev/null
  bart fft -i 6 plane coils >/dev/null; bart rss 8 coils truth >/dev/null )
"$cli" recon "$dir/plane_us.cfl" --method grappa --device cpu --output "$dir/plane_grappa.cfl" >/dev/null
"$cli" recon "$dir/plane_us.cfl" --method fft --device cpu --output "$dir/plane_zf.cfl" >/dev/null
err() { "$cli" compare --ref "$dir/truth.cfl" --test "$1" | awk '/percent error/ {print $3}'; }
g=$(err "$dir/plane_grappa.cfl"); z=$(err "$dir/plane_zf.cfl")
echo "ky-kz plane [1, 96, 96, 8], 2x2 + 20x20 centre, vs truth: GRAPPA defaults $g %, zero-filled $z %"
python3 -c "import sys; g,z=map(float,sys.argv[1:]); assert z >= 2*g, (g, z)" "$g" "$z"
echo OK
