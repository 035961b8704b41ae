#!/usr/bin/env bash
# Siemens twix end to end against BART (Debian's bart; installer/install-deps.sh installs it) on the two real
# files of tests/unit/data/twix (origin and licence: its README.md).
# 1. VD/VE GRE (2 channels, 160 x 320, 2x readout oversampling): `larmor-cli recon gre.dat --method fft`
#    against `bart twixread -A` + `bart fft -u -i 3` + `bart rss 8` + the same oversampling crop
#    (`bart resize -c 0 160`). NRMSE (no fitted scale) <= 1e-4.
# 2. VB Pulseq radial (4 channels, 256 spokes x 256 samples, spoke i at i*pi/256, echo at sample 128:
#    docs/twix.md): twix carries no trajectory. BART's `traj -r -c` has the same spokes at (sin, cos), so
#    its x and y are swapped to the sequence's (cos, sin) readout. Both tools read the file and reconstruct
#    with an adjoint NUFFT:
#    a. without density compensation (E^H d, the reading and the trajectory alone): larmor-cli
#       --traj radial:180 --method gridding --dcf none --width 8 against `bart twixread -x 256 -y 256 -c 4`
#       + `bart nufft -a` + rss: NRMSE after a least-squares scale (the tools' NUFFT scalings differ)
#       <= 1e-4; and with --traj FILE (the swapped BART trajectory) the same image;
#    b. the gridding image: Larmor's ramp density compensation against BART's nufft -a with the ramp |k|
#       and Larmor's weight of the k = 0 sample (a quarter of the |k| = 1 weight): NRMSE (scaled) <= 1e-3.
set -euo pipefail
cli=$1 dir=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../unit/data/twix
command -v bart >/dev/null || { echo "twix_vs_bart: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
for f in gre.dat meas_MID00118_FID33075_sol24.dat; do
  [[ -f $data/$f ]] || { echo "twix_vs_bart: $data/$f is absent (it is part of the repository)" >&2; exit 1; }
done
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
q() { "$@" >/dev/null 2>&1; }
# NRMSE of B against reference A (both .cfl, same size): plain (scale 1) or after the least-squares scale.
nrmse() {
  python3 - "$1" "$2" "${3:-plain}" <<'EOF'
import struct, sys
def load(p):
    b = open(p + ".cfl", "rb").read()
    v = struct.unpack("<%df" % (len(b) // 4), b)
    return [complex(v[i], v[i + 1]) for i in range(0, len(v), 2)]
a, b = load(sys.argv[1]), load(sys.argv[2])
assert len(a) == len(b), "sizes differ"
s = 1.0
if sys.argv[3] == "scaled":
    s = sum((x.conjugate() * y for x, y in zip(a, b))) / sum(abs(y) ** 2 for y in b)
num = sum(abs(x - s * y) ** 2 for x, y in zip(a, b)); den = sum(abs(x) ** 2 for x in a)
print("%.3e" % ((num / den) ** 0.5))
EOF
}
check() {  # name value bound
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$2" "$3" ||
    { echo "twix_vs_bart: $1 NRMSE $2 > $3" >&2; exit 1; }
}

# 1. GRE, Cartesian FFT
q bart twixread -A "$data/gre.dat" gre_k
q bart fft -u -i 3 gre_k gre_coils
q bart rss 8 gre_coils gre_rss
q bart resize -c 0 160 gre_rss gre_bart
"$cli" recon "$data/gre.dat" --method fft --device cpu --output gre_larmor.cfl >/dev/null
gre=$(nrmse gre_bart gre_larmor)
echo "gre.dat (VE, FFT + rss, 160x160): NRMSE vs bart twixread + fft + rss = $gre"
check gre "$gre" 1e-4

# 2. Pulseq radial, adjoint NUFFT
v=$data/meas_MID00118_FID33075_sol24.dat
q bart twixread -x 256 -y 256 -c 4 "$v" rad_k
q bart reshape 7 1 256 256 rad_k rad_kr
q bart traj -r -c -x 256 -y 256 tb
q bart slice 0 0 tb tx; q bart slice 0 1 tb ty; q bart slice 0 2 tb tz
q bart join 0 ty tx tz traj            # (sin, cos) -> (cos, sin): the sequence's readout axis first
q bart nufft -a -d 256:256:1 traj rad_kr rad_adj_coils
q bart rss 8 rad_adj_coils rad_adj_bart
"$cli" recon "$v" --traj radial:180 --method gridding --dcf none --width 8 --device cpu --output rad_adj.cfl >/dev/null
"$cli" recon "$v" --traj traj.cfl --method gridding --dcf none --width 8 --device cpu --output rad_adj_file.cfl >/dev/null
adj=$(nrmse rad_adj_bart rad_adj scaled) same=$(nrmse rad_adj rad_adj_file)
echo "sol24.dat (VB radial, adjoint NUFFT, no DCF): NRMSE vs bart nufft -a = $adj (scaled); --traj radial:180 vs BART's trajectory file: $same"
check "radial adjoint" "$adj" 1e-4
check "radial:180 vs trajectory file" "$same" 1e-5

q bart rss 1 traj ramp
q bart ones 3 1 1 256 one; q bart scale 0.25 one quarter; q bart resize -c 1 256 quarter dc
q bart saxpy 1 ramp dc ramp_dc       # |k|, and 1/4 at k = 0 (sample 128)
q bart fmac rad_kr ramp_dc rad_kw
q bart nufft -a -d 256:256:1 traj rad_kw rad_grid_coils
q bart rss 8 rad_grid_coils rad_grid_bart
"$cli" recon "$v" --traj radial:180 --method gridding --dcf ramp --width 8 --device cpu --output rad_grid.cfl >/dev/null
grid=$(nrmse rad_grid_bart rad_grid scaled)
echo "sol24.dat (VB radial, ramp gridding): NRMSE vs bart nufft -a with the same weights = $grid (scaled)"
check "radial gridding" "$grid" 1e-3
