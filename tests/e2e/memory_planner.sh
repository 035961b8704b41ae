#!/usr/bin/env bash
# The memory planner's host estimate (recon/resources.cpp, `memory.estimated_host_bytes` of --json) against the
# peak resident set of larmor-cli as the kernel measures it (/usr/bin/time -v, "Maximum resident set size"), on
# the CPU backend, for every method at a small and a larger size. The prediction is the estimate plus the
# process's floor (the peak of `recon` on a 16 x 16 one-coil phantom: libraries, allocator, threads), and it
# must lie within 1.3x of the measured peak either way. Prints the table docs/reliability.md records.
# About 40 s on 2 cores.
set -euo pipefail
cli=$1 dir=$2
[[ -x /usr/bin/time ]] || { echo "FAIL: /usr/bin/time is not installed (installer/install-deps.sh installs it)" >&2; exit 1; }
if ldd "$cli" 2>/dev/null | grep -q 'libasan'; then
  echo "SKIP: $cli is built with AddressSanitizer: peak memory is the sanitizer's, not Larmor's"
  exit 77
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/py/python.sh"
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
export OMP_NUM_THREADS=2
q() { "$@" >/dev/null; }

q "$cli" simulate --matrix 16 --coils 1 --output tiny.h5
q "$cli" simulate --matrix 128 --coils 8 --output fft-s.h5
q "$cli" simulate --matrix 96x96x64 --coils 8 --output fft-l.h5
q "$cli" simulate --matrix 128 --coils 8 --traj radial --output grid-s.h5
q "$cli" simulate --matrix 256 --coils 8 --slices 4 --traj radial --output grid-l.h5
q "$cli" simulate --matrix 128 --coils 8 --accel 2 --output grappa-s.h5
q "$cli" simulate --matrix 256 --coils 8 --slices 4 --accel 2 --output grappa-l.h5
q "$cli" simulate --matrix 128 --coils 8 --accel 2 --output iter-s.h5
q "$cli" simulate --matrix 24x24x24 --coils 4 --accel 2 --output iter-l.h5
q "$cli" simulate --matrix 32x32x32 --coils 4 --output s3d.h5

# peak NAME ARGS...: the peak resident set (bytes) of `recon ARGS`; its --json is NAME.json.
peak() {
  local name=$1; shift
  /usr/bin/time -v "$cli" recon "$@" --device cpu --output "$name.cfl" --json "$name.json" >/dev/null 2>"$name.time"
  awk '/Maximum resident set size/ {print $6 * 1024}' "$name.time"
}
floor=$(peak tiny tiny.h5 --method fft)
rows=()
row() {
  local name=$1; shift
  local rss; rss=$(peak "$name" "$@")
  rows+=("$name $rss $*")
}
row fft-small fft-s.h5 --method fft
row fft-large fft-l.h5 --method fft
row gridding-small grid-s.h5 --method gridding
row gridding-large grid-l.h5 --method gridding
row grappa-small grappa-s.h5 --method grappa
row grappa-large grappa-l.h5 --method grappa
row cg-small iter-s.h5 --method cg --iters 5
row cg-large iter-l.h5 --method cg --iters 5
row cg-matrix s3d.h5 --method cg --iters 3 --matrix 192x192x192
row cs-small iter-s.h5 --method cs --iters 5
row cs-large iter-l.h5 --method cs --iters 5

printf '%s\n' "${rows[@]}" | "$PY" -c '
import json, sys
floor = float(sys.argv[1])
bad = 0
print("| case | recon | estimate | + floor | measured peak | predicted / measured |")
print("|---|---|---|---|---|---|")
for line in sys.stdin:
    name, rss, *args = line.split()
    rss = float(rss)
    est = json.load(open(name + ".json"))["memory"]["estimated_host_bytes"]
    ratio = (est + floor) / rss
    ok = 1 / 1.3 <= ratio <= 1.3
    bad += not ok
    print("| %s | %s | %.0f MB | %.0f MB | %.0f MB | %.2f%s |" % (name, " ".join(args), est / 1e6, (est + floor) / 1e6,
                                                              rss / 1e6, ratio, "" if ok else "  <- outside 1.3x"))
print("floor (recon of a 16x16 one-coil phantom): %.0f MB" % (floor / 1e6))
sys.exit(1 if bad else 0)
' "$floor" || { echo "FAIL: the planner is not within 1.3x of the measured peak (rows marked above)" >&2; exit 1; }
echo "PASS: the planner's host estimate within 1.3x of the measured peak for every case"
