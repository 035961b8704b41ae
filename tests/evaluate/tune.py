"""The tuning corpus: where a default of Larmor's lambda is chosen, so that it is never chosen on the data the claims
are asserted on (the evaluation corpus, cases.py). Its objects are not the evaluation corpus's Shepp-Logan: BART's
tubes (`phantom -T`), geometric object (`-G`) and random tubes (`-N 8`, the case's seed); its trajectories, coil
counts and noise levels vary as the evaluation corpus's do, with other spoke counts, accelerations and seeds.

For each case and each method (cs TV, cs wavelet) it runs every candidate rule of lambda (RULES: the fixed default,
`--lambda-rule cv`, `--lambda-rule noise`) and a sweep of `--lambda` (the case's oracle: the best of the sweep), and
reports per rule and class of data (Cartesian, non-Cartesian) how many cases come within 5 % of their oracle, and the
median and worst ratio rule / oracle. The table goes to stdout and --out/tune.json.

  tune.py --cli build/default/bin/larmor-cli [--out build/tune] [--cases id,id] [--methods cs,cs-wavelet]
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import generate
import methods


def case(cid, kind, matrix, coils, noise, obj, **params):
    params["object"] = obj
    return {"id": cid, "kind": kind, "matrix": matrix, "coils": coils, "noise": noise, "params": params, "e2e": False}


TUNE_CASES = [
    case("t-rad-g24-os1", "radial", 128, 8, 0, "tubes", os=1, angles="golden", spokes=24),
    case("t-rad-g48-os2-n1", "radial", 128, 8, 1, "geometric", os=2, angles="golden", spokes=48),
    case("t-rad-l40-os1-n3", "radial", 128, 4, 3, "random", os=1, angles="linear", spokes=40),
    case("t-rad-t20-os1-n1", "radial", 128, 8, 1, "geometric", os=1, angles="tiny", spokes=20),
    case("t-rad-g80-os1", "radial", 128, 6, 0, "random", os=1, angles="golden", spokes=80),
    case("t-spi-i6-r2-n1", "spiral", 128, 8, 1, "tubes", interleaves=6, r=2),
    case("t-spi-i5-r3", "spiral", 128, 4, 0, "random", interleaves=5, r=3),
    case("t-c1d-r3-acs24", "cart1d", 128, 8, 0, "geometric", r=3, acs=24),
    case("t-c1d-r4-acs20-n1", "cart1d", 128, 8, 1, "random", r=4, acs=20),
    case("t-c1d-r2-acs32-n3", "cart1d", 128, 4, 3, "tubes", r=2, acs=32),
    case("t-p2x2-c20-n1", "plane2x2", 128, 8, 1, "tubes", acs=20),
    case("t-p2x2-c16-n3", "plane2x2", 128, 4, 3, "geometric", acs=16),
    case("t-poi-a2-c20", "poisson", 128, 8, 0, "geometric", a=2, acs=20),
    case("t-poi-a2.5-c20-n1", "poisson", 128, 8, 1, "random", a=2.5, acs=20),
    case("t-poi-a3-c16-n3", "poisson", 128, 6, 3, "tubes", a=3, acs=16),
    case("t-pf58-n1", "pf", 128, 8, 1, "tubes", fraction=0.625),
    case("t-pf68-r2-n3", "pf", 128, 4, 3, "geometric", fraction=0.75, r=2, acs=24),
]

METHODS = {"cs": ["--method", "cs"], "cs-wavelet": ["--method", "cs", "--reg", "wavelet"]}
RULES = {"fixed": [], "cv": ["--lambda-rule", "cv"], "noise": ["--lambda-rule", "noise"]}
SWEEP = [10 ** (-5 + 0.5 * i) for i in range(7)]  # 1e-5 ... 1e-2, half decades
WITHIN = 1.05


def run_case(spec, out, cli, method_names):
    d = os.path.join(out, spec["id"])
    info = generate.make(d, spec, data=None)
    c = methods.Case(d, spec, info, cli)
    row = {"id": spec["id"], "cartesian": info["cartesian"], "methods": {}}
    for m in method_names:
        base = METHODS[m][1:]  # methods.larmor passes --method itself
        method, extra = base[0], base[1:]
        res = {"rules": {}, "sweep": {}}
        for rule, flags in RULES.items():
            r = methods.larmor(c, "%s_%s" % (m, rule), method, extra + flags)
            res["rules"][rule] = {k: r.get(k) for k in ("nrmse", "lambda", "time", "error")}
        for lam in SWEEP:
            r = methods.larmor(c, "%s_sweep_%g" % (m, lam), method, extra + ["--lambda", "%g" % lam])
            res["sweep"]["%g" % lam] = r.get("nrmse")
        valid = [v for v in res["sweep"].values() if v is not None]
        res["oracle"] = min(valid) if valid else None
        row["methods"][m] = res
    return row


def summary(rows, method_names):
    lines = []
    for m in method_names:
        for cls in ("non-Cartesian", "Cartesian", "all"):
            picked = [r for r in rows if cls == "all" or (cls == "Cartesian") == r["cartesian"]]
            for rule in RULES:
                ratios = []
                for r in picked:
                    res = r["methods"][m]
                    v = res["rules"][rule].get("nrmse")
                    if v is not None and res["oracle"]:
                        ratios.append(v / res["oracle"])
                if not ratios:
                    continue
                within = sum(x <= WITHIN for x in ratios)
                lines.append("%-10s %-13s %-6s within 5 %%: %2d of %2d  median %.3f  geometric mean %.3f  worst %.3f" % (
                    m, cls, rule, within, len(ratios), statistics.median(ratios),
                    math.exp(statistics.fmean(math.log(x) for x in ratios)), max(ratios)))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", default="build/tune")
    ap.add_argument("--cases", default="")
    ap.add_argument("--methods", default="cs,cs-wavelet")
    a = ap.parse_args()
    cli = os.path.abspath(a.cli)
    out = os.path.abspath(a.out)
    method_names = [m for m in a.methods.split(",") if m]
    chosen = [c for c in TUNE_CASES if not a.cases or c["id"] in a.cases.split(",")]
    rows = []
    for spec in chosen:
        t0 = time.monotonic()
        try:
            rows.append(run_case(spec, out, cli, method_names))
        except generate.CaseError as e:
            print("%s: %s" % (spec["id"], e), file=sys.stderr)
            continue
        r = rows[-1]
        parts = []
        for m in method_names:
            res = r["methods"][m]
            parts.append("%s oracle %.4f %s" % (m, res["oracle"] or float("nan"), " ".join(
                "%s %.4f" % (k, v["nrmse"]) if v.get("nrmse") is not None else "%s err" % k
                for k, v in res["rules"].items())))
        print("%-20s %5.0f s  %s" % (spec["id"], time.monotonic() - t0, "; ".join(parts)), flush=True)
    lines = summary(rows, method_names)
    print("\n".join(lines))
    with open(os.path.join(out, "tune.json"), "w") as f:
        json.dump({"rows": rows, "summary": lines}, f, indent=1)


if __name__ == "__main__":
    main()
