"""The evaluation corpus: a designed list, not the cross product. Every axis is covered at least twice: trajectory
(radial with the readout oversampled x1 and x2, golden / linear / tiny-golden angles, three spoke counts per
matrix; spiral; Cartesian 1D with ACS; 2 x 2 with a centre; Poisson-disc; partial Fourier; the ISMRMRD generator;
real scans), noise 0 / 1 / 3 % (generate.py defines it), 4 / 8 / 16 coils, matrices 128 and 256.

BART 0.8's phantom has at most 8 coils: the 16-coil cases take the ISMRMRD generator's fully sampled noiseless
k-space (source="ismrmrd"), undersampled and made noisy as the others; non-Cartesian cases have 4 or 8 coils.
Radial spoke counts against the Nyquist count pi/2 N (201 at 128, 402 at 256): 64 / 32 / 16 spokes at 128
(R ~3, 6, 13), 101 / 51 / 25 at 256 (R ~4, 8, 16).
`e2e`: the subset `make test` runs (tests/evaluate/subset.sh), small and quick.
"""


def case(cid, kind, matrix, coils, noise, e2e=False, **params):
    return {"id": cid, "kind": kind, "matrix": matrix, "coils": coils, "noise": noise, "params": params, "e2e": e2e}


CASES = [
    # radial: readout oversampling (os), angle order, spokes
    case("rad-g32-os1", "radial", 128, 8, 0, os=1, angles="golden", spokes=32),
    case("rad-g32-os2", "radial", 128, 8, 0, os=2, angles="golden", spokes=32, e2e=True),
    case("rad-g64-os1-n1", "radial", 128, 8, 1, os=1, angles="golden", spokes=64),
    case("rad-g16-os1", "radial", 128, 8, 0, os=1, angles="golden", spokes=16),
    case("rad-l64-os2", "radial", 128, 4, 0, os=2, angles="linear", spokes=64),
    case("rad-l32-os1-n3", "radial", 128, 4, 3, os=1, angles="linear", spokes=32),
    case("rad-g16-os2-n3", "radial", 128, 8, 3, os=2, angles="golden", spokes=16),
    case("rad-t48-os1-n1", "radial", 128, 8, 1, os=1, angles="tiny", spokes=48),
    case("rad-g101-os1-256", "radial", 256, 8, 0, os=1, angles="golden", spokes=101),
    # spiral (numpy trajectory, BART k-space)
    case("spi-i8-r2", "spiral", 128, 8, 0, interleaves=8, r=2),
    case("spi-i4-r3-n1", "spiral", 128, 8, 1, interleaves=4, r=3),
    # Cartesian 1D with an ACS block ([readout, pe1])
    case("c1d-r2-acs24", "cart1d", 128, 8, 0, r=2, acs=24, e2e=True),
    case("c1d-r3-acs24-n1", "cart1d", 128, 4, 1, r=3, acs=24),
    case("c1d-r4-acs24-n3", "cart1d", 128, 8, 3, r=4, acs=24),
    case("c1d-r4-acs32-256", "cart1d", 256, 8, 0, r=4, acs=32),
    # 2 x 2 with a fully sampled centre, a ky-kz plane [1, pe1, pe2]
    case("p2x2-c20", "plane2x2", 128, 8, 0, acs=20),
    case("p2x2-c20-n1", "plane2x2", 128, 4, 1, acs=20),
    case("p2x2-c20-16-n3", "plane2x2", 128, 16, 3, acs=20, source="ismrmrd"),
    # Poisson-disc (bart poisson -v -e, a calibration centre), ky-kz plane
    case("poi-a2-c20", "poisson", 128, 8, 0, a=2, acs=20),
    case("poi-a2-c20-n1", "poisson", 128, 8, 1, a=2, acs=20, e2e=True),
    case("poi-a3-c16-n3", "poisson", 128, 4, 3, a=3, acs=16),
    case("poi-a2.5-c20-16-n3", "poisson", 128, 16, 3, a=2.5, acs=20, source="ismrmrd"),
    case("poi-a2-c24-256-16-n1", "poisson", 256, 16, 1, a=2, acs=24, source="ismrmrd"),
    # partial Fourier along pe1 (alone, and with R 2 + ACS)
    case("pf58", "pf", 128, 8, 0, fraction=0.625),
    case("pf68-r2-n1", "pf", 128, 8, 1, fraction=0.75, r=2, acs=24),
    case("pf58-256-n3", "pf", 256, 4, 3, fraction=0.625),
    # ismrmrd_generate_cartesian_shepp_logan (readout oversampled x2, R shifted repetitions: repetition 0)
    case("ism-r1-n1", "ismrmrd", 128, 8, 1, r=1),
    case("ism-r2-w24", "ismrmrd", 128, 8, 0, r=2, acs=24),
    case("ism-r3-w24-n3", "ismrmrd", 128, 4, 3, r=3, acs=24),
    case("ism-r4-w32-256-n1", "ismrmrd", 256, 16, 1, r=4, acs=32),
    # real scans (../shared/data): no truth, scored against BART's pics -l2 image
    case("real-brain-poisson", "real-brain", 230, 8, 0),
    case("real-radial-64", "real-radial", 256, 4, 0, stride=4),
]


def select(subset, ids):
    chosen = CASES
    if subset == "e2e":
        chosen = [c for c in CASES if c["e2e"]]
    if ids:
        want = set(ids)
        unknown = want - {c["id"] for c in CASES}
        if unknown:
            raise SystemExit("evaluate: unknown case id(s): " + ", ".join(sorted(unknown)))
        chosen = [c for c in chosen if c["id"] in want]
    return chosen


def describe(c):
    text = _describe(c)
    return text + " (ISMRMRD generator's object)" if c["params"].get("source") == "ismrmrd" else text


def _describe(c):
    p, k = c["params"], c["kind"]
    if k == "radial":
        ang = {"golden": "golden", "linear": "linear", "tiny": "tiny golden (7)"}[p["angles"]]
        return "radial %s, %d spokes, readout x%d" % (ang, p["spokes"], p["os"])
    if k == "spiral":
        return "spiral, %d interleaves, R %g" % (p["interleaves"], p["r"])
    if k == "cart1d":
        return "Cartesian 1D R %d, ACS %d" % (p["r"], p["acs"])
    if k == "plane2x2":
        return "2x2, %dx%d centre" % (p["acs"], p["acs"])
    if k == "poisson":
        return "Poisson-disc %gx%g, %d centre" % (p["a"], p["a"], p["acs"])
    if k == "pf":
        extra = ", R %d ACS %d" % (p["r"], p["acs"]) if p.get("r", 1) > 1 else ""
        return "partial Fourier %g pe1%s" % (p["fraction"], extra)
    if k == "ismrmrd":
        return "ISMRMRD generator, R %d%s" % (p["r"], ", ACS %d" % p["acs"] if p.get("acs") else "")
    if k == "real-brain":
        return "real brain, Poisson-disc plane 180x230"
    if k == "real-radial":
        return "real radial twix, %d spokes" % (256 // p["stride"])
    return k
