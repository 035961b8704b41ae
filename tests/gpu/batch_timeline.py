#!/usr/bin/env python3
# The per-item timeline of a `larmor-cli batch` run from its journal's `at_ms` (ms since the batch began; issue
# 21): for the first and last items, when each started, reconstructed and ended, and the idle time of the
# device between consecutive reconstructions, so where the batch's wall time goes beyond recon can be seen.
#   python3 tests/gpu/batch_timeline.py OUTPUT_DIR
import json, sys, statistics, pathlib
d = pathlib.Path(sys.argv[1])
recs = [json.loads(l) for l in open(d / "journal.jsonl") if l.strip()]
rows = sorted((r for r in recs if r.get("event") == "done" and "at_ms" in r), key=lambda r: r["at_ms"]["recon"])
for r in rows[:4] + rows[-2:]:
    a, tm = r["at_ms"], r["timings_ms"]
    print(f"{r['name']:8s} start {a['start']:8.1f}  recon {a['recon']:8.1f}..{a['recon_end']:8.1f}  end {a['end']:8.1f}  "
          f"load {tm['load']:6.2f} write {tm['write']:6.2f}")
rec = [r["at_ms"]["recon_end"] - r["at_ms"]["recon"] for r in rows]
gaps = [b["at_ms"]["recon"] - a["at_ms"]["recon_end"] for a, b in zip(rows, rows[1:])]
last = max(r["at_ms"]["end"] for r in rows)
print(f"items {len(rows)}: last end {last:.0f} ms; before the first recon {rows[0]['at_ms']['recon']:.1f} ms; "
      f"recon first {rec[0]:.1f}, median {statistics.median(rec):.2f}, sum {sum(rec):.0f}; gaps median "
      f"{statistics.median(gaps):.2f}, sum {sum(gaps):.0f}; after the last recon {last - rows[-1]['at_ms']['recon_end']:.1f} ms")
# The reconstruction's stages, median per item (timings_ms.stages): which stage grows when workers share a host.
names = sorted({k for r in rows for k in r["timings_ms"].get("stages", {})})
for dev in sorted({r["device"] for r in rows}):
    mine = [r for r in rows if r["device"] == dev]
    if names:
        print(f"{dev}: {len(mine)} items, recon median {statistics.median(r['timings_ms']['recon'] for r in mine):.2f} ms; "
              "stages, median ms: " + ", ".join(
                  f"{k} {statistics.median(r['timings_ms']['stages'].get(k, 0.0) for r in mine):.2f}" for k in names))
