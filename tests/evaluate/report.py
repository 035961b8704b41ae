"""Tables, targets and the figure of a corpus run (results.json -> results.md, evaluation.md, figure.png).

Targets (marked per case, on cases with a truth):
  A. each model-based Larmor default (cg, cs TV, cs wavelet) <= 1.05 x BART's best of its sweep of the matching
     pics (-l2, -R T, -R W), same iteration budget; on noisy (1 %, 3 %) radial and Poisson-disc cases <= 0.90 x
     (at least 10 % better).
  B. the default lambda within 5 % of Larmor's own best lambda of its sweep (oracle): default <= 1.05 x oracle,
     per model-based method (the measure for an automatic lambda).
  C. GRAPPA runs with its defaults on every regularly undersampled Cartesian case (Poisson-disc has no lattice).
The direct rows (zero-filled FFT, gridding) are the same linear operation in both tools: shown, not targeted.
"""
import json
import os
import struct
import zlib

import numpy as np

OUTPUTS = ("results.json", "results.md", "evaluation.md", "figure.png")
IRREGULAR = ("poisson", "real-brain")  # no lattice: GRAPPA does not apply (its runs are still shown)
PAIRS = (("cg", "l2", "pics -l2"), ("cs", "tv", "pics -R T"), ("cs-wavelet", "wavelet", "pics -R W"))
FIGURE_CASES = ("rad-g101-os1-256", "rad-g16-os2-n3", "spi-i4-r3-n1", "poi-a2-c20-n1", "c1d-r4-acs24-n3",
                "ism-r3-w24-n3", "real-brain-poisson", "real-radial-64")


def f4(x):
    return "%.4f" % x if isinstance(x, (int, float)) else "—"


def lam(x):
    return "%.0e" % x if isinstance(x, (int, float)) else "—"


def best_of(s):
    """(nrmse, ssim, time, lambda, at_edge) of a sweep's best point, or None."""
    if not isinstance(s, dict) or s.get("best") is None:
        return None
    r = [r for l, r in s["points"] if l == s["best"]][0]
    return r["nrmse"], r.get("ssim"), r.get("time"), s["best"], s.get("edge", False)


def sweep_error(s):
    if not isinstance(s, dict):
        return None
    errs = [r["error"] for l, r in s.get("points", []) if "error" in r]
    return errs[0] if errs else None


def strict(row):
    return row["noise"] > 0 and row["kind"] in ("radial", "poisson")


def targets(row):
    """{'A': {method: (ok, larmor, bart, factor)}, 'B': {method: (ok, default, oracle)}, 'C': ok or None}."""
    out = {"A": {}, "B": {}, "C": None}
    if row.get("reference") != "truth" or "larmor" not in row:
        return out
    factor = 0.90 if strict(row) else 1.05
    for m, reg, _ in PAIRS:
        l = row["larmor"].get(m, {}).get("nrmse")
        b = best_of(row.get("bart", {}).get(reg))
        o = best_of(row.get("oracle", {}).get(m))
        bn = b[0] if b else None
        out["A"][m] = (l is not None and bn is not None and l <= factor * bn, l, bn, factor)
        if o:  # no sweep run (quick mode): not measured
            out["B"][m] = (l is not None and l <= 1.05 * o[0], l, o[0])
    if row.get("undersampled") and row.get("cartesian") and row["kind"] not in IRREGULAR:
        g = row["larmor"].get("grappa", {})
        out["C"] = "error" not in g and "nrmse" in g
    return out


def mark(ok):
    return "met" if ok else "**not met**"


def one_line(row):
    if "error" in row:
        return "ERROR " + row["error"]
    parts = []
    for m, r in row["larmor"].items():
        parts.append("%s %s" % (m, f4(r.get("nrmse")) if "error" not in r else "error (%s)" % r["error"]))
    for _, reg, name in PAIRS:
        b = best_of(row["bart"].get(reg))
        if b:
            parts.append("%s best %s (%s)" % (name, f4(b[0]), lam(b[3])))
    if "error" in row.get("bart", {}):
        parts.append("BART error (%s)" % row["bart"]["error"])
    return "; ".join(parts) + "; %.0f s" % row.get("seconds", 0)


def cell_larmor(row, m):
    r = row.get("larmor", {}).get(m)
    if r is None:
        return "—"
    if "error" in r:
        return "error: " + r["error"].replace("|", "/")
    o = best_of(row.get("oracle", {}).get(m))
    s = f4(r.get("nrmse"))
    if o:
        s += " (oracle %s at %s%s)" % (f4(o[0]), lam(o[3]), ", edge" if o[4] else "")
    return s


def cell_bart(row, reg):
    b = row.get("bart", {})
    if "error" in b:
        return "error: " + b["error"].replace("|", "/")
    s = b.get(reg)
    best = best_of(s)
    if best:
        return "%s (%s%s)" % (f4(best[0]), lam(best[3]), ", edge" if best[4] else "")
    err = sweep_error(s)
    return "error: " + err.replace("|", "/") if err else "—"


def nrmse_table(rows):
    head = ("| case | data | direct: Larmor / BART | cg (oracle) | BART pics -l2 best (r) | cs TV (oracle) | "
            "BART pics -R T best (λ) | cs wavelet (oracle) | BART pics -R W best (λ) | GRAPPA | A: ≤ factor × BART | "
            "B: default ≤ 1.05 × oracle |")
    lines = [head, "|" + "---|" * 12]
    for row in rows:
        data = "%s; %d², %d coils, noise %g %%" % (row["description"], row["matrix"], row["coils"], row["noise"])
        if row.get("sampled_fraction"):
            data += "; %.1f %% of the grid sampled" % (100 * row["sampled_fraction"])
        elif row.get("samples") and row.get("cartesian") is False:
            data += "; %d samples per coil" % row["samples"]
        if "error" in row:
            lines.append("| %s | %s | error: %s |" % (row["id"], data, row["error"].replace("|", "/")) + " |" * 10)
            continue
        dm = row["direct_method"]
        direct = "%s %s / %s" % (dm, f4(row["larmor"].get(dm, {}).get("nrmse")) if "error" not in row["larmor"].get(dm, {})
                                  else "error", f4(row["bart"].get("direct", {}).get("nrmse")))
        t = targets(row)
        if t["A"]:
            fa = t["A"]["cg"][3]
            a = ", ".join("%s %s" % (m, "✓" if v[0] else "✗") for m, v in t["A"].items())
            a = "×%.2f: %s" % (fa, a)
            b = ", ".join("%s %s" % (m, "✓" if v[0] else "✗") for m, v in t["B"].items()) or "not measured"
        else:
            a = b = "no truth (figure)"
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            row["id"], data, direct, cell_larmor(row, "cg"), cell_bart(row, "l2"), cell_larmor(row, "cs"),
            cell_bart(row, "tv"), cell_larmor(row, "cs-wavelet"), cell_bart(row, "wavelet"),
            cell_larmor(row, "grappa") if "grappa" in row.get("larmor", {}) else "—", a, b))
    return "\n".join(lines)


def ssim_time_table(rows):
    lines = ["| case | SSIM Larmor cg / cs TV / cs wavelet / GRAPPA | SSIM BART best l2 / T / W | "
             "time s Larmor direct / cg / cs TV / cs wavelet / GRAPPA | time s BART maps; best l2 / T / W |",
             "|---|---|---|---|---|"]
    for row in rows:
        if "error" in row:
            lines.append("| %s | — | — | — | — |" % row["id"])
            continue
        L = row["larmor"]

        def ls(m, key):
            r = L.get(m)
            if r is None:
                return "—"
            v = r.get(key)
            return ("%.3f" % v if key == "ssim" else "%.2f" % v) if isinstance(v, (int, float)) else "err"

        bs, bt = [], []
        for _, reg, _ in PAIRS:
            b = best_of(row["bart"].get(reg))
            bs.append("%.3f" % b[1] if b and b[1] is not None else "—")
            bt.append("%.2f" % b[2] if b and b[2] is not None else "—")
        mt = row["bart"].get("maps_time")
        lines.append("| %s | %s | %s | %s | %s; %s |" % (
            row["id"], " / ".join(ls(m, "ssim") for m in ("cg", "cs", "cs-wavelet", "grappa")), " / ".join(bs),
            " / ".join(ls(m, "time") for m in (row["direct_method"], "cg", "cs", "cs-wavelet", "grappa")),
            "%.2f" % mt if isinstance(mt, (int, float)) else "—", " / ".join(bt)))
    return "\n".join(lines)


def headline(rows):
    scored = [r for r in rows if "error" not in r and r.get("reference") == "truth"]
    out = ["Cases: %d (%d with a truth, %d real scans scored against BART, %d whose data could not be made)." % (
        len(rows), len(scored), len([r for r in rows if r.get("reference") == "bart"]),
        len([r for r in rows if "error" in r]))]
    for m, reg, name in PAIRS:
        ratios, met, n = [], 0, 0
        for r in scored:
            t = targets(r)["A"].get(m)
            if t is None:
                continue
            n += 1
            met += bool(t[0])
            if t[1] is not None and t[2]:
                ratios.append((t[1] / t[2], r["id"]))
        if ratios:
            ratios.sort()
            med = ratios[len(ratios) // 2][0]
            out.append("- Larmor %s defaults against BART's best %s: target A met on %d of %d cases; NRMSE ratio "
                       "Larmor / BART median %.2f, best %.2f (%s), worst %.2f (%s)." % (
                           m, name, met, n, med, ratios[0][0], ratios[0][1], ratios[-1][0], ratios[-1][1]))
        else:
            out.append("- Larmor %s: no case scored against BART." % m)
    for m, _, _ in PAIRS:
        b = [targets(r)["B"].get(m) for r in scored]
        b = [x for x in b if x]
        ok = sum(bool(x[0]) for x in b)
        out.append("- Larmor %s default within 5 %% of its oracle λ (target B): %d of %d cases." % (m, ok, len(b)))
    c = [targets(r)["C"] for r in scored if targets(r)["C"] is not None]
    out.append("- GRAPPA with its defaults ran on %d of %d regularly undersampled Cartesian cases (target C)." % (
        sum(c), len(c)))
    both = [r for r in scored if targets(r)["A"] and all(v[0] for v in targets(r)["A"].values())]
    out.append("- Cases where every model-based default meets target A: %d of %d." % (len(both), len(scored)))
    return "\n".join(out)


def real_table(rows):
    real = [r for r in rows if r.get("reference") == "bart" or r["kind"].startswith("real")]
    if not real:
        return "(no real scans in this run)"
    lines = ["| case | data | NRMSE / SSIM to BART's pics -l2 image: direct | cg | cs TV | cs wavelet | GRAPPA |",
             "|---|---|---|---|---|---|---|"]
    for row in real:
        if "error" in row:
            lines.append("| %s | %s | error: %s | | | | |" % (row["id"], row["description"], row["error"]))
            continue
        if "error" in row.get("bart", {}):
            lines.append("| %s | %s | BART error: %s | | | | |" % (row["id"], row["description"], row["bart"]["error"]))
            continue

        def c(m):
            r = row["larmor"].get(m)
            if r is None:
                return "—"
            if "error" in r:
                return "error: " + r["error"].replace("|", "/")
            return "%s / %.3f" % (f4(r.get("nrmse")), r.get("ssim", float("nan")))

        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
            row["id"], row["description"], c(row["direct_method"]), c("cg"), c("cs"), c("cs-wavelet"), c("grappa")))
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------- figure --
def png_gray(path, img):
    """8-bit greyscale PNG (zlib only)."""
    h, w = img.shape
    raw = b"".join(b"\x00" + img[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def tile(path, size, vmax):
    from scipy.ndimage import zoom

    if path is None or not os.path.exists(path):
        return np.full((size, size), 40.0)
    img = np.load(path).T  # rows: the second image axis
    s = max(img.shape)
    pad = np.zeros((s, s), dtype=np.float32)
    pad[(s - img.shape[0]) // 2:(s - img.shape[0]) // 2 + img.shape[0],
        (s - img.shape[1]) // 2:(s - img.shape[1]) // 2 + img.shape[1]] = img
    z = zoom(pad, size / float(s), order=1)[:size, :size]
    return np.clip(z / vmax, 0, 1) * 255


COLUMNS = ("truth", "larmor_cg", "larmor_cs", "bart_l2", "bart_tv")


def figure(rows, out):
    shown = [r for r in rows if r.get("figure") and os.path.exists(r["figure"].get("truth", ""))]
    chosen = [r for r in shown if r["id"] in FIGURE_CASES] or shown[:4]
    if not chosen:
        return None
    size, gap = 160, 4
    canvas = np.full((len(chosen) * (size + gap) + gap, len(COLUMNS) * (size + gap) + gap), 255.0)
    for i, r in enumerate(chosen):
        truth = np.load(r["figure"]["truth"])
        vmax = float(truth.max()) or 1.0
        for j, col in enumerate(COLUMNS):
            y, x = gap + i * (size + gap), gap + j * (size + gap)
            canvas[y:y + size, x:x + size] = tile(r["figure"].get(col), size, vmax)
    path = os.path.join(out, "figure.png")
    png_gray(path, canvas)
    return [r["id"] for r in chosen]


def maps_table(results):
    """Larmor's ESPIRiT maps against BART's ecalib -m1 of the same data and against ecalib -m1 of the fully sampled
    Cartesian k-space (the maps the data should give), BART's own maps against that too."""
    rows = [r for r in results["cases"] if r.get("maps")]
    if not rows:
        return ""
    when = results.get("maps_run")
    lines = ["", "## Coil maps against BART", "",
             "Magnitude correlation over all coils: Larmor's default maps (`larmor-cli maps`, ESPIRiT) against BART's "
             "`ecalib -m1` of the same data inside BART's mask (target >= 0.99), and, where the case has its fully "
             "sampled Cartesian k-space, Larmor's and BART's maps against `ecalib -m1` of that inside its mask; "
             "support: the fraction of the FOV where the maps are not zero (the crop)." +
             (" Measured %s at commit %s (`run.py --maps-only`)." % (when["date"][:10], when["commit"]) if when else ""),
             "", "| case | Larmor vs BART | target | Larmor vs full | BART vs full | support Larmor / BART / full |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        m = r["maps"]
        if "error" in m:
            lines.append("| %s | %s | | | | |" % (r["id"], m["error"]))
            continue
        full = lambda k: "%.4f" % m[k] if k in m else ""
        lines.append("| %s | %.4f | %s | %s | %s | %.2f / %.2f / %s |" % (
            r["id"], m["bart"], mark(m["bart"] >= 0.99), full("full"), full("bart_full"), m["larmor_support"],
            m["bart_support"], "%.2f" % m["full_support"] if "full_support" in m else ""))
    ok = [r for r in rows if "error" not in r["maps"]]
    met = lambda group: sum(1 for r in group if r["maps"]["bart"] >= 0.99)
    cart = [r for r in ok if r.get("cartesian")]
    non = [r for r in ok if not r.get("cartesian")]
    full = [r for r in ok if "full" in r["maps"]]
    closer = sum(1 for r in full if r["maps"]["full"] >= r["maps"]["bart_full"])
    lines += ["", "Larmor vs BART >= 0.99 on %d of %d cases: Cartesian %d of %d, non-Cartesian %d of %d. Against the "
              "fully sampled data's maps Larmor's are at least as close as BART's on %d of %d cases." % (
                  met(ok), len(rows), met(cart), len(cart), met(non), len(non), closer, len(full))]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------------- output --
def write_all(results, out):
    rows = results["cases"]
    fig = figure(rows, out)
    results["figure_cases"] = fig
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=float)
    tables = ("## Headline\n\n" + headline(rows) + "\n\n## NRMSE against the truth\n\n" + nrmse_table(
        [r for r in rows if r.get("reference") != "bart"]) + "\n\n## Real scans (no truth)\n\n" + real_table(rows) +
        "\n\n## SSIM and time\n\n" + ssim_time_table(rows) + "\n" + maps_table(results))
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(tables)
    import doc

    with open(os.path.join(out, "evaluation.md"), "w") as f:
        f.write(doc.render(results, tables, fig))
