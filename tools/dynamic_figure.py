"""The figure of tools/dynamic_contest.py: an RGB PNG written with numpy and zlib alone (no matplotlib here).

Rows of magnitude frames (each row's images scaled by the least-squares factor to the truth, shown on the truth's
grey scale) and, to the right, the time-intensity curve of the wash-in ellipse: the mean over its pixels per
frame, one coloured line per method (legend in the same colours). Labels use the 5 x 7 font of Larmor's pictures,
read from engine/src/io/raster_text.cpp (drawn as '?' where that file cannot be read).
"""
import os
import re
import struct
import zlib

import numpy as np

COLOURS = [(255, 255, 255), (230, 80, 60), (80, 200, 90), (80, 140, 255), (240, 200, 40)]
SCALE = 2  # font pixel size


def font():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engine", "src", "io", "raster_text.cpp")
    try:
        text = open(path).read()
    except OSError:
        return {}
    glyphs = {}
    for c, rows in re.findall(r"\{'(.)', \{((?:\"[.#]{5}\",? ?){7})\}\}", text):
        glyphs[c] = [r == "#" for row in re.findall(r"\"([.#]{5})\"", rows) for r in row]
    return glyphs


FONT = font()


def text(canvas, x, y, s, colour):
    for i, c in enumerate(s.upper()):
        g = FONT.get(c, FONT.get("?"))
        if g is None:
            continue
        for k, on in enumerate(g):
            if on:
                r, col = divmod(k, 5)
                px, py = x + (6 * i + col) * SCALE, y + r * SCALE
                canvas[py:py + SCALE, px:px + SCALE] = colour


def png_rgb(path, img):
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[r].astype(np.uint8).tobytes() for r in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def line(canvas, x0, y0, x1, y1, colour):
    n = int(max(abs(x1 - x0), abs(y1 - y0))) + 1
    for s in np.linspace(0.0, 1.0, n):
        x, y = int(round(x0 + s * (x1 - x0))), int(round(y0 + s * (y1 - y0)))
        canvas[y - 1:y + 1, x - 1:x + 1] = colour


def curves(canvas, x0, y0, w, h, series, names):
    """series: one 1D array per method (frames); drawn into the box, axes from 0 to the largest value."""
    canvas[y0:y0 + h, x0] = 160
    canvas[y0 + h, x0:x0 + w] = 160
    top = max(float(np.max(s)) for s in series) * 1.1
    frames = len(series[0])
    for k, (s, name) in enumerate(zip(series, names)):
        c = COLOURS[k % len(COLOURS)]
        pts = [(x0 + w * t / (frames - 1), y0 + h - h * float(v) / top) for t, v in enumerate(s)]
        for (a, b), (p, q) in zip(pts[:-1], pts[1:]):
            line(canvas, a, b, p, q, c)
        text(canvas, x0 + 8, y0 + 8 + 18 * k, name.split("\n")[0], c)
    text(canvas, x0, y0 + h + 8, "FRAME 1 TO %d" % frames, (200, 200, 200))


def figure(path, truth, rows, names, frames, wash_mask):
    """truth [n, n, T]; rows: [n, n, T] magnitudes (truth first); frames shown: the list `frames`."""
    n = truth.shape[0]
    label_w, gap, top = 170, 4, 24
    plot_w = 360
    width = label_w + len(frames) * (n + gap) + plot_w + 40
    height = top + len(rows) * (n + gap) + 30
    canvas = np.zeros((height, width, 3), np.uint8)
    vmax = float(np.percentile(truth, 99.5))
    for i, t in enumerate(frames):
        text(canvas, label_w + i * (n + gap) + 4, 4, ("FRAME %d" if n >= 100 else "%d") % (t + 1), (200, 200, 200))
    for r, (img, name) in enumerate(zip(rows, names)):
        y = top + r * (n + gap)
        for i, part in enumerate(name.split("\n")):  # the label, in lines
            text(canvas, 4, y + n // 2 - 16 + 18 * i, part, COLOURS[r % len(COLOURS)])
        for i, t in enumerate(frames):
            # Image index [x, y]: shown with y down the rows, x across.
            tile = np.clip(img[:, :, t].T / vmax, 0.0, 1.0) * 255.0
            x = label_w + i * (n + gap)
            canvas[y:y + n, x:x + n] = tile[:, :, None]
    series = [img[wash_mask].mean(axis=0) for img in rows]
    px = label_w + len(frames) * (n + gap) + 30
    text(canvas, px, 4, "WASH-IN MEAN", (200, 200, 200))
    curves(canvas, px, top, plot_w, len(rows) * (n + gap) - 20, series, names)
    png_rgb(path, canvas)
