#!/usr/bin/env bash
# BART (Debian's bart, installed by installer/install-deps.sh) reads our .cfl output as it reads its own, and our
# FFT reconstruction of BART's data is BART's: BART's analytic 8-coil phantom k-space at 128^2 (`bart phantom -k
# -s 8`), reconstructed by Larmor (`larmor-cli recon kc.cfl --method fft`, root sum of squares) and by BART
# (`bart fft -i -u 3` = the centred unitary inverse DFT of docs/conventions.md, `bart rss 8`). `bart nrmse`
# WITHOUT -s (no fitted scale: a wrong scale, a transposition or a flip all count) must be <= 1e-5 (float
# rounding; measured 0.000000 as BART prints it). A second case: BART's adjoint of a 2x undersampled copy, same
# rule (Larmor zero-fills what BART zero-fills). Fails, not skips, without bart.
set -euo pipefail
cli=$1 dir=$2
command -v bart >/dev/null || { echo "FAIL: bart is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
q() { "$@" >/dev/null; }
q bart phantom -k -s 8 -x 128 kc
q bart fft -i -u 3 kc coils
q bart rss 8 coils bart_sos
q "$cli" recon kc.cfl --method fft --device cpu --output larmor.cfl
# Every other line zeroed (pattern from BART's own tools): zero-filled reconstructions must agree too.
q bart upat -Y 128 -Z 1 -y 2 -z 1 -c 1 pat
q bart fmac kc pat ku
q bart fft -i -u 3 ku ucoils
q bart rss 8 ucoils bart_zf
q "$cli" recon ku.cfl --method fft --device cpu --output larmor_zf.cfl
fails=0
for pair in "bart_sos larmor" "bart_zf larmor_zf"; do
  set -- $pair
  e=$(bart nrmse "$1" "$2" | tail -n 1)
  echo "bart nrmse (no scaling) $1 vs $2: $e"
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= 1e-5 else 1)" "$e" ||
    { echo "FAIL: bart reads our $2.cfl as different from its own $1 (nrmse $e > 1e-5)" >&2; fails=1; }
done
# The two cases differ (the check is not vacuous).
e=$(bart nrmse bart_sos larmor_zf | tail -n 1)
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.05 else 1)" "$e" ||
  { echo "FAIL: the undersampled image is not different from the full one (nrmse $e)" >&2; fails=1; }
exit $fails
