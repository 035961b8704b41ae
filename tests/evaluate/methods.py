"""The reconstructions of one case: Larmor (`larmor-cli recon ... --device cpu`) with its defaults and over a lambda
sweep (its oracle), and BART 0.8 with the same iteration budget and density compensation over a sweep of its own
parameter. A run that fails is returned as {"error": one line}, never raised.

BART's recipe (as tests/e2e/bart_pics.sh): maps `ecalib -m1` of the k-space (non-Cartesian: of the gridded k-space,
`nufft -i -l 0.01` then `fft -u`); `pics -e -S` (-e: the step scaled by the operator's largest eigenvalue, without which
BART 0.8's FISTA diverges on non-Cartesian data) with `-l2 -r L` against Larmor's cg, `-R T:F:0:L` against cs TV,
`-R W:F:0:L` against cs wavelet, `-i` Larmor's iteration count of that method (read from its JSON). Neither tool
weights the data term of cg / cs (no density compensation in the model). The zero-filled FFT's counterpart is
`bart fft -i` + `rss`; gridding's is `bart nufft -a` of the data weighted by w = |k| |dk| |cos(angle(dk) - angle(k))| (the Jacobian of
rotated arms: the |k| ramp on radial spokes, Larmor's radial default; Larmor's spiral default is Pipe-Menon, so
the spiral gridding rows differ in DCF).

Sweeps: a fixed log grid (SWEEPS, NARROW_SWEEPS), extended by up to two steps past an edge while the best value
sits at that edge.
"""
import json
import os
import subprocess
import time

import numpy as np

import cfl
import metrics
from generate import CaseError, bart

# log10 of lambda: (first, step, count). Cartesian cases (cheap) get 5 points; non-Cartesian ones 3 points around
# the same centre (their BART pics calls take 2-30 s each on two cores); both extend up to 2 steps past an edge.
SWEEPS = {"bart-l2": (-5, 1, 5), "bart-tv": (-4, 0.5, 5), "bart-wavelet": (-4, 0.5, 5),
          "larmor-cg": (-4, 1, 5), "larmor-cs": (-4.5, 0.5, 5), "larmor-cs-wavelet": (-4.5, 0.5, 5)}
NARROW_SWEEPS = {k: (s + st, st, 3) for k, (s, st, n) in SWEEPS.items()}
TIMEOUT = 600
# BART's inverse NUFFT for the maps' calibration grid takes a small l2 term: without one it diverges on the 4-arm
# spiral (maps of noise, pics NRMSE 0.93); on the radial cases it moves pics' scores by under 2 %.
MAPS_GRID_L2 = 0.01


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else ""


def score(img, ref):
    return {"nrmse": metrics.nrmse(img, ref), "ssim": metrics.ssim(img, ref)}


class Case:
    """Where a case's files are, what the runners need (generate.make's info) and its reference image."""

    def __init__(self, d, spec, info, cli):
        self.d, self.spec, self.info, self.cli = d, spec, info, cli
        self.ref = info["truth"]
        self.iters = {}

    def path(self, name):
        return os.path.join(self.d, name)

    def image(self, base, crop=None):
        img = cfl.image2d(self.path(base))
        if crop:  # BART's image of readout-oversampled data: the central readout half
            lo = (img.shape[0] - crop) // 2
            img = img[lo:lo + crop]
        return img

    def scored(self, base, crop=None):
        img = self.image(base, crop)
        return score(img, self.ref) if self.ref is not None else {}

    def rescore(self, res, crop=None):
        """Scores a finished run once the reference exists (real scans: BART's image, made after Larmor's runs)."""
        if "output" in res and "error" not in res and "nrmse" not in res and self.ref is not None:
            try:
                res.update(self.scored(res["output"], crop))
            except (RuntimeError, ValueError) as e:
                res["error"] = "score: %s" % e


def larmor(case, tag, method, extra=()):
    """One larmor-cli recon; returns {nrmse, ssim, time, iterations, lambda} or {error}."""
    out = "l_" + tag
    cmd = [case.cli, "recon", case.info["larmor_input"]] + case.info["larmor_args"] + ["--method", method] + \
        list(extra) + ["--device", "cpu", "--output", out + ".cfl", "--json", out + ".json"]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, cwd=case.d, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": "larmor-cli: no result in %d s" % TIMEOUT}
    dt = time.monotonic() - t0
    if r.returncode != 0:
        msg = last_line(r.stderr) or last_line(r.stdout) or "exit %d" % r.returncode
        return {"error": msg if msg.startswith("larmor-cli") else "larmor-cli: " + msg}
    res = {"time": dt, "output": out}
    res.update(run_facts(case.path(out + ".json")))
    try:
        res.update(case.scored(out))
    except (RuntimeError, ValueError) as e:
        return {"error": "score: %s" % e, "time": dt}
    return res


def run_facts(json_path):
    """Iterations budget and lambda from Larmor's JSON (its settings and convergence record), where present."""
    facts = {}
    try:
        with open(json_path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return facts

    def find(node, key):
        if isinstance(node, dict):
            if key in node:
                return node[key]
            for v in node.values():
                got = find(v, key)
                if got is not None:
                    return got
        elif isinstance(node, list):
            for v in node:
                got = find(v, key)
                if got is not None:
                    return got
        return None

    it = j.get("settings", {}).get("iterative", {}).get("iterations")
    if isinstance(it, int):
        facts["budget"] = it
    conv = find(j, "convergence")
    lam = find(conv, "lambda") if conv is not None else None
    if isinstance(lam, (int, float)):
        facts["lambda"] = lam
    done = find(conv, "iterations") if conv is not None else None
    if isinstance(done, int):
        facts["iterations"] = done
    return facts


def bart_timed(case, args):
    t0 = time.monotonic()
    bart(args, case.d)
    return time.monotonic() - t0


def bart_maps(case):
    """`ecalib -m1` maps (non-Cartesian: of the gridded k-space); returns the seconds it took."""
    t = 0.0
    if case.info["bart_traj"]:
        n = case.spec["matrix"]
        t += bart_timed(case, ["nufft", "-i", "-l", MAPS_GRID_L2, "-d", "%d:%d:1" % (n, n), case.info["bart_traj"], "k",
                               "b_grid"])
        t += bart_timed(case, ["fft", "-u", 3, "b_grid", "b_kgrid"])
        t += bart_timed(case, ["ecalib", "-m1", "b_kgrid", "b_maps"])
    else:
        t += bart_timed(case, ["ecalib", "-m1", "k", "b_maps"])
    return t


def bart_pics(case, tag, reg, lam, iters):
    flags = case.info["reg_flags"]
    r = {"l2": ["-l2", "-r", lam], "tv": ["-R", "T:%d:0:%g" % (flags, lam)],
         "wavelet": ["-R", "W:%d:0:%g" % (flags, lam)]}[reg]
    traj = ["-t", case.info["bart_traj"]] if case.info["bart_traj"] else []
    out = "b_" + tag
    try:
        dt = bart_timed(case, ["pics", "-e", "-S"] + r + ["-i", iters] + traj + ["k", "b_maps", out])
        res = {"time": dt, "output": out}
        res.update(case.scored(out, case.info["bart_crop"]))
        return res
    except (CaseError, RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
        return {"error": "bart pics: %s" % e}


def bart_direct(case):
    """BART's zero-filled FFT (Cartesian) or density-compensated adjoint NUFFT (non-Cartesian), root sum of squares."""
    try:
        t0 = time.monotonic()
        if case.info["bart_traj"]:
            tr = cfl.read(case.path(case.info["bart_traj"]))
            cfl.write(case.path("b_dcf"), meyer_weights(tr))
            bart(["fmac", "k", "b_dcf", "b_kw"], case.d)
            n = case.spec["matrix"]
            bart(["nufft", "-a", "-d", "%d:%d:1" % (n, n), case.info["bart_traj"], "b_kw", "b_adj"], case.d)
        else:
            bart(["fft", "-i", 6 if case.info["reg_flags"] == 6 else 3, "k", "b_adj"], case.d)
        bart(["rss", 8, "b_adj", "b_direct"], case.d)
        res = {"time": time.monotonic() - t0, "output": "b_direct"}
        res.update(case.scored("b_direct", case.info["bart_crop"]))
        return res
    except (CaseError, RuntimeError, ValueError) as e:
        return {"error": "bart: %s" % e}


def meyer_weights(traj):
    """Area per sample of arms that are rotated copies of one another: |dk/dt x dk/dphi| = |k| |dk| |cos(angle(dk) -
    angle(k))| (the ramp |k| |dk| on a radial spoke; the radial step times the circumference on a spiral arm)."""
    t = np.real(traj).reshape(3, traj.shape[1], -1)
    k = t[0] + 1j * t[1]
    dk = np.gradient(k, axis=0)
    w = np.abs(k) * np.abs(dk) * np.abs(np.cos(np.angle(dk) - np.angle(k)))
    zero = np.abs(k) < 1e-9
    w[zero] = 0.25 * np.abs(dk[zero]) ** 2  # k = 0: a quarter of its neighbour's weight on a spoke
    return w.reshape(1, t.shape[1], t.shape[2]).astype(np.complex64)


def grid(spec):
    start, step, count = spec
    return [start + i * step for i in range(count)], step


def sweep(run_at, spec, max_extra=2):
    """run_at(lam) -> result dict. Evaluates the grid, then extends past an edge holding the best (up to max_extra).
    Returns {"points": [[lam, result], ...], "best": lam or None, "edge": bool}."""
    exps, step = grid(spec)
    points = {e: run_at(10.0 ** e) for e in exps}

    def best():
        ok = [(r["nrmse"], e) for e, r in points.items() if "nrmse" in r and np.isfinite(r["nrmse"])]
        return min(ok)[1] if ok else None

    for _ in range(max_extra):
        b = best()
        if b is None:
            break
        lo, hi = min(points), max(points)
        if b == lo:
            e = lo - step
        elif b == hi:
            e = hi + step
        else:
            break
        points[e] = run_at(10.0 ** e)
    b = best()
    edge = b is not None and b in (min(points), max(points))
    return {"points": [[10.0 ** e, points[e]] for e in sorted(points)],
            "best": 10.0 ** b if b is not None else None, "edge": edge}


def _magnitude_correlation(a, b, mask):
    x, y = np.abs(a)[mask].ravel(), np.abs(b)[mask].ravel()
    return float(np.corrcoef(x, y)[0, 1]) if x.size > 1 and x.std() > 0 and y.std() > 0 else 0.0


def _common(a, b):
    """The central part of the larger of two map arrays [x, y, coils] (readout oversampling), so both match."""
    sl = tuple(slice((p - q) // 2, (p - q) // 2 + q) if p > q else slice(None) for p, q in zip(a.shape, b.shape))
    return a[sl]


def _maps(path):
    m = np.squeeze(cfl.read(path))
    return m if m.ndim == 3 else m.reshape(m.shape[0], m.shape[1], -1)


def maps_agreement(case):
    """Larmor's default coil maps (`larmor-cli maps`, ESPIRiT) against BART's `ecalib -m1` maps of the same data
    (b_maps: non-Cartesian of the gridded k-space) and, where the case has the fully sampled Cartesian k-space (kc),
    both against `ecalib -m1` of that: magnitude correlation over every coil inside the other side's mask (where its
    maps are not zero), and each side's support (the fraction of the FOV where its maps are not zero)."""
    args, keep = case.info["larmor_args"], []
    for i in range(0, len(args) - 1, 2):
        if args[i] in ("--traj", "--matrix", "--repetition"):
            keep += args[i:i + 2]
    try:
        r = subprocess.run([case.cli, "maps", case.info["larmor_input"]] + keep +
                           ["--output", "l_maps.cfl", "--device", "cpu"], cwd=case.d, capture_output=True, text=True,
                           timeout=TIMEOUT)
        if r.returncode != 0:
            return {"error": last_line(r.stderr) or "larmor-cli maps: exit %d" % r.returncode}
        if not os.path.exists(case.path("b_maps.cfl")):
            return {"error": "no BART maps"}
        lm, bm = _maps(case.path("l_maps")), _maps(case.path("b_maps"))
        lm, bm = _common(lm, bm), _common(bm, lm)
        if lm.shape != bm.shape:
            return {"error": "maps of different shapes %s and %s" % (lm.shape, bm.shape)}
        support = lambda m: np.sqrt((np.abs(m) ** 2).sum(-1)) > 0
        out = {"bart": _magnitude_correlation(lm, bm, support(bm)), "larmor_support": float(support(lm).mean()),
               "bart_support": float(support(bm).mean())}
        if os.path.exists(case.path("kc.cfl")):
            bart(["ecalib", "-m1", "kc", "r_maps"], case.d)
            rm = _maps(case.path("r_maps"))
            rm = _common(rm, lm)
            if rm.shape == lm.shape:
                inside = support(rm)
                out.update(full=_magnitude_correlation(lm, rm, inside),
                           bart_full=_magnitude_correlation(bm, rm, inside), full_support=float(inside.mean()))
        return out
    except (CaseError, RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as e:
        return {"error": "maps: %s" % e}
