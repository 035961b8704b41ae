#!/usr/bin/env bash
# `larmor-cli maps` (ESPIRiT, docs/iterative.md "Coil sensitivities: ESPIRiT") against `bart ecalib -m1`
# (kernel 6, calibration 24, threshold 0.001, crop 0.8 on both sides) on
#   1. BART's phantom k-space, fully sampled: `bart phantom -k -s 8 -x 128`;
#   2. the same, undersampled 2x along pe1 (every other line, 24 calibration lines: `bart upat`);
#   3. BART's default radial trajectory (`bart traj -r -G -x 256 -y 101`, readout not oversampled), BART's maps
#      from the k-space of `bart nufft -i`;
#   4. the real brain ../shared/data/brain-poisson-8ch/ksp.cfl beside the repository ([1, 180, 230, 8], 2D
#      Poisson-disc; CI's checkout has shared/ beside the clone), read in place; absent, the test fails.
# Scores, inside BART's mask (voxels where BART's maps are non-zero), over voxels and coils:
#   magnitude correlation  sum |L||B| / sqrt(sum |L|^2 sum |B|^2)       (>= 0.99 required)
#   phase-free agreement   mean over voxels of |<L, B>| / (|L| |B|)      (reported)
#   mask overlap           |mask L and mask B| / |mask B|                 (reported)
# and the times of both tools on this machine (reported).
set -euo pipefail
cli=$1 dir=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)  # the repository, before the cd below
command -v bart >/dev/null || { echo "bart_ecalib: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bart_ecalib: python3 is needed for the comparison" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
q() { "$@" >/dev/null; }
now() { date +%s.%N; }

cat > compare.py <<'PY'
import array, math, sys
def load(base):
    dims = [int(x) for x in open(base + ".hdr").read().split("\n")[1].split()]
    a = array.array("f")
    with open(base + ".cfl", "rb") as f:
        a.frombytes(f.read())
    return dims, a
dl, l = load(sys.argv[1]); db, b = load(sys.argv[2])
if dl[:4] != db[:4]:
    sys.exit("shapes differ: %s vs %s" % (dl[:4], db[:4]))
coils = db[3]; n = len(b) // 2 // coils
num = nl = nb = 0.0; agree = 0.0; inb = both = 0
for v in range(n):
    sl = sb = 0.0; ip_re = ip_im = 0.0; ml = mb = 0.0
    for c in range(coils):
        i = 2 * (v + n * c)
        lr, li, br, bi = l[i], l[i + 1], b[i], b[i + 1]
        al, ab = math.hypot(lr, li), math.hypot(br, bi)
        sl += al * al; sb += ab * ab; num += al * ab
        ip_re += lr * br + li * bi; ip_im += lr * bi - li * br
        ml += al; mb += ab
    if mb == 0: continue
    inb += 1; nb += sb; nl += sl
    if ml > 0:
        both += 1; agree += math.hypot(ip_re, ip_im) / math.sqrt(sl * sb)
corr = num / math.sqrt(nl * nb)
print("%.5f %.5f %.4f" % (corr, agree / max(1, both), both / max(1, inb)))
PY

fail=0
check() {  # name larmor bart
  local r corr
  r=$(python3 compare.py "$2" "$3")
  corr=${r%% *}
  echo "$1: magnitude correlation $corr, phase-free agreement $(echo "$r" | cut -d' ' -f2), mask overlap $(echo "$r" | cut -d' ' -f3) (larmor ${tl}s, bart ecalib ${tb}s)"
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 0.99 else 1)" "$corr" || { echo "bart_ecalib: $1: magnitude correlation $corr < 0.99" >&2; fail=1; }
}
run() {  # name kspace
  local t0
  t0=$(now); q "$cli" maps "$2.cfl" --output "$1_larmor.cfl" --coil-maps espirit --device cpu; tl=$(python3 -c "print('%.2f' % ($(now) - $t0))")
  t0=$(now); q bart ecalib -m1 "$2" "$1_bart"; tb=$(python3 -c "print('%.2f' % ($(now) - $t0))")
  check "$1" "$1_larmor" "$1_bart"
}

q bart phantom -k -s 8 -x 128 phantom
run phantom phantom
q bart upat -Y 128 -Z 1 -y 2 -z 1 -c 24 pattern
q bart fmac phantom pattern phantom_us
run phantom-undersampled phantom_us

# Radial data as BART makes them by default (readout not oversampled, the object filling most of the FOV):
# BART's maps from the k-space of its inverse NUFFT (`nufft -i`), Larmor's from its fitted calibration box.
radial() {  # name spokes
  local t0
  q bart traj -r -G -x 256 -y "$2" "$1_t"
  q bart phantom -k -s 8 -t "$1_t" "$1_k"
  t0=$(now); q "$cli" maps "$1_k.cfl" --traj "$1_t.cfl" --matrix 256 --output "$1_larmor.cfl" --coil-maps espirit --device cpu
  tl=$(python3 -c "print('%.2f' % ($(now) - $t0))")
  t0=$(now); q bart nufft -i -d 256:256:1 "$1_t" "$1_k" "$1_img"; q bart fft -u 3 "$1_img" "$1_grid"
  q bart ecalib -m1 "$1_grid" "$1_bart"; tb=$(python3 -c "print('%.2f' % ($(now) - $t0))")
  check "$1" "$1_larmor" "$1_bart"
}
radial radial-golden-101 101

brain=$root/../shared/data/brain-poisson-8ch
if [ -f "$brain/ksp.cfl" ]; then
  run brain "$brain/ksp"
else
  echo "bart_ecalib: $brain/ksp.cfl is absent (the real-brain case; shared/ belongs beside the clone)" >&2
  fail=1
fi
exit $fail
