#!/usr/bin/env bash
# The CPU target, whole processes against BART 0.8 (Debian's bart) on the same files: wall time, CPU time
# (user + sys) and peak resident memory of every command, and the ratios Larmor / BART. Not part of ctest as a
# benchmark; tests/e2e/bart_memory.sh runs it once with PEAK_BOUND=2 and fails on a peak ratio above that.
#
# Usage: tests/bench/bart_jobs.sh [LARMOR_CLI] [WORKDIR]
#   env: REPS (best of, default 3), ITERS (CG iterations, default 30), OMP_NUM_THREADS (both tools; default all
#        cores), JOBS (default "gridding cg-radial cg-cart"), BART_RADIAL_MAPS (default 1: BART's own radial maps
#        chain, `nufft -i` included, ~10 s of CPU; 0 leaves that row out), PEAK_BOUND (unset: report only; a
#        number: exit 1 when a Larmor peak is above PEAK_BOUND x BART's peak for the same job), DEVICE (Larmor's
#        --device, default auto: what a user gets, the GPU plugin's loading included; on a GPU machine that is
#        the GPU, so give cpu there), TOOLS (default "bart larmor"; "larmor" measures Larmor only and keeps the
#        BART rows of the last run in WORKDIR: before/after comparisons of two larmor-cli builds).
#
# Jobs (both tools read the same .cfl files and write their image as .cfl):
#   gridding   2D golden-angle radial, 512 samples x 512 spokes -> 256^2, 8 coils, complex Gaussian samples:
#              `bart nufft -a -d 256:256:1` | `larmor-cli recon --method gridding --dcf none` (W 4, sigma 2: more
#              accurate than BART's default, tests/bench/bart_compare.sh).
#   cg-radial  golden-angle radial, 512 samples x 101 spokes, 256^2, 8 coils, `bart phantom -k -s 8 -t`.
#   cg-cart    Cartesian ky-kz plane [1, 256, 256, 8] of `bart phantom -k -s 8 -x 256`, R 2x2 with a 20x20 fully
#              sampled centre (`bart upat`).
#   Each CG job two ways. "given maps": the solver alone, both reading the same ESPIRiT maps (`larmor-cli maps`):
#   `bart pics -S -l2 -r 0.001 -i ITERS [-t traj]` | `larmor-cli recon --method cg --iters ITERS --coil-maps M`.
#   "own maps": each tool's whole job. BART: its recipe of tests/e2e/bart_pics.sh (radial: `nufft -i`, `fft -u`,
#   then `ecalib -m1`; Cartesian: `ecalib -m1`), then pics: times added, the peak is its largest process.
#   Larmor: one `recon --method cg --iters ITERS` process, ESPIRiT maps inside.
# Measurement: GNU time's %e, %U + %S and %M (ru_maxrss: the process's peak resident set, the larger of before
# and after larmor-cli's one re-exec for OMP_WAIT_POLICY); wall and CPU are the best of REPS runs, the peak the
# largest. Larmor's on-disk caches (Q, density compensation) start empty in every run, as BART has none.
set -euo pipefail

CLI=${1:-}
if [[ -z "$CLI" ]]; then
  for c in build/default/bin/larmor-cli build/*/bin/larmor-cli; do [[ -x "$c" ]] && CLI=$c && break; done
fi
[[ -x "$CLI" ]] || { echo "bart_jobs: larmor-cli not found; pass its path" >&2; exit 2; }
CLI=$(readlink -f "$CLI")
command -v bart >/dev/null || { echo "bart_jobs: bart not found (apt install bart)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "bart_jobs: /usr/bin/time not found (apt install time)" >&2; exit 2; }
WORK=${2:-$(mktemp -d /tmp/larmor-bart-jobs.XXXXXX)}
mkdir -p "$WORK"
cd "$WORK"
REPS=${REPS:-3}
ITERS=${ITERS:-30}
JOBS=${JOBS:-gridding cg-radial cg-cart}
BART_RADIAL_MAPS=${BART_RADIAL_MAPS:-1}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
q() { "$@" >/dev/null 2>&1; }

# --- data (kept in WORKDIR between runs) ---
if [[ ! -f g_ksp.cfl ]]; then
  q bart traj -x 512 -y 512 -r -G g_traj2x
  q bart scale 0.5 g_traj2x g_traj  # |k| <= 128 = N/2 for 256^2, 2x oversampled readout
  q bart zeros 4 1 512 512 8 g_zero
  q bart noise -s 11 -n 1 g_zero g_ksp
fi
if [[ ! -f r_ksp.cfl ]]; then
  q bart traj -x 512 -y 101 -r -G r_traj2x
  q bart scale 0.5 r_traj2x r_traj
  q bart phantom -k -s 8 -t r_traj r_ksp
fi
if [[ ! -f c_ksp.cfl ]]; then
  q bart phantom -k -s 8 -x 256 c_full
  q bart transpose 0 2 c_full c_plane
  q bart upat -Y 256 -Z 256 -y 2 -z 2 -c 20 c_mask
  q bart fmac c_plane c_mask c_ksp
fi
[[ -f r_maps.cfl ]] || q "$CLI" maps r_ksp.cfl --traj r_traj.cfl --matrix 256 --device cpu --output r_maps.cfl
[[ -f c_maps.cfl ]] || q "$CLI" maps c_ksp.cfl --device cpu --output c_maps.cfl

# --- measurement ---
# measure NAME CMD...: runs CMD REPS times (each Larmor run with an empty cache folder) and appends
# "NAME wall cpu peakKiB" (best wall, best cpu, largest peak) to results.txt.
measure() {
  local name=$1; shift
  : >"runs_$name.txt"
  for ((i = 0; i < REPS; ++i)); do
    rm -rf cache && mkdir cache
    XDG_CACHE_HOME=$PWD/cache /usr/bin/time -f "%e %U %S %M" -o time.txt "$@" >"log_$name.txt" 2>&1 ||
      { cat "log_$name.txt" >&2; echo "bart_jobs: $name failed: $*" >&2; exit 1; }
    tail -n 1 time.txt >>"runs_$name.txt"
  done
  python3 - "$name" "runs_$name.txt" >>results.txt <<'EOF'
import sys
r = [l.split() for l in open(sys.argv[2]) if l.strip()]
print(sys.argv[1], min(float(a[0]) for a in r), min(float(a[1]) + float(a[2]) for a in r), max(int(a[3]) for a in r))
EOF
}
# chain NAME PART...: a job of several processes measured apart: times added, the largest peak.
chain() {
  local name=$1; shift
  python3 - "$name" "$@" >>results.txt <<'EOF'
import sys
rows = {l.split()[0]: l.split()[1:] for l in open("results.txt")}
parts = [rows[p] for p in sys.argv[2:]]
print(sys.argv[1], sum(float(p[0]) for p in parts), sum(float(p[1]) for p in parts), max(int(p[2]) for p in parts))
EOF
}
TOOLS=${TOOLS:-bart larmor}
if [[ " $TOOLS " == *" bart "* || ! -f results.txt ]]; then
  : >results.txt
else
  grep -v '\.larmor ' results.txt >results.keep || true
  mv results.keep results.txt
fi
# bart_measure / bart_chain: BART's rows, left as they are when TOOLS has no bart.
bart_measure() { [[ " $TOOLS " != *" bart "* ]] || measure "$@"; }
bart_chain() { [[ " $TOOLS " != *" bart "* ]] || chain "$@"; }
DEVICE=${DEVICE:-auto}
cg() { echo --method cg --iters "$ITERS" --device "$DEVICE"; }
for job in $JOBS; do
  case $job in
    gridding)
      bart_measure gridding.bart bart nufft -a -d 256:256:1 g_traj g_ksp g_bart
      measure gridding.larmor "$CLI" recon g_ksp.cfl --traj g_traj.cfl --method gridding --dcf none --device "$DEVICE" \
        --output g_larmor.cfl
      ;;
    cg-radial)
      bart_measure cg-radial.given.bart bart pics -S -l2 -r 0.001 -i "$ITERS" -t r_traj r_ksp r_maps r_bart
      measure cg-radial.given.larmor "$CLI" recon r_ksp.cfl --traj r_traj.cfl --matrix 256 $(cg) --coil-maps r_maps.cfl \
        --output r_larmor_given.cfl
      if [[ $BART_RADIAL_MAPS == 1 ]]; then
        bart_measure cg-radial.bart-nufft bart nufft -i -d 256:256:1 r_traj r_ksp r_grid
        bart_measure cg-radial.bart-fft bart fft -u 3 r_grid r_kgrid
        bart_measure cg-radial.bart-ecalib bart ecalib -m1 r_kgrid r_bmaps
        bart_measure cg-radial.bart-pics bart pics -S -l2 -r 0.001 -i "$ITERS" -t r_traj r_ksp r_bmaps r_bart_own
        bart_chain cg-radial.own.bart cg-radial.bart-nufft cg-radial.bart-fft cg-radial.bart-ecalib cg-radial.bart-pics
      fi
      measure cg-radial.own.larmor "$CLI" recon r_ksp.cfl --traj r_traj.cfl --matrix 256 $(cg) --output r_larmor_own.cfl
      ;;
    cg-cart)
      bart_measure cg-cart.given.bart bart pics -S -l2 -r 0.001 -i "$ITERS" c_ksp c_maps c_bart
      measure cg-cart.given.larmor "$CLI" recon c_ksp.cfl $(cg) --coil-maps c_maps.cfl --output c_larmor_given.cfl
      bart_measure cg-cart.bart-ecalib bart ecalib -m1 c_ksp c_bmaps
      bart_measure cg-cart.bart-pics bart pics -S -l2 -r 0.001 -i "$ITERS" c_ksp c_bmaps c_bart_own
      bart_chain cg-cart.own.bart cg-cart.bart-ecalib cg-cart.bart-pics
      measure cg-cart.own.larmor "$CLI" recon c_ksp.cfl $(cg) --output c_larmor_own.cfl
      ;;
    *) echo "bart_jobs: unknown job $job (gridding, cg-radial, cg-cart)" >&2; exit 2 ;;
  esac
done

echo "bart_jobs: $(bart version) vs $CLI, $OMP_NUM_THREADS threads, best of $REPS, $ITERS CG iterations, in $WORK"
python3 - "${PEAK_BOUND:-}" <<'EOF'
import sys
bound = float(sys.argv[1]) if sys.argv[1] else None
rows = {l.split()[0]: [float(x) for x in l.split()[1:]] for l in open("results.txt")}
print(f"\n{'job':<24} {'tool':<7} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9}   {'wall':>6} {'cpu':>6} {'peak':>6}  (Larmor / BART)")
bad = []
jobs = []  # in the order first measured, BART's row before Larmor's
for name in rows:
    job, _, tool = name.rpartition(".")
    if tool in ("bart", "larmor") and job not in jobs:  # other tools: parts of BART's chains
        jobs.append(job)
for job, tool in [(j, t) for j in jobs for t in ("bart", "larmor") if f"{j}.{t}" in rows]:
    wall, cpu, peak = rows[f"{job}.{tool}"]
    ratio = ""
    # Without BART's own radial maps chain (BART_RADIAL_MAPS=0), Larmor's own-maps job is compared with pics,
    # BART's largest process of that chain (docs/benchmarks.md).
    peer = job + ".bart" if job + ".bart" in rows else job.replace(".own", ".given") + ".bart"
    if tool == "larmor" and peer in rows:
        bw, bc, bp = rows[peer]
        ratio = f"{wall / bw:6.2f} {cpu / bc:6.2f} {peak / bp:6.2f}" + ("" if peer == job + ".bart" else "  (vs pics alone)")
        if bound is not None and peak > bound * bp:
            bad.append(f"{job}: Larmor's peak {peak / 1024:.1f} MiB > {bound} x BART's {bp / 1024:.1f} MiB")
    print(f"{job:<24} {tool:<7} {wall:8.2f} {cpu:8.2f} {peak / 1024:9.1f}   {ratio}")
for b in bad:
    print("bart_jobs: " + b, file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
