"""The corpus evaluation: for every case of cases.py, make the data (generate.py), run Larmor's methods with their
defaults and over a lambda sweep (methods.py), run BART over a sweep of its own parameter, score everything against
the truth (metrics.py) and write results.json, results.md, evaluation.md and figure.png (report.py) into --out.

  run.py --cli build/default/bin/larmor-cli [--out build/evaluate] [--subset all|e2e] [--cases id,id] [--quick]
         [--data ../shared/data] [--report-only] [--maps-only]

--maps-only adds (or refreshes) the coil-map comparison of every case of --out's results.json with the given
larmor-cli, the case's data made again in place (deterministic), and re-writes the tables.

A failure of BART or Larmor on a case is recorded in that case's row; the harness itself exits non-zero only when
it cannot run at all (no bart, no larmor-cli) or when the metrics fail their self-test.
"""
import argparse
import datetime
import glob
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time

import cases as corpus
import generate
import methods
import metrics
import report

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def tool_versions(cli):
    def out(cmd):
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            return (r.stdout.strip() or r.stderr.strip()).splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            return "unknown"

    commit = out(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--", "engine", "app"],
                           capture_output=True, text=True).stdout.split("\n")
    return {"larmor": out([cli, "version"]), "bart": out(["bart", "version"]), "commit": commit,
            "engine_or_app_modified": [l[3:] for l in dirty if l.strip()], "python": sys.version.split()[0], "cpu_threads": os.cpu_count(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS", "")}


def snapshot(cli, out):
    """A private copy of larmor-cli and the engine library beside it (bin/ and lib/, as $ORIGIN/../lib finds it), so
    that a rebuild of the shared build tree during the run cannot change the program half way; returns its path and
    the SHA-256 of the program and library."""
    src_bin = os.path.dirname(cli)
    dst = os.path.join(out, "larmor")
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(os.path.join(dst, "bin"))
    os.makedirs(os.path.join(dst, "lib"))
    copy = os.path.join(dst, "bin", os.path.basename(cli))
    shutil.copy2(cli, copy)
    h = hashlib.sha256(open(cli, "rb").read())
    for lib in sorted(glob.glob(os.path.join(src_bin, "..", "lib", "liblarmor_engine.so*"))):
        if os.path.islink(lib):
            os.symlink(os.readlink(lib), os.path.join(dst, "lib", os.path.basename(lib)))
        else:
            shutil.copy2(lib, os.path.join(dst, "lib"))
            h.update(open(lib, "rb").read())
    return copy, h.hexdigest()[:16]


def larmor_defaults(case):
    """Every Larmor method with its defaults on this case."""
    direct = "fft" if case.info["cartesian"] else "gridding"
    runs = {direct: methods.larmor(case, direct, direct),
            "cg": methods.larmor(case, "cg", "cg"),
            "cs": methods.larmor(case, "cs", "cs"),
            "cs-wavelet": methods.larmor(case, "csw", "cs", ["--reg", "wavelet"])}
    if case.info["cartesian"] and case.info["undersampled"]:
        runs["grappa"] = methods.larmor(case, "grappa", "grappa")
    return direct, runs


def budget(runs, method, fallback):
    b = runs.get(method, {}).get("budget")
    return b if isinstance(b, int) and b > 0 else fallback


def bart_runs(case, budgets, sweeps, max_extra):
    """BART's maps, its direct reconstruction and, with a truth, its sweeps; without one, its pics -l2 reference."""
    out = {}
    try:
        out["maps_time"] = methods.bart_maps(case)
    except (generate.CaseError, OSError) as e:
        out["error"] = "bart maps: %s" % e
        return out
    out["direct"] = methods.bart_direct(case)
    if case.ref is None:  # a real scan: BART's l2 image is the reference
        ref = methods.bart_pics(case, "ref", "l2", 0.001, budgets["cg"])
        if "error" in ref:
            out["error"] = "reference: " + ref["error"]
            return out
        case.ref = case.image(ref["output"], case.info["bart_crop"])
        out["reference"] = {"pics": "-l2 -r 0.001 -i %d" % budgets["cg"], "time": ref["time"]}
        case.rescore(out["direct"], case.info["bart_crop"])
        return out
    for reg, key in (("l2", "cg"), ("tv", "cs"), ("wavelet", "cs")):
        out[reg] = methods.sweep(lambda lam, reg=reg: methods.bart_pics(case, "%s_%g" % (reg, lam), reg, lam,
                                                                        budgets[key]),
                                 sweeps["bart-" + reg], max_extra)
    return out


ORACLE_METHODS = (("cg", "cg", []), ("cs", "cs", []), ("cs-wavelet", "cs", ["--reg", "wavelet"]))


def oracle_runs(case, sweeps, max_extra, quick):
    """Larmor's own best lambda of a sweep, per model-based method (needs a truth); --quick: cs alone."""
    out = {}
    for m, method, extra in ORACLE_METHODS[1:2] if quick else ORACLE_METHODS:
        out[m] = methods.sweep(lambda lam, m=m, method=method, extra=extra:
                               methods.larmor(case, "%s_%g" % (m, lam), method, extra + ["--lambda", "%g" % lam]),
                               sweeps["larmor-" + m], max_extra)
    return out


def evaluate(spec, out_root, cli, data, quick):
    d = os.path.join(out_root, "cases", spec["id"])
    shutil.rmtree(d, ignore_errors=True)
    row = {"id": spec["id"], "description": corpus.describe(spec), "kind": spec["kind"], "matrix": spec["matrix"],
           "coils": spec["coils"], "noise": spec["noise"], "params": spec["params"], "e2e": spec["e2e"]}
    t0 = time.monotonic()
    try:
        info = generate.make(d, spec, data)
    except (generate.CaseError, OSError, RuntimeError, ValueError) as e:
        row["error"] = "data: %s" % e
        return row
    row.update({k: info[k] for k in ("reference", "cartesian", "undersampled", "noise_measured") if k in info})
    row["samples"], row["sampled_fraction"] = info.get("samples"), info.get("sampled_fraction")
    case = methods.Case(d, spec, info, cli)
    direct, runs = larmor_defaults(case)
    budgets = {"cg": budget(runs, "cg", 60), "cs": budget(runs, "cs", 100)}
    sweeps = methods.NARROW_SWEEPS if quick or not info["cartesian"] else methods.SWEEPS
    max_extra = 0 if quick else 2
    row["direct_method"], row["budgets"] = direct, budgets
    row["bart"] = bart_runs(case, budgets, sweeps, max_extra)
    row["maps"] = methods.maps_agreement(case)
    for r in runs.values():
        case.rescore(r)
    row["larmor"] = runs
    if info["truth"] is not None:
        row["oracle"] = oracle_runs(case, sweeps, max_extra, quick)
    row["figure"] = figure_images(case, row)
    row["seconds"] = time.monotonic() - t0
    return row


def figure_images(case, row):
    """The magnitude images the figure shows, saved as .npy beside the case (truth or reference, Larmor's cg and cs
    defaults, BART's best l2 and TV or its reference)."""
    import numpy as np

    saved = {}
    if case.ref is None:
        return saved

    def keep(name, img):
        p = os.path.join(case.d, "fig_%s.npy" % name)
        np.save(p, metrics.scaled(img, case.ref).astype(np.float32) if name != "truth" else img.astype(np.float32))
        saved[name] = p

    keep("truth", case.ref)
    for m in ("cg", "cs"):
        r = row["larmor"].get(m, {})
        if "output" in r and "error" not in r:
            keep("larmor_" + m, case.image(r["output"]))
    for reg in ("l2", "tv"):
        s = row["bart"].get(reg)
        if isinstance(s, dict) and s.get("best") is not None:
            best = [r for lam, r in s["points"] if lam == s["best"]][0]
            keep("bart_" + reg, case.image(best["output"], case.info["bart_crop"]))
    return saved


def maps_only(a):
    with open(os.path.join(a.out, "results.json")) as f:
        results = json.load(f)
    cli, digest = snapshot(os.path.abspath(a.cli), os.path.abspath(a.out))
    specs = {c["id"]: c for c in corpus.CASES}
    wanted = [c for c in a.cases.split(",") if c]
    for row in results["cases"]:
        if row["id"] not in specs or (wanted and row["id"] not in wanted):
            continue
        d = os.path.join(a.out, "cases", row["id"])
        tmp = d + ".maps"  # the data made again beside the case (making them in place is not idempotent for all kinds)
        shutil.rmtree(tmp, ignore_errors=True)
        info = generate.make(tmp, specs[row["id"]], os.path.abspath(a.data))
        for ext in (".cfl", ".hdr"):
            if os.path.exists(os.path.join(d, "b_maps" + ext)):
                shutil.copy(os.path.join(d, "b_maps" + ext), tmp)
        row["maps"] = methods.maps_agreement(methods.Case(tmp, specs[row["id"]], info, cli))
        shutil.rmtree(tmp, ignore_errors=True)
        print("%s: %s" % (row["id"], row["maps"]), flush=True)
    tools = tool_versions(cli)
    results["maps_run"] = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                           "commit": tools["commit"], "larmor": tools["larmor"], "larmor_sha256": digest}
    report.write_all(results, a.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "evaluate"))
    ap.add_argument("--subset", choices=["all", "e2e"], default="all")
    ap.add_argument("--cases", default="")
    ap.add_argument("--quick", action="store_true",
                    help="3-point sweeps on every case, no extension, Larmor's oracle for cs only (the e2e subset)")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(REPO), "shared", "data"))
    ap.add_argument("--report-only", action="store_true", help="re-write the tables and figure from --out's results.json")
    ap.add_argument("--maps-only", action="store_true",
                    help="compare the coil maps of --out's cases again with --cli, then re-write the tables")
    a = ap.parse_args()
    if a.maps_only:
        maps_only(a)
        return
    if a.report_only:
        with open(os.path.join(a.out, "results.json")) as f:
            report.write_all(json.load(f), a.out)
        return
    problems = metrics.self_test()
    if problems:
        sys.exit("evaluate: the metrics fail their self-test: " + "; ".join(problems))
    for tool in ("bart", "ismrmrd_generate_cartesian_shepp_logan", "h5dump"):
        if not shutil.which(tool):
            sys.exit("evaluate: %s is not installed (installer/install-deps.sh installs it)" % tool)
    if not os.access(a.cli, os.X_OK):
        sys.exit("evaluate: %s: not an executable larmor-cli (build it first)" % a.cli)
    os.makedirs(a.out, exist_ok=True)
    cli, digest = snapshot(os.path.abspath(a.cli), os.path.abspath(a.out))
    built = datetime.datetime.fromtimestamp(os.path.getmtime(a.cli), datetime.timezone.utc)
    chosen = corpus.select(a.subset, [c for c in a.cases.split(",") if c])
    started = datetime.datetime.now(datetime.timezone.utc)
    t0 = time.monotonic()
    sweeps = {"cartesian": methods.NARROW_SWEEPS if a.quick else methods.SWEEPS, "non-cartesian": methods.NARROW_SWEEPS}
    tools = tool_versions(cli)
    tools.update(larmor_sha256=digest, larmor_built=built.isoformat(timespec="seconds"))
    results = {"started": started.isoformat(timespec="seconds"), "tools": tools, "subset": a.subset,
               "quick": a.quick, "sweeps": sweeps, "max_extra": 0 if a.quick else 2,
               "load_average_start": os.getloadavg()[0], "cases": []}
    for i, spec in enumerate(chosen):
        print("[%d/%d] %s: %s" % (i + 1, len(chosen), spec["id"], corpus.describe(spec)), flush=True)
        row = evaluate(spec, a.out, cli, os.path.abspath(a.data), a.quick)
        results["cases"].append(row)
        print("    " + report.one_line(row), flush=True)
        results["seconds"] = time.monotonic() - t0
        use = resource.getrusage(resource.RUSAGE_CHILDREN)
        results["child_cpu_seconds"] = use.ru_utime + use.ru_stime
        results["load_average_end"] = os.getloadavg()[0]
        report.write_all(results, a.out)  # after every case: a run stopped half way leaves its tables
    print("evaluate: %d cases in %.0f s; %s" % (len(chosen), results["seconds"],
                                                 ", ".join(os.path.join(a.out, f) for f in report.OUTPUTS)))


if __name__ == "__main__":
    main()
