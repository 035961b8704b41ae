#!/usr/bin/python3
"""Larmor's joint (temporal-prior) reconstruction of a series against frame-by-frame CG-SENSE and BART's pics.

Data made by tools we did not write (docs/dynamic.md, "How the contest is made"):
  - truth: tools/dynamic_phantom.py (numpy), N x N, T frames: a Shepp-Logan-like head with a beating ellipse,
    a slow breathing shift and a wash-in ellipse;
  - coils: `bart phantom -S C -x N`, each pixel's maps divided by their root sum of squares (so the coil-combined
    truth is the truth frame itself);
  - trajectory: `bart traj -r -G -x 2N -y T*S` (golden angle, readout oversampled x 2) scaled by 0.5 (k within
    +-N/2, as tests/e2e/bart_pics.sh), cut into T frames of S consecutive spokes (`bart reshape`, time in dim 10);
  - k-space: `bart nufft` forward of maps x truth, frame by frame; complex Gaussian noise, E|n|^2 = sigma^2 with
    sigma = NOISE x the RMS of the noiseless samples (numpy, seed 1).
A second case is Larmor's own `larmor-cli simulate --frames T --traj golden` data (its truth: the .h5's
reference frames, read with h5dump).

Every method gets the same data; the maps of a row are BART's `ecalib -m1` of the time-averaged gridded k-space
(`bart nufft -i` of all spokes, `bart fft -u`) given to both tools, or each tool's own (Larmor: its default ESPIRiT
of all frames' samples; BART has no maps of its own beyond that recipe, so its rows are the same). Iterations:
100 for every iterative method (Larmor cs's default; `--iters 100` for cg, whose default 60 is listed too).
Scored on magnitudes over the whole field of view and the whole series, after one least-squares scale factor
s = <x, t> / <x, x> for the series (as `bart nrmse -s`): NRMSE = ||s x - t|| / ||t||.

Usage: tools/dynamic_contest.py --cli build/default/bin/larmor-cli [--out build/dynamic] [--quick] [--figure PNG]
                               [--case all|bart-phantom|larmor-simulate] [--reuse] [--figure-only]
Writes OUT/results.json and OUT/results.md (and the figure). --quick: 64^2, 8 frames of 11 spokes, BART's maps
only, BART's 3-point sweep, no Larmor sweeps (tests/e2e/bart_dynamic.sh). --case runs one case (the other's
results in OUT are kept); --reuse rescores the data and outputs of an earlier run in OUT (each run's seconds are
kept beside its output, NAME.run.json).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "evaluate"))
import cfl  # noqa: E402  (tests/evaluate/cfl.py: BART files in numpy)
import dynamic_figure  # noqa: E402
import dynamic_phantom  # noqa: E402

# Sweeps: a constant ratio, extended by up to 2 points past an edge that holds the best (full run only); on
# Larmor's simulate data (bart_sim) BART's 3 points around its best on the phantom, for time.
FULL = dict(n=128, frames=20, spokes=21, coils=8, noise=0.01, bart=[0.002, 0.004, 0.008, 0.016, 0.032],
            bart_sim=[0.004, 0.008, 0.016], ttv=[0.001, 0.002, 0.004, 0.008, 0.016],
            sttv=[0.001, 0.002, 0.004, 0.008, 0.016], sim=True)
QUICK = dict(n=64, frames=8, spokes=11, coils=8, noise=0.01, bart=[0.003, 0.006, 0.012], ttv=[], sttv=[], sim=False)
ITERS = 100
DEFAULT_TEMPORAL = 0.004  # larmor-cli's --temporal-lambda default (checked against each run's JSON)


def sh(args, log=None):
    r = subprocess.run([str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(r.stdout)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(map(str, args)), r.returncode, r.stdout[-600:]))
    return r.stdout


def bart(*args):
    return sh(["bart"] + list(args))


def series_of(path, n):
    """A reconstruction's magnitude as [n, n, T] (every singleton dimension dropped)."""
    return np.abs(cfl.read(path)).reshape(n, n, -1, order="F")


def nrmse(x, t):
    s = float(np.vdot(x, t)) / float(np.vdot(x, x))
    return float(np.linalg.norm(s * x - t) / np.linalg.norm(t)), s


def bart_maps(d, n):
    """ecalib -m1 of the time-averaged gridded k-space: every frame's spokes in one set."""
    bart("nufft", "-i", "-d", "%d:%d:1" % (n, n), d + "/traj_all", d + "/ksp_all", d + "/grid")
    bart("fft", "-u", "3", d + "/grid", d + "/kgrid")
    bart("ecalib", "-m1", d + "/kgrid", d + "/maps")


def merge_frames(d, name, out):
    """[.., spokes, coils, .., T in dim 10] -> [.., T*spokes, coils] in acquisition order (frames outermost)."""
    k = cfl.read(d + "/" + name)
    sh_ = k.shape
    k = k.reshape(sh_[0], sh_[1], sh_[2], sh_[3], sh_[10], order="F").transpose(0, 1, 2, 4, 3)
    cfl.write(d + "/" + out, k.reshape(sh_[0], sh_[1], sh_[2] * sh_[10], sh_[3], order="F"))


def make_bart_case(d, p):
    """The phantom through BART's NUFFT: truth, traj (T frames in dim 10), ksp, the merged ones, BART's maps."""
    n, T, S, C = p["n"], p["frames"], p["spokes"], p["coils"]
    os.makedirs(d, exist_ok=True)
    truth = dynamic_phantom.series(n, T)
    cfl.write(d + "/truth", truth)
    bart("phantom", "-S", str(C), "-x", str(n), d + "/smaps")
    s = cfl.read(d + "/smaps").reshape(n, n, C, order="F")
    s = s / np.sqrt((np.abs(s) ** 2).sum(-1, keepdims=True))
    bart("traj", "-r", "-G", "-x", str(2 * n), "-y", str(T * S), d + "/traj2x")
    bart("scale", "0.5", d + "/traj2x", d + "/traj_all")
    bart("reshape", sh(["bart", "bitmask", "2", "10"]).strip(), str(S), str(T), d + "/traj_all", d + "/traj")
    traj = cfl.read(d + "/traj").reshape(3, 2 * n, S, T, order="F")
    k = np.zeros((1, 2 * n, S, C) + (1,) * 6 + (T,), np.complex64)
    for t in range(T):
        cfl.write(d + "/img_t", (truth[:, :, t, None] * s).reshape(n, n, 1, C))
        cfl.write(d + "/traj_t", traj[..., t].real)
        bart("nufft", "-d", "%d:%d:1" % (n, n), d + "/traj_t", d + "/img_t", d + "/k_t")
        k[..., t] = cfl.read(d + "/k_t").reshape(1, 2 * n, S, C, *(1,) * 6)
    sigma = p["noise"] * float(np.sqrt(np.mean(np.abs(k) ** 2)))
    rng = np.random.default_rng(1)
    k = k + sigma / np.sqrt(2) * (rng.standard_normal(k.shape) + 1j * rng.standard_normal(k.shape))
    cfl.write(d + "/ksp", k)
    merge_frames(d, "ksp", "ksp_all")
    bart_maps(d, n)
    return truth, {"sigma": sigma, "noise": "%g x RMS of the noiseless samples" % p["noise"]}


def reference_of(h5, n, T):
    """The .h5's reference frames (ISMRMRD array [x, y, 1, 1, 1, T]) through h5dump's text, as [n, n, T]."""
    txt = sh(["h5dump", "-d", "/dataset/reference", "-y", "-w", "0", h5])
    body = txt[txt.index("DATA {") + 6:]
    v = np.array(body.replace("{", " ").replace("}", " ").replace(",", " ").split(), dtype=np.float64)
    a = (v[0::2] + 1j * v[1::2]).reshape(T, n, n)  # C order: [t, y, x]
    return np.abs(a).transpose(2, 1, 0)


def make_larmor_case(d, p, cli):
    """larmor-cli simulate's dynamic phantom: .h5 (with the truth) and the same samples as BART files."""
    n, T, S, C = p["n"], p["frames"], p["spokes"], p["coils"]
    os.makedirs(d, exist_ok=True)
    common = ["--frames", T, "--traj", "golden", "--matrix", n, "--coils", C, "--noise", p["noise"],
              "--spokes-per-frame", S]
    sh([cli, "simulate"] + common + ["--output", d + "/sim.h5", "--traj-output", d + "/traj.cfl"])
    sh([cli, "simulate"] + common + ["--output", d + "/simk.cfl"])
    k = cfl.read(d + "/simk")  # [readout, spokes, 1, coils, .., T]
    R = k.shape[0]
    cfl.write(d + "/ksp", k.reshape(R, S, C, T, order="F").reshape(1, R, S, C, *(1,) * 6, T, order="F"))
    merge_frames(d, "ksp", "ksp_all")
    t = cfl.read(d + "/traj").reshape(3, R, S, T, order="F")
    cfl.write(d + "/traj_all", t.transpose(0, 1, 2, 3).reshape(3, R, S * T, order="F"))
    bart_maps(d, n)
    truth = reference_of(d + "/sim.h5", n, T)
    cfl.write(d + "/truth", truth)
    return truth, {"noise": "larmor-cli simulate --noise %g (sigma per real and imaginary part)" % p["noise"]}


class Runner:
    """Runs and scores reconstructions of one case; results[name] = {nrmse, per_frame, seconds, command}."""

    def __init__(self, d, cli, truth, data, reuse):
        self.d, self.cli, self.truth, self.data, self.results, self.reuse = d, cli, truth, data, {}, reuse
        self.n = truth.shape[0]

    def timed(self, name, work):
        """work() unless --reuse finds NAME's output and its timing (NAME.run.json) from an earlier run."""
        side = "%s/%s.run.json" % (self.d, name)
        if self.reuse and os.path.exists(side) and cfl.exists("%s/%s" % (self.d, name)):
            with open(side) as f:
                return json.load(f)["seconds"]
        t0 = time.time()
        work()
        seconds = time.time() - t0
        with open(side, "w") as f:
            json.dump({"seconds": seconds}, f)
        return seconds

    def score(self, name, out, seconds, command):
        x = series_of(out, self.n)
        e, s = nrmse(x, self.truth)
        per = [nrmse(x[:, :, t], self.truth[:, :, t])[0] for t in range(x.shape[2])]
        self.results[name] = {"nrmse": e, "per_frame": per, "seconds": round(seconds, 1), "command": command}
        print("  %-28s NRMSE %.5f  (%.1f s)" % (name, e, seconds), flush=True)
        return e

    def larmor(self, name, *opts):
        out = "%s/%s" % (self.d, name)
        args = [self.cli, "recon", self.d + "/" + self.data, "--traj", self.d + "/traj.cfl", "--matrix", self.n,
                "--device", "cpu", "--output", out + ".cfl", "--json", out + ".json"] + list(opts)
        seconds = self.timed(name, lambda: sh(args, out + ".log"))
        shown = [os.path.basename(str(o)) if str(o).endswith(".cfl") else str(o) for o in opts]
        return self.score(name, out, seconds, " ".join(["larmor-cli recon DATA"] + shown))

    def bart_tv(self, lam, maps="maps"):
        name = ("bart-T-%g" if maps == "maps" else "bart-lmaps-T-%g") % lam
        seconds = self.timed(name, lambda: bart("pics", "-S", "-e", "-R", "T:1024:0:%g" % lam, "-i", ITERS, "-t",
                                                self.d + "/traj", self.d + "/ksp", self.d + "/" + maps,
                                                self.d + "/" + name))
        return self.score(name, self.d + "/" + name, seconds,
                          "bart pics -S -e -R T:1024:0:%g -i %d -t traj ksp %s" % (lam, ITERS, maps))

    def bart_l2(self, T):
        def work():
            outs = []
            for t in range(T):
                bart("slice", "10", t, self.d + "/ksp", self.d + "/kf")
                bart("slice", "10", t, self.d + "/traj", self.d + "/tf")
                bart("pics", "-S", "-l2", "-r", "0.001", "-i", ITERS, "-t", self.d + "/tf", self.d + "/kf",
                     self.d + "/maps", "%s/bl2_%d" % (self.d, t))
                outs.append("%s/bl2_%d" % (self.d, t))
            bart("join", "10", *outs, self.d + "/bart-l2")
        return self.score("bart-l2", self.d + "/bart-l2", self.timed("bart-l2", work),
                          "bart pics -S -l2 -r 0.001 -i %d, frame by frame" % ITERS)


def sweep(run, grid, extra=2):
    """run(lam) -> NRMSE over `grid` (ascending, a constant ratio), extended by up to `extra` points past an edge
    that holds the best."""
    got = {lam: run(lam) for lam in grid}
    ratio = grid[1] / grid[0]
    for _ in range(extra):
        lo, hi = min(got), max(got)
        b = min(got, key=got.get)
        if b not in (lo, hi):
            break
        lam = lo / ratio if b == lo else hi * ratio
        got[lam] = run(lam)
    return got


def larmor_rows(r, p, maps, tag, sweeps):
    """Larmor's rows with the maps `maps` (a .cfl, or None: its own default)."""
    m = ["--coil-maps", maps] if maps else []
    r.larmor("cg60-" + tag, "--method", "cg", *m)
    r.larmor("cg-" + tag, "--method", "cg", "--iters", ITERS, *m)
    default = {"ttv": r.larmor("ttv-" + tag, "--method", "cs", "--temporal-prior", "ttv", *m),
               "sttv": r.larmor("sttv-" + tag, "--method", "cs", *m)}
    with open("%s/sttv-%s.json" % (r.d, tag)) as f:
        said = json.load(f)["settings"]["dynamic"]
    if said["temporal_prior"] != "sttv" or abs(said["temporal_lambda"] - DEFAULT_TEMPORAL) > 1e-12:
        raise RuntimeError("larmor-cli's cs defaults are now %s; update DEFAULT_TEMPORAL" % said)
    if not sweeps:
        return
    for prior in ("ttv", "sttv"):
        def run(lam, prior=prior):
            if abs(lam - DEFAULT_TEMPORAL) <= 1e-12:  # the default: the row above
                return default[prior]
            return r.larmor("%s-%s-%g" % (prior, tag, lam), "--method", "cs", "--temporal-prior", prior,
                            "--temporal-lambda", "%g" % lam, *m)
        sweep(run, p[prior])


def larmor_maps(d, cli, n):
    """Larmor's default maps (ESPIRiT of every frame's samples), written for BART: `larmor-cli maps` of the merged
    spokes."""
    sh([cli, "maps", d + "/ksp_all.cfl", "--traj", d + "/traj_all.cfl", "--matrix", n, "--device", "cpu",
        "--output", d + "/lmaps.cfl"])
    return "lmaps"


def best(results, prefix, default=None):
    keys = [k for k in results if k.startswith(prefix)] + ([default] if default else [])
    k = min(keys, key=lambda k: results[k]["nrmse"])
    return k, results[k]["nrmse"]


def verdict(a, b):
    r = a / b
    return "%.3f, %s" % (r, "equal" if abs(r - 1) <= 0.003 else "better" if r < 1 else "worse")


def targets(res, tags):
    """The issue's three targets per maps row, as measured."""
    out = []
    for tag in tags:
        bk, bb = best(res, "bart-T-")
        if tag == "own" and any(k.startswith("bart-lmaps-T-") for k in res):  # the same maps: Larmor's
            out += bart_targets(res, tag, *best(res, "bart-lmaps-T-"))
        cg, ttv, sttv = (res[k + tag]["nrmse"] for k in ("cg60-", "ttv-", "sttv-"))
        out.append({"row": tag, "what": "joint ttv (default) vs frame-by-frame CG (default): >= 40 % lower",
                    "value": 1 - ttv / cg, "ok": ttv <= 0.6 * cg})
        out.append({"row": tag, "what": "joint sttv (Larmor's default) vs frame-by-frame CG: >= 40 % lower",
                    "value": 1 - sttv / cg, "ok": sttv <= 0.6 * cg})
        out += bart_targets(res, tag, bk, bb)
        for name, v in (("ttv", ttv), ("sttv", sttv)):
            if any(k.startswith("%s-%s-" % (name, tag)) for k in res):
                ok, ob = best(res, "%s-%s-" % (name, tag), "%s-%s" % (name, tag))
                out.append({"row": tag, "what": "%s default within 5 %% of its best temporal lambda (%s)" % (name, ok),
                            "value": v / ob, "ok": v <= 1.05 * ob})
    return out


def bart_targets(res, tag, bk, bb):
    out = []
    for name in ("ttv", "sttv"):
        v = res["%s-%s" % (name, tag)]["nrmse"]
        out.append({"row": tag, "what": "joint %s (default) <= BART pics -R T at its best (%s)" % (name, bk),
                    "value": v / bb, "ok": v <= bb, "said": verdict(v, bb)})
    return out


def markdown(cases):
    lines = []
    for cname, c in cases.items():
        res = c["results"]
        lines += ["", "### %s" % c["title"], "", "| method | maps | NRMSE | seconds |", "|---|---|---|---|"]
        for k, v in res.items():
            lines.append("| `%s` | %s | %.4f | %.0f |" % (v["command"], maps_of(k), v["nrmse"], v["seconds"]))
        lines += ["", "| target | maps | measured | met |", "|---|---|---|---|"]
        for t in c["targets"]:
            lines.append("| %s | %s | %.3f%s | %s |" % (t["what"], t["row"], t["value"],
                                                       " (" + t["said"] + ")" if "said" in t else "",
                                                       "yes" if t["ok"] else "**no**"))
    return "\n".join(lines) + "\n"


def run_case(name, d, p, cli, make, rows, reuse, lmaps):
    print("%s: %s" % (name, d), flush=True)
    if reuse and all(cfl.exists(d + "/" + f) for f in ("truth", "ksp", "traj", "maps")):
        truth, facts = series_of(d + "/truth", p["n"]), json.load(open(d + "/facts.json"))
    else:
        facts = make(d)[1]
        truth = series_of(d + "/truth", p["n"])  # as stored (complex64), so a --reuse rescore is the same
        with open(d + "/facts.json", "w") as f:
            json.dump(facts, f)
    r = Runner(d, cli, truth, "ksp.cfl", reuse)
    for maps, tag, sweeps in rows:
        larmor_rows(r, p, maps, tag, sweeps)
    extra = 2 if p is FULL else 0
    sweep(r.bart_tv, p["bart" if lmaps or p is QUICK else "bart_sim"], extra)
    if lmaps:  # BART given Larmor's maps too: which of the two differences is the maps'
        lm = larmor_maps(d, cli, p["n"])
        sweep(lambda lam: r.bart_tv(lam, lm), p["bart"], extra)
    r.bart_l2(p["frames"])
    return r, facts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", default="build/dynamic")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--figure", default="")
    ap.add_argument("--figure-only", action="store_true", help="only the figure, from OUT's results.json")
    ap.add_argument("--case", choices=("all", "bart-phantom", "larmor-simulate"), default="all")
    ap.add_argument("--reuse", action="store_true", help="keep OUT's data and outputs of an earlier run (rescore)")
    a = ap.parse_args()
    p = QUICK if a.quick else FULL
    cli, out = os.path.abspath(a.cli), os.path.abspath(a.out)
    if a.figure_only:
        with open(out + "/results.json") as f:
            results = json.load(f)["cases"]["bart-phantom"]["results"]
        return make_figure(a.figure, out + "/bart-phantom", results, p)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    t0 = time.time()
    cases = load_cases(out)
    if a.case in ("all", "bart-phantom"):
        cases["bart-phantom"] = bart_phantom_case(out, p, cli, a)
    if p["sim"] and a.case in ("all", "larmor-simulate"):
        cases["larmor-simulate"] = larmor_simulate_case(out, p, cli, a)
    write(out, cases, p, time.time() - t0)
    if a.figure:
        make_figure(a.figure, out + "/bart-phantom", cases["bart-phantom"]["results"], p)


def load_cases(out):
    """The cases of an earlier run in OUT (one case may be run alone: --case)."""
    try:
        with open(out + "/results.json") as f:
            return json.load(f)["cases"]
    except (OSError, ValueError, KeyError):
        return {}


def bart_phantom_case(out, p, cli, a):
    d = out + "/bart-phantom"
    rows = [(d + "/maps.cfl", "ecalib", not a.quick), (None, "own", not a.quick)] if not a.quick else \
        [(d + "/maps.cfl", "ecalib", False)]
    r, facts = run_case("bart-phantom", d, p, cli, lambda d: make_bart_case(d, p), rows, a.reuse, not a.quick)
    return {"title": "numpy phantom through BART's NUFFT, %d^2, %d frames x %d spokes, %d coils" %
                             (p["n"], p["frames"], p["spokes"], p["coils"]), "results": r.results, "facts": facts,
            "targets": targets(r.results, [t for _, t, _ in rows])}


def larmor_simulate_case(out, p, cli, a):
    d = out + "/larmor-simulate"
    r, facts = run_case("larmor-simulate", d, p, cli, lambda d: make_larmor_case(d, p, cli), [(None, "own", False)],
                        a.reuse, False)
    return {"title": "larmor-cli simulate --frames %d --traj golden --matrix %d --coils %d --noise %g" %
            (p["frames"], p["n"], p["coils"], p["noise"]), "results": r.results, "facts": facts,
            "targets": targets(r.results, ["own"])}


def maps_of(k):
    return ("Larmor's ESPIRiT" if k.split("-")[1:2] in (["own"], ["lmaps"]) else
            "BART ecalib" if k.startswith("bart") or "ecalib" in k else "")


def write(out, cases, p, seconds):
    md = markdown(cases)
    with open(out + "/results.md", "w") as f:
        runs = sum(v["seconds"] for c in cases.values() for v in c["results"].values())
        f.write("Dynamic contest (%s): the runs took %.0f s (this call %.0f s)\n%s" %
                ("quick" if p is QUICK else "full", runs, seconds, md))
    keep = cases
    with open(out + "/results.json", "w") as f:
        json.dump({"parameters": {k: v for k, v in p.items()}, "iterations": ITERS, "seconds": round(seconds),
                   "cases": keep}, f, indent=1)
    print(md)
    print("wrote %s/results.md, %s/results.json (%.0f s)" % (out, out, seconds))


def make_figure(path, d, results, p):
    """Truth, frame-by-frame CG, Larmor's joint ttv and sttv (defaults, its own maps) and BART's pics -R T at its
    best lambda given the same (Larmor's) maps: every row with one set of maps."""
    n = p["n"]
    truth = series_of(d + "/truth", n)
    bl = best(results, "bart-lmaps-T-")[0]
    keys = ["cg60-own", "ttv-own", "sttv-own", bl]
    rows, labels = [truth], ["TRUTH"]
    for k, label in zip(keys, ["CG FRAMES", "LARMOR TTV", "LARMOR STTV", "BART T " + bl.split("-")[-1]]):
        x = series_of(d + "/" + k, n)
        e, s = nrmse(x, truth)
        rows.append(s * x)
        labels.append("%s\nNRMSE %.3f" % (label, e))
    T = p["frames"]
    frames = [0, T // 4, T // 2, 3 * T // 4, T - 1]
    dynamic_figure.figure(path, truth, rows, labels, frames, dynamic_phantom.wash_mask(n))
    print("wrote " + path)


if __name__ == "__main__":
    main()
