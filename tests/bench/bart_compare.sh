#!/usr/bin/env bash
# Larmor's CPU adjoint NUFFT against BART's `bart nufft -a` (Debian package bart) on the issue's workload:
# 2D golden-angle radial, 512 readout samples x 512 spokes -> 256 x 256, 8 coils. Not part of ctest.
# (Whole-process wall, CPU time and peak memory of both tools on this job and on CG-SENSE jobs against
# `bart pics`: tests/bench/bart_jobs.sh.)
#
# Usage: tests/bench/bart_compare.sh [LARMOR_CLI] [WORKDIR]
#   env: OMP_NUM_THREADS (both tools; default: all cores), REPS (best of, default 3),
#        DATA=noise|phantom (default noise: complex Gaussian samples; phantom: BART's 8-coil analytic
#        phantom at the trajectory, slow to make, cached in WORKDIR),
#        REFERENCE=nufft|dft (default nufft: Larmor's NUFFT at W = 8, sigma = 2, whose error against the
#        exact DFT is ~1e-7 (docs/nufft.md); dft: Larmor's exact DFT, minutes on a few cores).
#
# Accuracy: every adjoint's sum-of-squares image is compared with the reference's by `bart nrmse -s`
# (least-squares scaled, so the tools' different normalisations do not count). "Equal accuracy" is the
# fastest Larmor setting whose NRMSE is not above BART's.
# Timing: the process wall time and CPU time (user + sys) of each command (both tools read the same .cfl
# files, make their plan and write an image), best of REPS, and Larmor's own "adjoint nufft" stage from
# --json. On a shared machine the CPU time is the steadier figure; with OMP_NUM_THREADS=1 it is the
# single-core cost.
set -euo pipefail

CLI=${1:-}
if [[ -z "$CLI" ]]; then
  for c in build/Default/bin/larmor-cli build/*/bin/larmor-cli; do [[ -x "$c" ]] && CLI=$c && break; done
fi
[[ -x "$CLI" ]] || { echo "bart_compare: larmor-cli not found; pass its path" >&2; exit 2; }
CLI=$(readlink -f "$CLI")
command -v bart >/dev/null || { echo "bart_compare: bart not found (apt install bart)" >&2; exit 2; }
WORK=${2:-$(mktemp -d /tmp/larmor-bart.XXXXXX)}
mkdir -p "$WORK"
cd "$WORK"
REPS=${REPS:-3}
DATA=${DATA:-noise}
REFERENCE=${REFERENCE:-nufft}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}

echo "bart_compare: $(bart version 2>/dev/null | head -1) vs $CLI, $OMP_NUM_THREADS threads, best of $REPS, data $DATA, in $WORK"

# Trajectory: BART's golden-ratio radial, 512 samples per spoke; scaled by 1/2 so |k| <= 128 = N/2 for
# a 256 matrix (cycles/FOV: the 2x oversampled readout).
if [[ ! -f traj.cfl ]]; then
  bart traj -x 512 -y 512 -r -G traj512 >/dev/null
  bart scale 0.5 traj512 traj >/dev/null
fi
if [[ ! -f ksp_$DATA.cfl ]]; then
  if [[ $DATA == phantom ]]; then
    bart phantom -k -s 8 -t traj ksp_$DATA >/dev/null
  else
    bart zeros 4 1 512 512 8 zero >/dev/null
    bart noise -s 11 -n 1 zero ksp_$DATA >/dev/null
  fi
fi
KSP=ksp_$DATA

best_of() {  # best_of N cmd...: prints "wall cpu" seconds, each the best of N runs (cpu = user + sys)
  local n=$1; shift
  for ((i = 0; i < n; ++i)); do
    /usr/bin/time -f "%e %U %S" -o time.txt "$@" >/dev/null
    cat time.txt
  done | python3 -c "import sys; r=[l.split() for l in sys.stdin if l.strip()]; print(min(float(a[0]) for a in r), min(float(a[1])+float(a[2]) for a in r))"
}

stage_ms() {  # stage_ms JSON STAGE
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(min([s['ms'] for s in j['timings']['stages'] if s['stage']==sys.argv[2]] or [float('nan')]))" "$1" "$2"
}

# Reference.
if [[ ! -f ref_${DATA}_$REFERENCE.cfl ]]; then
  if [[ $REFERENCE == dft ]]; then
    "$CLI" recon $KSP.cfl --traj traj.cfl --method dft --dcf none --output ref_${DATA}_$REFERENCE.cfl >/dev/null
  else
    "$CLI" recon $KSP.cfl --traj traj.cfl --method gridding --dcf none --width 8 --grid-oversampling 2 \
      --output ref_${DATA}_$REFERENCE.cfl >/dev/null
  fi
fi
REF=ref_${DATA}_$REFERENCE

# BART.
read -r bart_s bart_cpu < <(best_of "$REPS" bart nufft -a -d 256:256:1 traj $KSP bart_img)
bart rss 8 bart_img bart_sos >/dev/null
bart_err=$(bart nrmse -s $REF bart_sos | tail -1)

printf "\n%-28s %10s %10s %10s %12s\n" "adjoint NUFFT (8 coils)" "NRMSE" "wall s" "cpu s" "adjoint ms"
printf "%-28s %10.2e %10.3f %10.3f %12s\n" "bart nufft -a" "$bart_err" "$bart_s" "$bart_cpu" "-"

best_cfg="" best_t=""
for sigma in 1.25 2; do
  for w in 2 3 4 5 6; do
    # The stage time of the run with the best wall time is not tracked separately: take the best of
    # REPS stage times too.
    ms=""
    for ((r = 0; r < REPS; ++r)); do
      /usr/bin/time -f "%e %U %S" -o time.txt "$CLI" recon $KSP.cfl --traj traj.cfl --method gridding --dcf none \
        --width $w --grid-oversampling $sigma --output ours.cfl --json ours.json >/dev/null
      cat time.txt >>times.txt
      m=$(stage_ms ours.json "adjoint nufft")
      ms=$(python3 -c "import sys; print(sys.argv[1] if sys.argv[2]=='' or float(sys.argv[1])<float(sys.argv[2]) else sys.argv[2])" "$m" "$ms")
    done
    read -r s cpu < <(python3 -c "r=[l.split() for l in open('times.txt') if l.strip()]; print(min(float(a[0]) for a in r), min(float(a[1])+float(a[2]) for a in r))")
    rm -f times.txt
    err=$(bart nrmse -s $REF ours | tail -1)
    printf "%-28s %10.2e %10.3f %10.3f %12.1f\n" "larmor W=$w sigma=$sigma" "$err" "$s" "$cpu" "$ms"
    if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$err" "$bart_err"; then
      if [[ -z "$best_t" ]] || python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$s" "$best_t"; then
        best_t=$s best_cfg="W=$w sigma=$sigma (NRMSE $err, adjoint stage ${ms} ms, process cpu ${cpu} s)"
      fi
    fi
  done
done
echo
if [[ -n "$best_cfg" ]]; then
  echo "equal accuracy: larmor $best_cfg: ${best_t} s vs bart ${bart_s} s wall (bart cpu ${bart_cpu} s)"
else
  echo "equal accuracy: no Larmor setting reached BART's NRMSE $bart_err"
fi
