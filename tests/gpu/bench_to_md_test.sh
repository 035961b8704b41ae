#!/usr/bin/env bash
# tests/gpu/bench_to_md.py on a checked-in `larmor-cli bench --json` sample (tests/gpu/data/cli-bench-h100.json: the
# writer's format, bench/src/bench.cpp; medians of an H100 run, the min/max and the failed workload made up for the
# test): the rendered tables equal tests/gpu/data/cli-bench-h100.md (figure, card, date, commit, peer figure and
# ratio beside it, limit and ratio beside it, target, the failed workload), every row has its header's columns,
# the page docs/benchmarks.md uses the same headers (so rendered rows paste into it), and bad input is one line and
# exit 2 (no commit, not a bench JSON, another schema version, truncated JSON).
#   bench_to_md_test.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=/usr/bin/python3
[[ -x $py ]] || py=python3
to_md="$py $here/bench_to_md.py"
sample=$here/data/cli-bench-h100.json
dir=${1:-$(mktemp -d)}
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
fail() { echo "FAIL: $*"; exit 1; }

$to_md "$sample" --commit b437eca >got.md || fail "the sample did not render"
diff -u "$here/data/cli-bench-h100.md" got.md || fail "the rendered tables differ from cli-bench-h100.md"
echo "ok: the sample renders as expected"
$py - got.md <<'PY' || fail "a row's columns differ from its header's"
import sys
header = None
for line in open(sys.argv[1]):
    if not line.startswith("|"):
        header = None
        continue
    n = line.count(" | ") + 1
    if header is None:
        header = n
    elif "FAILED:" not in line and not line.startswith("|---") and n != header:
        sys.exit(f"{n} cells, header {header}: {line}")
PY
echo "ok: every row has its header's columns"
grep -q "0.683 ms (ours 0.587x)" got.md || fail "the peer figure and our ratio to it"
grep -q "| 0.029 (13.8x) |" got.md || fail "the device limit and the ratio"
grep -q "| 10.0: \*\*not met\*\* |" got.md || fail "the host-to-host target"
$to_md "$sample" --commit abc1234 --date 2026-12-31 --table host --no-header >host.md
[[ $(wc -l <host.md) -eq 5 ]] || fail "--table host --no-header: $(wc -l <host.md) lines, expected 5"
grep -q "^| copy | \*\*10.2\*\* (10.1-10.6) | NVIDIA H100 80GB HBM3 | 2026-12-31 | abc1234 |" host.md || fail "--date/--commit"
echo "ok: --table, --no-header, --date, --commit"
page=$here/../../docs/benchmarks.md
for h in "$(sed -n 1p got.md)" "$(grep -m1 '^| workload | host in' got.md)"; do
  grep -qF -- "$h" "$page" || fail "docs/benchmarks.md has no table with the header: $h"
done
echo "ok: docs/benchmarks.md uses the script's headers"
expect2() {  # description, command...
  local what=$1; shift
  set +e; "$@" >out.txt 2>err.txt; local rc=$?; set -e
  [[ $rc -eq 2 && $(wc -l <err.txt) -eq 1 && ! -s out.txt ]] || { cat err.txt; fail "$what: exit $rc"; }
  echo "ok: $what: $(cat err.txt)"
}
expect2 "no commit" $to_md "$sample"
echo '{"benchmarks": []}' >gb.json; expect2 "a Google Benchmark JSON" $to_md gb.json --commit x
sed 's/"schema_version": 1/"schema_version": 2/' "$sample" >v2.json; expect2 "schema version 2" $to_md v2.json --commit x
head -c 300 "$sample" >cut.json; expect2 "truncated JSON" $to_md cut.json --commit x
expect2 "a missing file" $to_md nothere.json --commit x
echo "bench_to_md: all checks passed"
