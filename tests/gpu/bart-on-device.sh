#!/usr/bin/env bash
# The BART comparisons (tests/e2e/bart_gridding.sh, tests/e2e/bart_pics.sh) on the lent GPU machine, where
# they run Larmor on the CPU and on CUDA under the same claims. Pack BART here first (tests/gpu/bart-pack.sh),
# then:
#
#   run carry=[build/bart-pack]: tests/gpu/bart-on-device.sh OUTDIR
#
# Builds larmor-cli and the CUDA plugin with the device preset (or takes LARMOR_CLI: tests/gpu/run-on-device.sh's
# bart step passes the one it built), puts the packed bart on PATH and writes each script's log and a summary
# (every claim's line, rc and seconds) into OUTDIR. Exit status: non-zero when a comparison fails.
set -u -o pipefail
OUT=${1:?usage: tests/gpu/bart-on-device.sh OUTDIR}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
[[ -x build/bart-pack/bin/bart ]] || { echo "bart-on-device: build/bart-pack is missing (tests/gpu/bart-pack.sh, then carry it)" >&2; exit 2; }
export PATH=$ROOT/build/bart-pack/bin:$PATH LD_LIBRARY_PATH=$ROOT/build/bart-pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bart version > /dev/null || { echo "bart-on-device: the packed bart does not start here" >&2; exit 2; }
CLI=${LARMOR_CLI:-}
if [[ -z $CLI ]]; then  # run-on-device.sh passes the CLI it built
  (cmake --preset device > /dev/null && cmake --build build/device -j"$(nproc)" --target larmor-cli larmor_cuda) > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; exit 2; }
  CLI=$ROOT/build/device/bin/larmor-cli
fi
"$CLI" devices | tee "$OUT/summary.txt"
echo "bart $(bart version)" | tee -a "$OUT/summary.txt"
status=0
for t in bart_gridding bart_pics; do
  start=$(date +%s)
  bash "tests/e2e/$t.sh" "$CLI" "/tmp/larmor-$t" > "$OUT/$t.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || status=1
  { echo "$t: rc $rc, $(( $(date +%s) - start )) s"; grep -E "NRMSE|ok:|Larmor on|BART pics|^[A-Z]\. |bart_" "$OUT/$t.log"; } | tee -a "$OUT/summary.txt"
done
exit $status
