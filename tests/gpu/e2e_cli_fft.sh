#!/usr/bin/env bash
# larmor-cli end to end on the GPU: the same simulated k-space reconstructed with --device cuda and
# --device cpu must give the same image (relative L2 difference < 1e-5). BART .cfl k-space, so it runs
# on builds without ISMRMRD too (the GPU machine's). Skips (exit 77, SKIP: line) without a CUDA device.
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"
if "$cli" devices | grep -q "^no GPU"; then
  echo "SKIP: no CUDA device ($("$cli" devices | grep '^no GPU'))"
  exit 77
fi
for m in 256 64x64x64; do
  "$cli" simulate --matrix $m --coils 8 --slices 1 --oversampling 1 --output "$dir/k$m.cfl" >/dev/null
  "$cli" recon "$dir/k$m.cfl" --method fft --device cuda --output "$dir/gpu$m.cfl" --json "$dir/gpu$m.json" >"$dir/gpu$m.log"
  grep -q "on cuda" "$dir/gpu$m.log" || { cat "$dir/gpu$m.log"; echo "FAIL: did not run on cuda"; exit 1; }
  # The warm-up beside the read (cli_commands.cpp) ran and did not fail; --no-warm-up runs none.
  "$cli" recon "$dir/k$m.cfl" --method fft --device cuda --output "$dir/cold$m.cfl" --json "$dir/cold$m.json" \
    --no-warm-up >/dev/null
  python3 - "$dir/gpu$m.json" "$dir/cold$m.json" <<'PY'
import json, sys
w, c = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"warm-up beside the read: {w['warm_up']['ms']:.1f} ms, waited {w['warm_up']['wait_ms']:.1f} ms")
assert "error" not in w["warm_up"], w["warm_up"]
assert "warm_up" not in c, c.get("warm_up")
PY
  "$cli" recon "$dir/k$m.cfl" --method fft --device cpu --output "$dir/cpu$m.cfl" >/dev/null
  "$cli" compare --ref "$dir/cpu$m.cfl" --test "$dir/gpu$m.cfl" --json "$dir/cmp$m.json" >/dev/null
  python3 - "$dir/cmp$m.json" "$m" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print(f"matrix {sys.argv[2]}: GPU vs CPU relative difference {c['nrmse']:.2e} (scale {c['scale']:.8f})")
assert c["nrmse"] < 1e-5 and abs(c["scale"] - 1) < 1e-5, c
PY
done
