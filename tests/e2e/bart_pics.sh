#!/usr/bin/env bash
# Larmor's model-based reconstructions against BART's pics (Debian's bart, installed by
# installer/install-deps.sh) on BART's own data, 8 coils, 128^2, scored against BART's band-limited truth
# (inverse FFT of `bart phantom -k -s 8 -x 128`, root sum of squares) by `bart nrmse -s` on magnitudes:
#   A. Cartesian R = 2 x 2 on a ky-kz plane ([1, 128, 128, 8]) with a 20 x 20 fully sampled centre
#      (`bart upat`); BART's maps: `bart ecalib -m1`.
#   B. golden-angle radial, 51 spokes of 256 samples (4x under the radial Nyquist count of 128^2); BART's maps:
#      `bart ecalib -m1` of the gridded k-space (`bart nufft -i`, `bart fft -u`), BART's usual radial recipe.
# Claims (docs/iterative.md): Larmor's defaults (--method cg; --method cs, which is TV at lambda 3e-4) are at
# least as close to the truth as `pics -l2` (r 0.001) and as `pics -R T` at BART's best lambda of a sweep; and
# Larmor's cs at its own best lambda of the same sweep is at least 10 % closer than BART's best.
set -euo pipefail
cli=$1 dir=$2
command -v bart >/dev/null || { echo "bart_pics: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
q() { "$@" >/dev/null 2>&1; }
score() { q bart cabs "$1" "$1_mag"; bart nrmse -s "$truth" "$1_mag" | tail -n 1; }
le() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) * float(sys.argv[3]) else 1)" "$@"; }
min() { printf '%s\n' "$@" | sort -g | head -n 1; }
lambdas="0.0001 0.0003 0.001 0.003"
fail=0
check() {  # name value bound factor
  if le "$2" "$3" "$4"; then echo "  ok: $1 $2 <= $4 x $3"; else echo "bart_pics: $1 $2 > $4 x $3" >&2; fail=1; fi
}

q bart phantom -k -s 8 -x 128 kc
q bart fft -i 3 kc coils
q bart rss 8 coils truth

echo "A. Cartesian R 2x2, 20x20 centre, [1, 128, 128, 8]"
q bart transpose 0 2 kc kt
q bart transpose 0 2 truth truth_plane  # [1, 128, 128], as the plane's images
truth=truth_plane
q bart upat -Y 128 -Z 128 -y 2 -z 2 -c 20 mask
q bart fmac kt mask ku
q bart ecalib -m1 ku maps
q bart pics -S -l2 -r 0.001 -i 30 ku maps bl2
bt=(); for l in $lambdas; do q bart pics -S -R T:6:0:$l -i 100 ku maps bt_$l; bt+=("$(score bt_$l)"); done
"$cli" recon ku.cfl --method cg --device cpu --output lcg.cfl >/dev/null
"$cli" recon ku.cfl --method cs --device cpu --output lcs.cfl >/dev/null
lt=(); for l in $lambdas; do "$cli" recon ku.cfl --method cs --lambda "$l" --device cpu --output lcs_$l.cfl >/dev/null; lt+=("$(score lcs_$l)"); done
bl2=$(score bl2) lcg=$(score lcg) lcs=$(score lcs)
bbest=$(min "${bt[@]}") lbest=$(min "${lt[@]}")
echo "  BART pics -l2 $bl2, -R T over lambda {$lambdas}: ${bt[*]} (best $bbest)"
echo "  Larmor cg $lcg, cs (defaults) $lcs, cs over lambda: ${lt[*]} (best $lbest)"
check "A: Larmor cg defaults vs pics -l2" "$lcg" "$bl2" 1
check "A: Larmor cs defaults vs pics -R T at BART's best lambda" "$lcs" "$bbest" 1
check "A: Larmor cs at its best lambda vs 0.9 x BART's best" "$lbest" "$bbest" 0.9

truth=truth
echo "B. golden-angle radial, 51 spokes x 256 samples, 128^2"
q bart traj -x 256 -y 51 -r -G traj2x
q bart scale 0.5 traj2x traj
q bart phantom -k -s 8 -t traj ksp
q bart nufft -i -d 128:128:1 traj ksp grid
q bart fft -u 3 grid kgrid
q bart ecalib -m1 kgrid rmaps
q bart pics -S -l2 -r 0.001 -i 30 -t traj ksp rmaps rbl2
bt=(); for l in $lambdas; do q bart pics -S -R T:3:0:$l -i 100 -t traj ksp rmaps rbt_$l; bt+=("$(score rbt_$l)"); done
"$cli" recon ksp.cfl --traj traj.cfl --matrix 128 --method cg --device cpu --output rlcg.cfl >/dev/null
"$cli" recon ksp.cfl --traj traj.cfl --matrix 128 --method cs --device cpu --output rlcs.cfl >/dev/null
lt=(); for l in $lambdas; do "$cli" recon ksp.cfl --traj traj.cfl --matrix 128 --method cs --lambda "$l" --device cpu --output rlcs_$l.cfl >/dev/null; lt+=("$(score rlcs_$l)"); done
bl2=$(score rbl2) lcg=$(score rlcg) lcs=$(score rlcs)
bbest=$(min "${bt[@]}") lbest=$(min "${lt[@]}")
echo "  BART pics -l2 $bl2, -R T over lambda {$lambdas}: ${bt[*]} (best $bbest)"
echo "  Larmor cg $lcg, cs (defaults) $lcs, cs over lambda: ${lt[*]} (best $lbest)"
check "B: Larmor cg defaults vs pics -l2" "$lcg" "$bl2" 1
check "B: Larmor cs defaults vs pics -R T at BART's best lambda" "$lcs" "$bbest" 1
check "B: Larmor cs at its best lambda vs 0.9 x BART's best" "$lbest" "$bbest" 0.9
exit $fail
