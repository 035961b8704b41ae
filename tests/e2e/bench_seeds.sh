#!/usr/bin/env bash
# `larmor-cli bench --suite seeds --quick --device cpu` end to end (docs/benchmarks.md, "What runs in larmor-cli bench"): the suite
# runs every workload that applies to the CPU and the outputs hold what the schema promises:
#  - the JSON: schema "larmor-bench", schema_version 1; one result per workload of `bench --list` except the GPU-only
#    ones (listed under not_applicable); no errors; every result has finite positive device and host-to-host times
#    (median, min <= median <= max), limits and ratios, finite non-negative peak host and device memory, a size,
#    and the CPU's scaled-down sizes said so where they differ; the device limits are finite and positive;
#  - the table on stdout names every workload; the chart is a PNG (signature, IHDR size) read back by zlib;
#  - --workload runs a subset only, an unknown workload is one line and exit 1, --chart needs .png;
#  - the whole quick suite finishes within 90 s here (2 cores).
set -euo pipefail
cli=$1 dir=$2
rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
"$cli" bench --list >list.txt
start=$(date +%s)
"$cli" bench --suite seeds --quick --device cpu --json bench.json --chart bench.png >table.txt 2>log.txt ||
  { echo "FAIL: the quick suite exited non-zero"; cat log.txt table.txt; exit 1; }
secs=$(( $(date +%s) - start ))
cat table.txt
echo "quick suite: $secs s"
# The time bound is the release build's (`make test`); an AddressSanitizer Debug build (`make asan-test`) runs
# the same suite several times slower, and there only the outputs are checked.
if ldd "$cli" 2>/dev/null | grep -q 'libasan'; then
  echo "quick suite: the 90 s bound is not asserted for an AddressSanitizer build"
else
  [[ $secs -le 90 ]] || { echo "FAIL: the quick suite took $secs s (limit 90 s)"; exit 1; }
fi
python3 - <<'PY'
import json, math, re, struct, zlib
lines = [l for l in open("list.txt").read().splitlines() if l.strip()]
names = [l.split()[0] for l in lines]
gpu_only = {l.split()[0] for l in lines if "[GPU only]" in l}
r = json.load(open("bench.json"))
assert r["schema"] == "larmor-bench" and r["schema_version"] == 1, (r.get("schema"), r.get("schema_version"))
assert r["suite"] == "seeds" and r["quick"] is True and r["device"]["id"] == "cpu" and r["device"]["gpu"] is False
assert r["errors"] == [], r["errors"]
ran = [w["name"] for w in r["results"]]
want = [n for n in names if n not in gpu_only]
assert ran == want, f"ran {ran}, expected {want}"
assert sorted(x["name"] for x in r["not_applicable"]) == sorted(gpu_only), r["not_applicable"]
for k in ("memory_bandwidth_bytes_per_s", "link_bandwidth_bytes_per_s", "fp32_fma_per_s"):
    v = r["limits"][k]
    assert isinstance(v, (int, float)) and math.isfinite(v) and v > 0, (k, v)
def finite(x, what, positive=True):
    assert isinstance(x, (int, float)) and math.isfinite(x) and (x > 0 if positive else x >= 0), f"{what} = {x!r}"
table = open("table.txt").read()
for w in r["results"]:
    n = w["name"]
    for key in ("device_ms", "host_to_host_ms"):
        s = w[key]
        for f in ("median", "min", "max"):
            finite(s[f], f"{n} {key}.{f}")
        assert s["min"] <= s["median"] <= s["max"], (n, key, s)
    finite(w["limit"]["device_ms"], f"{n} limit.device_ms")
    finite(w["limit"]["host_to_host_ms"], f"{n} limit.host_to_host_ms")
    assert w["limit"]["host_to_host_ms"] >= w["limit"]["device_ms"], n
    assert w["limit"]["basis"], n
    finite(w["ratio"]["device"], f"{n} ratio.device")
    finite(w["ratio"]["host_to_host"], f"{n} ratio.host_to_host")
    finite(w["peak_host_bytes"], f"{n} peak_host_bytes", positive=False)
    finite(w["peak_device_bytes"], f"{n} peak_device_bytes", positive=False)
    assert w["reps"] >= 1 and w["size"], n
    assert w["scaled"] is None or w["scaled"].startswith("quick, CPU: ") and " instead of " in w["scaled"], (n, w["scaled"])
    assert re.search(r"^%s\s" % re.escape(n), table, re.M), f"{n} not in the table"
# Sizes that scale down on the CPU say so.
for n in ("fft3d-256", "fhd-exact", "iterative-128", "cs-tv", "cartesian"):
    assert next(w for w in r["results"] if w["name"] == n)["scaled"], f"{n}: scaled-down size not said"
# The 3D adjoints report their image's error against float64 sums at 64 voxels: the exact DFT's (recurrence) at
# float rounding, the NUFFT's at W 4's accuracy.
err = {w["name"]: w["extra"]["rel_error_64_voxels"] for w in r["results"] if w["name"] in ("fhd-exact", "nufft3d-adjoint")}
assert 0 < err["fhd-exact"] < 2e-5 and 1e-5 < err["nufft3d-adjoint"] < 5e-3, err
assert table.count("error against float64 sums at 64 voxels:") == 2, "the table does not show the two errors"
# The workloads that hold backend buffers for their whole run report them.
assert next(w for w in r["results"] if w["name"] == "copy")["peak_device_bytes"] >= 2 * 32 * 2**20
png = open("bench.png", "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", png[16:24])
assert 600 < w < 3000 and 200 < h < 3000, (w, h)
# The image data inflate to height rows of 1 + 3 width bytes (RGB, filter byte per row).
i, idat = 8, b""
while i < len(png):
    ln, = struct.unpack(">I", png[i:i + 4]); typ = png[i + 4:i + 8]
    if typ == b"IDAT": idat += png[i + 8:i + 8 + ln]
    i += 12 + ln
raw = zlib.decompress(idat)
assert len(raw) == h * (1 + 3 * w), (len(raw), w, h)
assert len(set(raw)) > 4, "a blank chart"
print(f"bench_seeds: {len(ran)} workloads, schema ok, chart {w}x{h}")
PY
# A subset, and the errors.
"$cli" bench --quick --device cpu --workload copy,fft3d-128 --json subset.json >/dev/null 2>&1
python3 -c "import json; r=json.load(open('subset.json')); assert [w['name'] for w in r['results']]==['copy','fft3d-128'], r['results']"
set +e
"$cli" bench --quick --device cpu --workload nope >out.txt 2>err.txt; rc=$?
set -e
[[ $rc -eq 1 && $(wc -l <err.txt) -eq 1 ]] && grep -q "unknown workload" err.txt ||
  { echo "FAIL: unknown workload: rc $rc"; cat err.txt; exit 1; }
set +e
"$cli" bench --quick --device cpu --workload copy --chart chart.jpg >out.txt 2>err.txt; rc=$?
set -e
[[ $rc -eq 1 ]] && grep -q "chart.jpg" err.txt && [[ ! -e chart.jpg ]] ||
  { echo "FAIL: --chart chart.jpg: rc $rc"; cat err.txt; exit 1; }
echo "bench_seeds: all checks passed"
