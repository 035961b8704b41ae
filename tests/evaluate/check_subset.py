"""Checks of a quick corpus run (subset.sh): the harness works, whatever Larmor's defaults score.
  - every case made its data, every BART sweep found a best, every Larmor run is scored or carries its error;
  - every score is a number in range (NRMSE in [0, 2], SSIM in [-1, 1]);
  - BART's best pics -l2 reconstructs the truth (NRMSE < 0.25): the data, the truth and the scoring line up;
  - results.json, results.md, evaluation.md and (when a case has images) figure.png are written.
Exit 1 with one line per problem."""
import json
import os
import sys

out = sys.argv[1]
problems = []
with open(os.path.join(out, "results.json")) as f:
    res = json.load(f)
rows = res["cases"]
if not rows:
    problems.append("no cases ran")
for row in rows:
    cid = row["id"]
    if "error" in row:
        problems.append("%s: %s" % (cid, row["error"]))
        continue
    for m, r in row["larmor"].items():
        if "error" in r:
            print("note: %s: Larmor %s failed: %s (a row of the table)" % (cid, m, r["error"]))
        elif not (0 <= r["nrmse"] <= 2 and -1 <= r["ssim"] <= 1):
            problems.append("%s: Larmor %s scores out of range: %s" % (cid, m, r))
    for reg in ("l2", "tv", "wavelet"):
        s = row["bart"].get(reg)
        if not s or s.get("best") is None:
            problems.append("%s: BART %s sweep found no best (%s)" % (cid, reg, s))
    l2 = row["bart"].get("l2") or {}
    best = [r for lam, r in l2.get("points", []) if lam == l2.get("best")]
    if best and not best[0]["nrmse"] < 0.25:
        problems.append("%s: BART's best pics -l2 scores %.3f against the truth (>= 0.25: data and truth misaligned?)"
                        % (cid, best[0]["nrmse"]))
    for m, s in row.get("oracle", {}).items():
        if s.get("best") is None:
            print("note: %s: Larmor %s sweep has no scored point" % (cid, m))
for f in ("results.json", "results.md", "evaluation.md"):
    if not os.path.getsize(os.path.join(out, f)):
        problems.append(f + " is empty")
if any(r.get("figure") for r in rows) and not os.path.exists(os.path.join(out, "figure.png")):
    problems.append("figure.png not written")
for p in problems:
    print("evaluate_subset: " + p, file=sys.stderr)
print("evaluate_subset: %d cases, %d problems" % (len(rows), len(problems)))
sys.exit(1 if problems else 0)
