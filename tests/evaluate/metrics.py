"""Image quality against a reference, on magnitude images over the whole field of view (numpy/scipy only).

Both measures first scale the test image x by the least-squares factor s = <x, t> / <x, x> to the reference t (as
`bart nrmse -s`), so a global scale, which no method is asked to get right, is not an error:
  NRMSE = ||s x - t||_2 / ||t||_2.
  SSIM (Wang, Bovik, Sheikh, Simoncelli 2004, eq. 13) with a 7 x 7 uniform window, K1 = 0.01, K2 = 0.03, sample
  (N - 1) covariances, dynamic range L = max(t) - min(t), averaged over every pixel whose window lies inside the
  image (a 3-pixel border left out): the convention of scikit-image's structural_similarity defaults.
"""
import numpy as np
from scipy.ndimage import uniform_filter

WINDOW = 7
K1, K2 = 0.01, 0.03


def _pair(x, t):
    x = np.abs(np.asarray(x, dtype=np.float64))
    t = np.abs(np.asarray(t, dtype=np.float64))
    if x.shape != t.shape:
        raise ValueError("image %s and reference %s differ in size" % (list(x.shape), list(t.shape)))
    if not np.all(np.isfinite(x)):
        raise ValueError("the image has non-finite pixels")
    xx = float(np.vdot(x, x))
    s = float(np.vdot(x, t)) / xx if xx > 0 else 0.0
    return s * x, t


def nrmse(x, t):
    x, t = _pair(x, t)
    return float(np.linalg.norm(x - t) / np.linalg.norm(t))


def ssim(x, t):
    x, t = _pair(x, t)
    L = float(t.max() - t.min())
    n = WINDOW * WINDOW
    cov = n / (n - 1.0)
    mx, mt = uniform_filter(x, WINDOW), uniform_filter(t, WINDOW)
    vx = cov * (uniform_filter(x * x, WINDOW) - mx * mx)
    vt = cov * (uniform_filter(t * t, WINDOW) - mt * mt)
    vxt = cov * (uniform_filter(x * t, WINDOW) - mx * mt)
    c1, c2 = (K1 * L) ** 2, (K2 * L) ** 2
    m = ((2 * mx * mt + c1) * (2 * vxt + c2)) / ((mx * mx + mt * mt + c1) * (vx + vt + c2))
    p = (WINDOW - 1) // 2
    return float(m[p:-p, p:-p].mean())


def scaled(x, t):
    """x scaled by the least-squares factor to t (for figures)."""
    return _pair(x, t)[0]


def self_test():
    """Known answers: identical images (NRMSE 0, SSIM 1), scale invariance, a known NRMSE, SSIM < 1 under noise."""
    rng = np.random.default_rng(1)
    t = np.zeros((64, 64))
    t[16:48, 16:48] = 1.0
    t[24:40, 24:40] = 0.5
    problems = []
    if nrmse(t, t) > 1e-12 or abs(ssim(t, t) - 1) > 1e-12:
        problems.append("identical images do not score NRMSE 0 / SSIM 1")
    if abs(nrmse(3.7 * t, t)) > 1e-12 or abs(ssim(3.7 * t, t) - 1) > 1e-12:
        problems.append("a global scale changes the scores")
    e = np.zeros_like(t)
    e[0, 0] = 1.0  # x = t + e with e orthogonal to t: s = <x,t>/<x,x>
    x = t + e
    s = np.vdot(x, t) / np.vdot(x, x)
    want = np.linalg.norm(s * x - t) / np.linalg.norm(t)
    if abs(nrmse(x, t) - want) > 1e-12:
        problems.append("NRMSE of a known perturbation")
    noisy = t + 0.1 * rng.standard_normal(t.shape)
    if not (0 < ssim(noisy, t) < 0.9 and ssim(noisy, t) < ssim(t + 0.01 * rng.standard_normal(t.shape), t)):
        problems.append("SSIM does not fall with noise")
    return problems
