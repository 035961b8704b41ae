#!/usr/bin/env python3
"""The benchmark gate of tests/gpu/run-on-device.sh: each benchmark of a Google Benchmark JSON (larmor_bench
--benchmark_out) is compared with its last recorded figure in docs/perf.md's `bench-baseline` block; a benchmark
slower than its baseline by more than the allowed fraction (default 15 %) is a regression and the gate exits 1.
Benchmarks with no baseline are listed as new (not a failure); baselines with no benchmark are listed as not run.

  bench_gate.py BENCH_JSON PERF_MD [--max-regression 0.15]

The block (in docs/perf.md) is a fenced code block whose info string is `bench-baseline`; each line is
`NAME TIME UNIT` (UNIT ns, us or ms), '#' starts a comment. The benchmark's real_time is used, in its time_unit.
Exit status: 0 no regression, 1 a regression, 2 unreadable input (an unreadable file is never a pass)."""
import json
import re
import sys

UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def baseline(perf_md):
    text = open(perf_md, encoding="utf-8").read()
    m = re.search(r"^```bench-baseline[^\n]*\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise ValueError(f"{perf_md}: no ```bench-baseline block")
    table = {}
    for n, line in enumerate(m.group(1).splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3 or parts[2] not in UNITS:
            raise ValueError(f"{perf_md}: bench-baseline line {n}: expected 'NAME TIME UNIT', got {line!r}")
        table[parts[0]] = float(parts[1]) * UNITS[parts[2]]
    return table


def measured(bench_json):
    data = json.load(open(bench_json, encoding="utf-8"))
    out = {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred") or b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"]
        if b.get("run_type") == "aggregate":
            name = name[: -len("_median")] if name.endswith("_median") else name
        out[name] = float(b["real_time"]) * UNITS[b.get("time_unit", "ns")]
    return out


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    limit = 0.15
    if "--max-regression" in argv:
        limit = float(argv[argv.index("--max-regression") + 1])
        args = [a for a in args if a != argv[argv.index("--max-regression") + 1]]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        base, got = baseline(args[1]), measured(args[0])
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
        print(f"bench gate: FAILED: {e}")
        return 2
    worst = 0
    for name in sorted(got):
        if name not in base:
            print(f"bench gate: new      {name}: {got[name]:.4f} ms (no baseline)")
            continue
        ratio = got[name] / base[name]
        verdict = "REGRESSION" if ratio > 1 + limit else "ok"
        worst = max(worst, ratio)
        print(f"bench gate: {verdict:10} {name}: {got[name]:.4f} ms vs baseline {base[name]:.4f} ms ({100 * (ratio - 1):+.1f} %)")
    for name in sorted(set(base) - set(got)):
        print(f"bench gate: not run  {name} (baseline {base[name]:.4f} ms)")
    bad = [n for n in got if n in base and got[n] > (1 + limit) * base[n]]
    print(f"bench gate: {len(bad)} regression(s) over {100 * limit:.0f} % among {sum(n in base for n in got)} compared")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
