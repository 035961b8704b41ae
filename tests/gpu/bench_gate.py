#!/usr/bin/env python3
"""The benchmark gate of tests/gpu/run-on-device.sh: each benchmark of a Google Benchmark JSON (larmor_bench
--benchmark_out) or of a `larmor-cli bench --json` file is compared with the baseline of the same benchmark on the
same GPU model, recorded in docs/benchmarks.md. A benchmark slower than its baseline by more than the allowed
fraction (default 15 %) is a regression. A baseline of the run's program whose benchmark did not run (absent,
errored or renamed) is MISSING, unless --filter REGEX (the run's --benchmark_filter) does not select it. A
benchmark without a baseline is listed as new (not a failure).

  bench_gate.py BENCH_JSON BASELINES_MD [--card NAME] [--max-regression 0.15] [--filter REGEX] [--emit FILE]

Baselines are kept per card: one fenced code block per GPU model, whose info string is `bench-baseline NAME`,
NAME as nvidia-smi prints it (`nvidia-smi --query-gpu=name --format=csv,noheader`, e.g. "NVIDIA H100 80GB HBM3").
Each line of a block is `BENCHMARK TIME UNIT` (UNIT ns, us, ms or s); '#' starts a comment. The run's card is
--card; a larmor-cli bench JSON names its device itself (device.name), and a --card that differs from it is an
error. A card with no block is not a pass: the gate says "no baseline for this card" and exits 3 (the run's
figures, with --emit, are the block to record for it).

Names: Google Benchmark appends run settings to a registered name (".../min_time:0.200/manual_time",
"/iterations:5", "/repeats:3", "/threads:1", "/real_time"); the gate strips them, so a baseline line names the
benchmark as registered ("cuda:0/copy/256MiB"); its real_time in its time_unit is compared. A larmor-cli bench
result is named DEVICE/bench/WORKLOAD (its device-resident median) and DEVICE/bench/WORKLOAD/host-to-host (its host
in -> host out median). A run of one program is compared with that program's baselines only (names with /bench/
are larmor-cli bench's).

--emit FILE writes this run's figures as baseline lines (every benchmark that ran, in ms), to paste into the card's
block after an accepted change of speed (docs/testing.md).

Exit status: 0 no regression and nothing missing, 1 a regression or a missing baseline, 2 unreadable input or
options (never a pass), 3 no baseline block for this card."""
import json
import re
import sys

UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
FENCE = re.compile(r"^```bench-baseline(?P<info>[^\n]*)\n(?P<body>.*?)^```", re.S | re.M)


def card_key(name):
    """A card name compared without case and with runs of blanks as one."""
    return " ".join(name.split()).lower()


def baselines(md_path):
    """{card name: {benchmark: ms}} of every bench-baseline block of md_path."""
    text = open(md_path, encoding="utf-8").read()
    cards = {}
    for m in FENCE.finditer(text):
        card = " ".join(m.group("info").split())
        if not card:
            raise ValueError(f"{md_path}: a ```bench-baseline block names no card (expected '```bench-baseline NAME')")
        if card_key(card) in {card_key(c) for c in cards}:
            raise ValueError(f"{md_path}: two bench-baseline blocks for the card {card!r}")
        table = {}
        for n, line in enumerate(m.group("body").splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or parts[2] not in UNITS:
                raise ValueError(f"{md_path}: bench-baseline {card} line {n}: expected 'NAME TIME UNIT', got {line!r}")
            if parts[0] in table:
                raise ValueError(f"{md_path}: bench-baseline {card}: {parts[0]} twice")
            table[parts[0]] = float(parts[1]) * UNITS[parts[2]]
        cards[card] = table
    if not cards:
        raise ValueError(f"{md_path}: no ```bench-baseline block")
    return cards


def block_for(cards, card):
    for name, table in cards.items():
        if card_key(name) == card_key(card):
            return table
    return None


# Run settings Google Benchmark appends to a registered name (benchmark_register.cc: MinTime, MinWarmUpTime,
# Iterations, Repetitions, Threads, UseRealTime/UseManualTime/MeasureProcessCPUTime).
SUFFIX = re.compile(r"/(?:(?:min_time|min_warmup_time|iterations|repeats|threads):[^/]*|manual_time|real_time|process_time)$")


def registered_name(name):
    while True:
        stripped = SUFFIX.sub("", name)
        if stripped == name:
            return name
        name = stripped


def is_cli_name(name):
    return "/bench/" in name


def measured(bench_json):
    """(kind, card or None, {name: ms} of the benchmarks that ran, set of names that errored)."""
    data = json.load(open(bench_json, encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{bench_json}: not a benchmark JSON object")
    out, errored = {}, set()
    if data.get("schema") == "larmor-bench":  # larmor-cli bench --json (docs/benchmarks.md, "JSON")
        dev = data["device"]["id"]
        for r in data.get("results", []):
            base = f"{dev}/bench/{r['name']}"
            for name, t in ((base, r["device_ms"]["median"]), (base + "/host-to-host", r["host_to_host_ms"]["median"])):
                if isinstance(t, (int, float)):
                    out[name] = float(t)
        for e in data.get("errors", []):
            errored.add(f"{dev}/bench/{e['name']}")
        return "larmor-cli bench", data["device"].get("name"), out, errored
    if "benchmarks" not in data:
        raise ValueError(f"{bench_json}: neither a larmor-cli bench JSON (schema larmor-bench) nor a Google Benchmark one")
    for b in data["benchmarks"]:
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
    return "larmor_bench", None, out, errored


def emit(path, card, kind, got):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# {kind} on {card}: paste into the ```bench-baseline {card} block of docs/benchmarks.md\n")
        for name in sorted(got):
            f.write(f"{name} {got[name]:.4g} ms\n")


class UsageError(ValueError):
    pass


def parse_args(argv):
    args, opts, i = [], {}, 1
    while i < len(argv):
        if argv[i] in ("--max-regression", "--filter", "--card", "--emit"):
            if i + 1 >= len(argv):
                raise UsageError(f"{argv[i]} needs a value")
            opts[argv[i]] = argv[i + 1]
            i += 2
        elif argv[i].startswith("--"):
            raise UsageError(f"unknown option {argv[i]}")
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 2:
        raise UsageError("expected BENCH_JSON BASELINES_MD")
    return args, opts


def run_card(opts, kind, json_card):
    card = opts.get("--card") or json_card
    if not card:
        raise ValueError(f"a {kind} JSON does not name its GPU: give --card NAME (nvidia-smi's name)")
    if json_card and card_key(json_card) != card_key(card):
        raise ValueError(f"the JSON was measured on {json_card!r}, --card says {card!r}")
    return card


def compare(base, got, errored, selected, limit):
    """Prints a line per benchmark; returns (regressions, missing)."""
    for name in sorted(got):
        if name not in base:
            print(f"bench gate: new      {name}: {got[name]:.4f} ms (no baseline)")
            continue
        ratio = got[name] / base[name]
        verdict = "REGRESSION" if ratio > 1 + limit else "ok"
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
    return bad, missing


def main(argv):
    try:
        (json_path, md_path), opts = parse_args(argv)
        limit = float(opts.get("--max-regression", 0.15))
        selected = re.compile(opts.get("--filter") or ".")
        cards = baselines(md_path)
        kind, json_card, got, errored = measured(json_path)
        card = run_card(opts, kind, json_card)
        if "--emit" in opts:
            emit(opts["--emit"], card, kind, got)
    except (OSError, ValueError, KeyError, TypeError, re.error, json.JSONDecodeError) as e:
        print(f"bench gate: FAILED: {e}")
        if isinstance(e, UsageError):
            print(__doc__, file=sys.stderr)
        return 2
    block = block_for(cards, card)
    if block is None:
        for name in sorted(got):
            print(f"bench gate: new      {name}: {got[name]:.4f} ms (no baseline)")
        print(f"bench gate: no baseline for this card ({card}); {md_path} has blocks for {', '.join(sorted(cards))}; "
              f"record this run's figures as its block (docs/testing.md)")
        return 3
    cli = kind == "larmor-cli bench"
    base = {n: t for n, t in block.items() if is_cli_name(n) == cli}
    bad, missing = compare(base, got, errored, selected, limit)
    print(f"bench gate: {kind} on {card}: {len(bad)} regression(s) over {100 * limit:.0f} % among "
          f"{sum(n in base for n in got)} compared, {len(missing)} baseline(s) missing")
    return 1 if bad or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
