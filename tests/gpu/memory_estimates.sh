#!/usr/bin/env bash
# The planner's device-memory estimate (recon/resources.hpp) against the backend's measured peak
# (Backend::memoryStats, in every --json) for a few workloads on the GPU machine.
#   bash tests/gpu/memory_estimates.sh   (after the device preset is built)
set -u
B=build/device/bin/larmor-cli; D=/tmp/mp; mkdir -p $D
$B simulate --matrix 128x128x64 --coils 8 --traj cartesian --output $D/c3.cfl >/dev/null
$B simulate --matrix 256 --coils 8 --traj radial --spokes 400 --slices 4 --traj-output $D/t.cfl --output $D/r.cfl >/dev/null
$B simulate --matrix 256 --coils 16 --traj cartesian --accel 2 --slices 8 --output $D/g.cfl >/dev/null
$B simulate --matrix 128x128x128 --coils 8 --traj cartesian --accel 2 --output $D/s3.cfl >/dev/null
run() { n=$1; shift; $B recon "$@" --device cuda --output $D/$n.out.cfl --json $D/$n.json >/dev/null 2>$D/$n.err || { echo "$n failed: $(tail -1 $D/$n.err)"; return; }
  python3 - $D/$n.json $n <<'PY'
import json,sys
m=json.load(open(sys.argv[1]))["memory"]
e=m.get("estimated_device_bytes",0); p=m.get("backend_peak_reserved_bytes",0); l=m.get("backend_peak_live_bytes",0)
print(f"{sys.argv[2]:10s} estimate {e/1e6:9.1f} MB  measured peak live {l/1e6:9.1f} MB, reserved {p/1e6:9.1f} MB  estimate/live {e/max(l,1):.2f}  [{m.get('rule','')}]")
PY
}
run fft3d $D/c3.cfl --method fft
run gridding $D/r.cfl --traj $D/t.cfl --method gridding
run cg $D/r.cfl --traj $D/t.cfl --method cg --iters 10
run cs $D/r.cfl --traj $D/t.cfl --method cs --iters 20
run grappa $D/g.cfl --method grappa
run sense3d $D/s3.cfl --method cg --iters 10
