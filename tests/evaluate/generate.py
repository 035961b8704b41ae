"""Make one corpus case's data and its truth, with tools we did not write: BART (`traj`, `phantom`, `upat`, `poisson`,
`twixread`), `ismrmrd_generate_cartesian_shepp_logan`, and the real scans of ../shared/data.

Truth (synthetic cases): the band-limited image of the same object and coils on the case's matrix: BART's Cartesian
k-space of the phantom (`bart phantom -k -s C -x N`), centred inverse FFT, root sum of squares over the coils; for
the ISMRMRD generator the RSS of its noiseless coil images (their FFT is the file's k-space), central readout half.
Real scans have no truth: they are scored against BART's `pics -l2` image (reference "bart").

Noise at p % (complex Gaussian, fixed seed per case, E|n|^2 = sigma^2): sigma = p/100 x the RMS of the noiseless,
fully sampled Cartesian k-space of the same object and coils on the case's matrix (for the ISMRMRD generator: of
its fully sampled noiseless k-space, readout oversampling included). The same sigma per sample whatever the
trajectory, as a scanner's receiver noise is. Added only where samples were acquired.

The spiral trajectory is made here (numpy; BART 0.8's `traj -s` is a tiny golden angle, not a spiral): I
interleaved arms reaching |k| = N/2, variable density (Nyquist inside |k| < N/8, the turns' spacing growing to
R x Nyquist half way out), samples 0.5 apart along the arm; BART computes its k-space (`bart phantom -k -t`).
"""
import os
import subprocess
import zlib

import numpy as np

import cfl
import ismrmrd_text


class CaseError(RuntimeError):
    pass


def run(cmd, cwd, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        last = (r.stderr.strip() or r.stdout.strip() or "exit %d" % r.returncode).splitlines()[-1]
        raise CaseError("%s: %s" % (" ".join(cmd[:2]), last))
    return r.stdout


def bart(args, cwd):
    return run(["bart"] + [str(a) for a in args], cwd)


def rss(coil_images, axis=-1):
    return np.sqrt(np.sum(np.abs(coil_images) ** 2, axis=axis))


def ifft2c(k):
    """Centred inverse 2D FFT over the first two axes."""
    ax = (0, 1)
    return np.fft.fftshift(np.fft.ifft2(np.fft.ifftshift(k, axes=ax), axes=ax), axes=ax)


def seed_of(case_id):
    return zlib.crc32(case_id.encode())


def add_noise(k, sigma, mask, seed):
    rng = np.random.default_rng(seed)
    n = (rng.standard_normal(k.shape) + 1j * rng.standard_normal(k.shape)) * (sigma / np.sqrt(2))
    return (k + n * mask).astype(np.complex64)


def fft2c(x):
    ax = (0, 1)
    return np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(x, axes=ax), axes=ax), axes=ax)


def object_flags(c):
    """`bart phantom`'s object: Shepp-Logan (the evaluation corpus), or for the tuning corpus (tune.py) BART's tubes
    (-T), geometric object (-G) or random tubes (-N 8 with the case's seed)."""
    obj = c["params"].get("object", "shepp")
    flags = {"shepp": [], "tubes": ["-T"], "geometric": ["-G"], "random": ["-N", 8, "-r", seed_of(c["id"]) % 1000]}
    if obj not in flags:
        raise CaseError("unknown object " + obj)
    return flags[obj]


def cartesian_phantom(d, n, coils, source="bart", flags=()):
    """Fully sampled Cartesian k-space [N, N, 1, C] of the phantom and its band-limited RSS truth [N, N]: BART's
    (at most 8 coils: BART 0.8's MAX_COILS) or the ISMRMRD generator's (noiseless, its readout oversampling
    removed: the central N of the inverse FFT along the readout, transformed back)."""
    if source == "ismrmrd":
        run(["ismrmrd_generate_cartesian_shepp_logan", "-m", str(n), "-c", str(coils), "-n", "0", "-o", "full.h5"], d)
        img = ifft2c(ismrmrd_text.kspace(os.path.join(d, "full.h5"), n)[:, :, 0, :])
        lo = (img.shape[0] - n) // 2
        img = img[lo:lo + n]
        return fft2c(img)[:, :, None, :], rss(img)
    bart(["phantom", "-k", "-s", coils] + list(flags) + ["-x", n, "kc"], d)
    kc = cfl.read(os.path.join(d, "kc")).reshape(n, n, 1, coils)
    return kc, rss(ifft2c(kc[:, :, 0, :]))


def spiral(n, interleaves, r):
    """[3, samples, interleaves]: variable density, the turns of all arms 1 apart (Nyquist) inside |k| < N/8,
    their spacing growing linearly to r at |k| = N/4 + N/8 (half way out) and r beyond."""
    kmax, kc = n / 2.0, n / 8.0
    k = np.linspace(0, kmax, 20000)
    spacing = 1 + (r - 1) * np.clip((k - kc) / ((kmax - kc) / 2), 0, 1)
    dtheta = 2 * np.pi / (interleaves * spacing)
    theta = np.concatenate([[0], np.cumsum(0.5 * (dtheta[1:] + dtheta[:-1]) * np.diff(k))])
    arc = np.concatenate([[0], np.cumsum(np.hypot(np.diff(k), k[1:] * np.diff(theta)))])
    ns = int(np.ceil(arc[-1] / 0.5)) + 1  # samples 0.5 apart along the arm
    s = np.linspace(0, arc[-1], ns)
    ks, ts = np.interp(s, arc, k), np.interp(s, arc, theta)
    traj = np.zeros((3, ns, interleaves))
    for i in range(interleaves):
        phi = ts + 2 * np.pi * i / interleaves
        traj[0, :, i] = ks * np.cos(phi)
        traj[1, :, i] = ks * np.sin(phi)
    return traj


def radial_traj(d, c):
    n, p = c["matrix"], c["params"]
    flags = {"golden": ["-G"], "linear": [], "tiny": ["-s", 7]}[p["angles"]]
    if p["os"] == 1:
        bart(["traj", "-r", "-x", n, "-y", p["spokes"]] + flags + ["traj"], d)
    else:
        bart(["traj", "-r", "-x", 2 * n, "-y", p["spokes"]] + flags + ["traj_os"], d)
        bart(["scale", 0.5, "traj_os", "traj"], d)


def noncartesian(d, c, info):
    n, coils = c["matrix"], c["coils"]
    if c["kind"] == "radial":
        radial_traj(d, c)
    else:
        cfl.write(os.path.join(d, "traj"), spiral(n, c["params"]["interleaves"], c["params"]["r"]))
    bart(["phantom", "-k", "-s", coils] + object_flags(c) + ["-t", "traj", "k0"], d)
    kc, truth = cartesian_phantom(d, n, coils, flags=object_flags(c))
    k0 = cfl.read(os.path.join(d, "k0"))
    sigma = c["noise"] / 100.0 * np.sqrt(np.mean(np.abs(kc) ** 2))
    cfl.write(os.path.join(d, "k"), add_noise(k0, sigma, 1.0, seed_of(c["id"])))
    info.update(larmor_input="k.cfl", larmor_args=["--traj", "traj.cfl", "--matrix", str(n)], bart_traj="traj",
                truth=truth, cartesian=False, samples=int(k0.shape[1] * k0.shape[2]))


def cartesian_mask(d, c):
    """Sampling mask [pe1, pe2] (pe2 = 1 for 1D) and whether the data are a ky-kz plane."""
    n, p, kind = c["matrix"], c["params"], c["kind"]
    if kind == "cart1d":
        bart(["upat", "-Y", n, "-Z", 1, "-y", p["r"], "-z", 1, "-c", p["acs"], "mask"], d)
        return cfl.read(os.path.join(d, "mask")).real.reshape(n, 1), False
    if kind == "plane2x2":
        bart(["upat", "-Y", n, "-Z", n, "-y", 2, "-z", 2, "-c", p["acs"], "mask"], d)
        return cfl.read(os.path.join(d, "mask")).real.reshape(n, n), True
    if kind == "poisson":
        bart(["poisson", "-Y", n, "-Z", n, "-y", p["a"], "-z", p["a"], "-C", p["acs"], "-v", "-e", "-s",
              seed_of(c["id"]) % 1000, "mask"], d)
        return cfl.read(os.path.join(d, "mask")).real.reshape(n, n), True
    if kind == "pf":  # the first `fraction` of pe1 kept (the centre N/2 inside), optionally R-fold with an ACS block
        m = np.ones((n, 1))
        if p.get("r", 1) > 1:
            bart(["upat", "-Y", n, "-Z", 1, "-y", p["r"], "-z", 1, "-c", p["acs"], "mask"], d)
            m = cfl.read(os.path.join(d, "mask")).real.reshape(n, 1)
        m[int(round(p["fraction"] * n)):] = 0
        return m, False
    raise CaseError("unknown Cartesian kind " + kind)


def cartesian(d, c, info):
    n, coils = c["matrix"], c["coils"]
    kc, truth = cartesian_phantom(d, n, coils, c["params"].get("source", "bart"), object_flags(c))
    mask, plane = cartesian_mask(d, c)
    sigma = c["noise"] / 100.0 * np.sqrt(np.mean(np.abs(kc) ** 2))
    if plane:  # a BART ky-kz plane [1, N, N, C] (readout already transformed), as tests/e2e/bart_pics.sh
        k = np.transpose(kc, (2, 0, 1, 3)) * mask[None, :, :, None]
        m = np.broadcast_to(mask[None, :, :, None], k.shape)
    else:  # [readout, pe1, 1, C], pe1 undersampled
        k = kc * mask[None, :, :, None]
        m = np.broadcast_to(mask[None, :, :, None], k.shape)
    k = add_noise(k, sigma, m, seed_of(c["id"]))
    cfl.write(os.path.join(d, "k"), k)
    info.update(larmor_input="k.cfl", larmor_args=[], reg_flags=6 if plane else 3, truth=truth, cartesian=True,
                undersampled=c["params"].get("r", 1) > 1 if c["kind"] == "pf" else bool(mask.mean() < 1),
                samples=int(mask.sum()) * (1 if plane else n), sampled_fraction=float(mask.mean()))


def ismrmrd(d, c, info):
    n, coils, p = c["matrix"], c["coils"], c["params"]
    gen = ["ismrmrd_generate_cartesian_shepp_logan", "-m", str(n), "-c", str(coils)]
    run(gen + ["-n", "0", "-o", "full.h5"], d)  # noiseless, fully sampled: the noise reference and the truth
    kfull = ismrmrd_text.kspace(os.path.join(d, "full.h5"), n)
    level = c["noise"] / 100.0 * np.sqrt(np.mean(np.abs(kfull) ** 2)) / np.sqrt(2)  # the generator's -n: per part
    run(gen + ["-a", str(p["r"]), "-w", str(p.get("acs", 0)), "-n", "%.9g" % level, "-o", "data.h5"], d)
    k = ismrmrd_text.kspace(os.path.join(d, "data.h5"), n, repetition=0)
    cfl.write(os.path.join(d, "k"), k)
    truth = ismrmrd_text.truth(os.path.join(d, "full.h5"), os.path.join(d, "coil_images.bin"), n)
    acquired = np.any(k != 0, axis=(0, 2, 3))
    if c["noise"] > 0:  # the noise actually added, measured on the acquired lines against the noiseless file
        diff = (k - kfull)[:, acquired]
        info["noise_measured"] = 100 * float(np.sqrt(np.mean(np.abs(diff) ** 2) / np.mean(np.abs(kfull) ** 2)))
    info.update(larmor_input="data.h5", larmor_args=["--repetition", "0"] if p["r"] > 1 else [], reg_flags=3,
                bart_crop=n, truth=truth, cartesian=True, undersampled=p["r"] > 1, samples=int(acquired.sum()) * k.shape[0],
                sampled_fraction=float(acquired.mean()))


def real_brain(d, c, info, data):
    src = os.path.join(data, "brain-poisson-8ch", "ksp")
    if not cfl.exists(src):
        raise CaseError(src + ".cfl: absent (the real scans live in ../shared/data)")
    k = cfl.read(src)
    cfl.write(os.path.join(d, "k"), k)  # a copy BART and Larmor both read
    info.update(larmor_input="k.cfl", larmor_args=[], reg_flags=6, truth=None, cartesian=True, undersampled=True,
                samples=int(np.count_nonzero(k[..., 0])))


def real_radial(d, c, info, data):
    src = os.path.join(data, "twix-vb-radial-4ch", "meas_MID00118_FID33075_sol24.dat")
    if not os.path.exists(src):
        raise CaseError(src + ": absent (the real scans live in ../shared/data)")
    stride = c["params"]["stride"]
    bart(["twixread", "-x", 256, "-y", 256, "-c", 4, src, "tw"], d)
    bart(["reshape", 7, 1, 256, 256, "tw", "kall"], d)
    bart(["traj", "-r", "-c", "-x", 256, "-y", 256, "tb"], d)  # BART's spokes at (sin, cos): swap to the scan's
    t = cfl.read(os.path.join(d, "tb")).reshape(3, 256, 256)
    t = t[[1, 0, 2]]
    k = cfl.read(os.path.join(d, "kall")).reshape(1, 256, 256, 4)
    cfl.write(os.path.join(d, "traj"), t[:, :, ::stride])
    cfl.write(os.path.join(d, "k"), k[:, :, ::stride, :])
    info.update(larmor_input="k.cfl", larmor_args=["--traj", "traj.cfl", "--matrix", "256"], bart_traj="traj",
                truth=None, cartesian=False, samples=256 * (256 // stride))


def make(d, c, data):
    """Writes the case into directory d; returns what the runners need (see the keys set above)."""
    os.makedirs(d, exist_ok=True)
    info = {"bart_traj": None, "reg_flags": 3, "bart_crop": None, "undersampled": False, "noise_measured": None}
    kind = c["kind"]
    if kind in ("radial", "spiral"):
        noncartesian(d, c, info)
    elif kind in ("cart1d", "plane2x2", "poisson", "pf"):
        cartesian(d, c, info)
    elif kind == "ismrmrd":
        ismrmrd(d, c, info)
    elif kind == "real-brain":
        real_brain(d, c, info, data)
    elif kind == "real-radial":
        real_radial(d, c, info, data)
    else:
        raise CaseError("unknown kind " + kind)
    info["reference"] = "truth" if info["truth"] is not None else "bart"
    return info
