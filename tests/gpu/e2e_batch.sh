#!/usr/bin/env bash
# `larmor-cli batch` on the GPU: 6 simulated 128^2 Cartesian slices (8 coils, R = 3, 24 ACS lines; BART .cfl
# k-space, so it runs on builds without ISMRMRD: the GPU machine's) reconstructed with GRAPPA by
#  - --devices cuda:0: every item on cuda:0 (journal), each output = `recon --device cuda:0` of the same file
#    (relative L2 < 1e-6: same device, same code) and = the CPU's within 1e-4;
#  - --devices all: every GPU takes items (with 2 GPUs or more each takes at least one), same outputs.
# Then 4 golden-angle radial 64^2 .cfl slices with CG-SENSE (trajectory from the settings file) on all GPUs.
# Skips (exit 77, SKIP: line) without a CUDA device. Timings: tests/gpu/batch_multi_gpu.sh (a benchmark, not a test).
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir/in"
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! "$cli" devices | grep -q "^cuda"; then
  echo "SKIP: no CUDA device ($("$cli" devices | grep '^no GPU' || true))"
  exit 77
fi
gpus=$("$cli" devices | grep -c "^cuda")
for i in 1 2 3 4 5 6; do
  "$cli" simulate --matrix 128 --coils 8 --accel 3 --acs 24 --noise 0.01 --seed $i --output "$dir/in/k$i.cfl" >/dev/null
done
"$cli" recon "$dir/in/k1.cfl" --method grappa --device cuda:0 --output "$dir/check.cfl" --save-settings "$dir/S.json" >/dev/null
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/one" --devices cuda:0 > "$dir/one.log" 2>&1 \
  || { cat "$dir/one.log"; fail "batch on cuda:0 failed"; }
"$cli" batch "$dir/in" --settings "$dir/S.json" --output-dir "$dir/all" --devices all > "$dir/all.log" 2>&1 \
  || { cat "$dir/all.log"; fail "batch on all GPUs failed"; }
for i in 1 2 3 4 5 6; do
  "$cli" recon "$dir/in/k$i.cfl" --method grappa --device cuda:0 --output "$dir/gpu$i.cfl" >/dev/null
  "$cli" recon "$dir/in/k$i.cfl" --method grappa --device cpu --output "$dir/cpu$i.cfl" >/dev/null
  for run in one all; do
    "$cli" compare --ref "$dir/gpu$i.cfl" --test "$dir/$run/k$i.cfl" --json "$dir/c-$run$i.json" >/dev/null
    "$cli" compare --ref "$dir/cpu$i.cfl" --test "$dir/$run/k$i.cfl" --json "$dir/cc-$run$i.json" >/dev/null
  done
done
python3 - "$dir" "$gpus" <<'PY'
import json, sys
d, gpus = sys.argv[1], int(sys.argv[2])
for run in ("one", "all"):
    for i in range(1, 7):
        g = json.load(open(f"{d}/c-{run}{i}.json")); c = json.load(open(f"{d}/cc-{run}{i}.json"))
        assert g["nrmse"] < 1e-6, (run, i, "vs recon on cuda:0", g)
        assert c["nrmse"] < 1e-4, (run, i, "vs the CPU", c)
devices = {}
for run in ("one", "all"):
    devices[run] = {}
    for line in open(f"{d}/{run}/journal.jsonl"):
        r = json.loads(line)
        if r.get("event") == "done":
            devices[run][r["device"]] = devices[run].get(r["device"], 0) + 1
assert devices["one"] == {"cuda:0": 6}, devices
assert sum(devices["all"].values()) == 6, devices
if gpus >= 2:
    assert len(devices["all"]) >= 2, ("--devices all used one GPU of", gpus, devices)
print("batch on the GPU: outputs = recon (cuda:0) and CPU; items per device:", devices)
PY
# Radial CG-SENSE from .cfl k-space with the trajectory named in the settings file, on every GPU: each output =
# `recon --device cuda:0` of the same file within 1e-3 (the GPU's spreading adds in a varying order, which CG
# carries; a wrong setting or trajectory differs by far more).
mkdir -p "$dir/rad"
for i in 1 2 3 4; do
  "$cli" simulate --matrix 64 --coils 8 --traj golden --spokes 64 --noise 0.01 --seed $i --output "$dir/rad/r$i.cfl" \
    --traj-output "$dir/traj.cfl" >/dev/null
done
"$cli" recon "$dir/rad/r1.cfl" --traj "$dir/traj.cfl" --method cg --iters 20 --device cuda:0 --output "$dir/rcheck.cfl" \
  --save-settings "$dir/S-rad.json" >/dev/null
"$cli" batch "$dir/rad" --settings "$dir/S-rad.json" --output-dir "$dir/rad-all" --devices all > "$dir/rad.log" 2>&1 \
  || { cat "$dir/rad.log"; fail "radial batch on all GPUs failed"; }
for i in 1 2 3 4; do
  "$cli" recon "$dir/rad/r$i.cfl" --traj "$dir/traj.cfl" --method cg --iters 20 --device cuda:0 --output "$dir/rref$i.cfl" >/dev/null
  "$cli" compare --ref "$dir/rref$i.cfl" --test "$dir/rad-all/r$i.cfl" --json "$dir/rc$i.json" >/dev/null
done
python3 - "$dir" <<'PY'
import json, sys
for i in range(1, 5):
    c = json.load(open(f"{sys.argv[1]}/rc{i}.json"))
    assert c["nrmse"] < 1e-3, (i, c)
    print(f"radial CG-SENSE r{i}: batch vs recon on cuda:0 {c['nrmse']:.2e}")
PY
echo "e2e_batch: OK"
