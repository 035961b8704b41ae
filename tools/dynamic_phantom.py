"""The dynamic phantom of tools/dynamic_contest.py, drawn in numpy alone (no code shared with Larmor's phantom).

Truth frames x_t (real, >= 0) on an N x N grid over [-1, 1)^2, each pixel the mean of 4 x 4 sub-samples:
  - a Shepp-Logan-like head: the modified Shepp-Logan ellipses (Toft 1996) summed, negatives clipped;
  - a beating ellipse (the "heart", left of centre) whose semi-axes scale by 1 + 0.25 sin(2 pi t / BEAT);
  - a slow breathing shift of the whole object along y, (SHIFT/2) (1 - cos(2 pi t / BREATH)) pixels
    (0 .. SHIFT px and back);
  - a wash-in ellipse (right of centre) of intensity WASH (1 - exp(-(t - T0) / TAU)) from frame T0 on.
"""
import numpy as np

BEAT, BREATH, SHIFT = 16.0, 20.0, 3.0
T0, TAU, WASH = 3.0, 4.0, 0.6
SUB = 4

# (intensity, a, b, x0, y0, angle in degrees): the modified Shepp-Logan table.
HEAD = [(1.0, .69, .92, 0, 0, 0), (-.8, .6624, .874, 0, -.0184, 0), (-.2, .11, .31, .22, 0, -18),
        (-.2, .16, .41, -.22, 0, 18), (.1, .21, .25, 0, .35, 0), (.1, .046, .046, 0, .1, 0),
        (.1, .046, .046, 0, -.1, 0), (.1, .046, .023, -.08, -.605, 0), (.1, .023, .023, 0, -.606, 0),
        (.1, .023, .046, .06, -.605, 0)]
HEART = (0.5, 0.13, 0.17, -0.30, 0.22, 15)
WASH_IN = (1.0, 0.09, 0.12, 0.32, 0.25, -10)


def ellipse(x, y, e):
    v, a, b, x0, y0, deg = e
    c, s = np.cos(np.radians(deg)), np.sin(np.radians(deg))
    u, w = (x - x0) * c + (y - y0) * s, -(x - x0) * s + (y - y0) * c
    return v * ((u / a) ** 2 + (w / b) ** 2 <= 1.0)


def wash(t):
    return WASH * (1.0 - np.exp(-(t - T0) / TAU)) if t >= T0 else 0.0


def frame(n, t):
    """Frame t (0-based) as an n x n array, index [x, y] (x along the first axis)."""
    g = (np.arange(n * SUB) + 0.5) / (n * SUB) * 2.0 - 1.0
    dy = SHIFT / 2.0 * (1.0 - np.cos(2 * np.pi * t / BREATH)) * 2.0 / n
    x, y = np.meshgrid(g, g - dy, indexing="ij")
    img = sum(ellipse(x, y, e) for e in HEAD)
    beat = 1.0 + 0.25 * np.sin(2 * np.pi * t / BEAT)
    v, a, b, x0, y0, deg = HEART
    img = img + ellipse(x, y, (v, a * beat, b * beat, x0, y0, deg))
    v, a, b, x0, y0, deg = WASH_IN
    img = img + ellipse(x, y, (wash(t), a, b, x0, y0, deg))
    img = np.clip(img, 0.0, None)
    return img.reshape(n, SUB, n, SUB).mean(axis=(1, 3))


def series(n, frames):
    """[n, n, frames]."""
    return np.stack([frame(n, t) for t in range(frames)], axis=-1)


def wash_mask(n):
    """The wash-in ellipse's pixels (shrunk to 70 % so that the breathing shift keeps them inside), [n, n]."""
    g = (np.arange(n) + 0.5) / n * 2.0 - 1.0
    x, y = np.meshgrid(g, g - SHIFT / 2.0 * 2.0 / n, indexing="ij")
    v, a, b, x0, y0, deg = WASH_IN
    return ellipse(x, y, (1.0, 0.7 * a, 0.7 * b, x0, y0, deg)) > 0
