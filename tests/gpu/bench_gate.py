#!/usr/bin/env python3
"""The benchmark gate of tests/gpu/run-on-device.sh: each benchmark of a Google Benchmark JSON (larmor_bench
--benchmark_out) or of a `larmor-cli bench --json` file is compared with its last recorded figure in docs/perf.md's
`bench-baseline` block; a benchmark slower than its baseline by more than the allowed fraction (default 15 %) is a
regression and the gate exits 1. A baseline whose benchmark did not run (absent, errored, or renamed) is MISSING and
also fails the gate, unless --filter REGEX (the run's --benchmark_filter) does not select it. Benchmarks with no
baseline are listed as new (not a failure).

  bench_gate.py BENCH_JSON PERF_MD [--max-regression 0.15] [--filter REGEX]

Names: Google Benchmark appends run settings to a registered name (".../min_time:0.200/manual_time",
"/iterations:5", "/repeats:3", "/threads:1", "/real_time"); the gate strips them, so a baseline line names the
benchmark as registered ("cuda:0/copy/256MiB"). A larmor-cli bench result is named DEVICE/bench/WORKLOAD (its
device-resident median) and DEVICE/bench/WORKLOAD/host-to-host.

The block (in docs/perf.md) is a fenced code block whose info string is `bench-baseline`; each line is
`NAME TIME UNIT` (UNIT ns, us or ms), '#' starts a comment. The benchmark's real_time is used, in its time_unit.
Exit status: 0 no regression and nothing missing, 1 a regression or a missing baseline, 2 unreadable input (an
unreadable file is never a pass)."""
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


# Run settings Google Benchmark appends to a registered name (benchmark_register.cc: MinTime, MinWarmUpTime,
# Iterations, Repetitions, Threads, UseRealTime/UseManualTime/MeasureProcessCPUTime).
SUFFIX = re.compile(r"/(?:(?:min_time|min_warmup_time|iterations|repeats|threads):[^/]*|manual_time|real_time|process_time)$")


def registered_name(name):
    while True:
        stripped = SUFFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def measured(bench_json):
    """{name: ms} of the benchmarks that ran, and the set of names that errored."""
    data = json.load(open(bench_json, encoding="utf-8"))
    out, errored = {}, set()
    if data.get("schema") == "larmor-bench":  # larmor-cli bench --json (docs/perf.md)
        dev = data["device"]["id"]
        for r in data.get("results", []):
            base = f"{dev}/bench/{r['name']}"
            for name, t in ((base, r["device_ms"]["median"]), (base + "/host-to-host", r["host_to_host_ms"]["median"])):
                if isinstance(t, (int, float)):
                    out[name] = float(t)
        for e in data.get("errors", []):
            errored.add(f"{dev}/bench/{e['name']}")
        return out, errored
    for b in data.get("benchmarks", []):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"]
        if b.get("run_type") == "aggregate":
            name = b.get("run_name", name[: -len("_median")] if name.endswith("_median") else name)
        name = registered_name(name)
        if b.get("error_occurred"):
            errored.add(name)
            continue
        out[name] = float(b["real_time"]) * UNITS[b.get("time_unit", "ns")]
    return out, errored


def main(argv):
    args, opts, i = [], {}, 1
    while i < len(argv):
        if argv[i] in ("--max-regression", "--filter") and i + 1 < len(argv):
            opts[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("--"):
            print(f"bench gate: unknown option {argv[i]}\n{__doc__}", file=sys.stderr)
            return 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        limit = float(opts.get("--max-regression", 0.15))
        selected = re.compile(opts.get("--filter") or ".")
        base = baseline(args[1])
        got, errored = measured(args[0])
    except (OSError, ValueError, KeyError, TypeError, re.error, json.JSONDecodeError) as e:
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
    missing = []
    for name in sorted(set(base) - set(got)):
        if not selected.search(name):
            print(f"bench gate: not selected {name} (baseline {base[name]:.4f} ms; outside --filter)")
            continue
        why = "errored" if name in errored else "no benchmark of this name ran"
        print(f"bench gate: MISSING  {name} (baseline {base[name]:.4f} ms): {why}")
        missing.append(name)
    bad = [n for n in got if n in base and got[n] > (1 + limit) * base[n]]
    print(f"bench gate: {len(bad)} regression(s) over {100 * limit:.0f} % among {sum(n in base for n in got)} compared, "
          f"{len(missing)} baseline(s) missing")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
