#!/usr/bin/env python3
"""Renders a `larmor-cli bench --json` file (schema "larmor-bench", docs/benchmarks.md "JSON") as the two markdown
tables of docs/benchmarks.md's `larmor-cli bench` section: device-resident and host in -> host out, one row per
workload with its figure (median, min-max), the card, the date, the commit, the peer or paper figure beside it
(ours / theirs) and the physical limit beside it (ratio time / limit), and the target. Paste the rows over the
card's rows after a GPU run (tests/gpu/run-on-device.sh leaves the JSON as cli-bench.json).

  bench_to_md.py CLI_BENCH_JSON --commit COMMIT [--date YYYY-MM-DD] [--table device|host|both] [--no-header]

The JSON does not carry the commit (run-on-device.sh prints it in run.log); --date defaults to the JSON's
date_utc. Exit status 0, or 2 with one line naming the file and the reason."""
import json
import math
import sys


def ms(v):
    """Milliseconds as the bench's table prints them: 3 significant figures or more."""
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "-"
    f = "%.0f" if v >= 100 else "%.1f" if v >= 10 else "%.2f" if v >= 1 else "%.3f" if v >= 0.1 else "%.3g"
    return f % v


def ratio(v):
    return "-" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{v:.3g}x"


def spread(d):
    return f"**{ms(d.get('median'))}** ({ms(d.get('min'))}-{ms(d.get('max'))})"


def kind_of_table(kind):
    """The table a reference or target of this kind sits in."""
    return "device" if kind == "device" else "host"


def peer(r, table):
    ref = r.get("reference")
    if not isinstance(ref, dict) or kind_of_table(ref.get("kind")) != table:
        return "-"
    return f"{ref.get('what', '?')}: {ms(ref.get('ms'))} ms (ours {ratio(ref.get('ours_over_reference'))})"


def target(r, table):
    t = r.get("target")
    if not isinstance(t, dict) or kind_of_table(t.get("kind")) != table:
        return "-"
    if "not_judged" in t:
        verdict = "not judged on this card"
    else:
        verdict = "met" if t.get("met") else "**not met**"
    return f"{ms(t.get('ms'))}: {verdict}"


def limit(r, table):
    key, rkey = ("device_ms", "device") if table == "device" else ("host_to_host_ms", "host_to_host")
    return f"{ms(r['limit'].get(key))} ({ratio(r['ratio'].get(rkey))})"


HEADERS = {
    "device": "| workload | size | device-resident ms (min-max) | card | date | commit | peer or paper figure "
              "(ours / theirs) | limit ms (time / limit) | target ms |",
    "host": "| workload | host in -> host out ms (min-max) | card | date | commit | peer or paper figure "
            "(ours / theirs) | limit ms (time / limit) | target ms |",
}


def rows(data, table, commit, date):
    card = data["device"].get("name", "?")
    out = []
    for r in data["results"]:
        size = r.get("size", "")
        if r.get("scaled"):
            size += f" ({r['scaled']})"
        if table == "device":
            cells = [r["name"], size, spread(r["device_ms"])]
        else:
            cells = [r["name"], spread(r["host_to_host_ms"])]
        cells += [card, date, commit, peer(r, table), limit(r, table), target(r, table)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    for e in data.get("errors", []):
        out.append(f"| {e.get('name', '?')} | FAILED: {e.get('error', '')} |")
    return out


def parse(argv):
    opts = {"--table": "both"}
    args, i = [], 1
    while i < len(argv):
        a = argv[i]
        if a in ("--commit", "--date", "--table") and i + 1 < len(argv):
            opts[a] = argv[i + 1]
            i += 2
        elif a == "--no-header":
            opts[a] = True
            i += 1
        elif a.startswith("--"):
            raise ValueError(f"unknown option {a}")
        else:
            args.append(a)
            i += 1
    if len(args) != 1 or opts["--table"] not in ("device", "host", "both"):
        raise ValueError("usage: bench_to_md.py CLI_BENCH_JSON --commit COMMIT [--date D] [--table device|host|both]")
    return args[0], opts


def main(argv):
    try:
        path, opts = parse(argv)
        try:
            data = json.load(open(path, encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e})") from None
        if not isinstance(data, dict) or data.get("schema") != "larmor-bench":
            raise ValueError(f"{path}: not a larmor-cli bench JSON (schema \"larmor-bench\")")
        if data.get("schema_version") != 1:
            raise ValueError(f"{path}: schema_version {data.get('schema_version')}, this script reads 1")
        commit = opts.get("--commit") or data.get("commit")
        if not commit:
            raise ValueError(f"{path}: the JSON has no commit; give --commit (run.log's 'commit' line)")
        date = opts.get("--date") or str(data.get("date_utc", "?"))[:10]
        tables = ["device", "host"] if opts["--table"] == "both" else [opts["--table"]]
        lines = []
        for t in tables:
            if not opts.get("--no-header"):
                head = HEADERS[t]
                lines += ([""] if lines else []) + [head, "|" + "---|" * (head.count("|") - 1)]
            lines += rows(data, t, commit, date)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
        print(f"bench_to_md: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
