#!/usr/bin/python3
"""ROI statistics of a BART .cfl's magnitude, by NumPy, for the GUI test of the reading tools.

usage: roi_numpy.py BASE X0 Y0 X1 Y1 [POLYGON]  (plane 0; corners inclusive). Prints two lines, "n mean sd min max",
for the rectangle and for the ellipse inscribed in it (voxel centres with ((x-cx)/rx)^2 + ((y-cy)/ry)^2 <= 1,
rx = (x1-x0+1)/2), sd with ddof=1; with POLYGON ("x,y;x,y;..." the freehand outline's vertices) a third line for
the voxels whose centres are inside it by the even-odd rule (a ray along +x crosses the outline an odd number of
times). Exit 77 without numpy.
"""
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(77)


def read_cfl(base):
    dims = [int(d) for d in open(base + ".hdr").read().split("\n")[1].split()]
    data = np.fromfile(base + ".cfl", dtype=np.complex64)
    return data.reshape(dims, order="F")


def stats(values):
    v = values.astype(np.float64)
    return f"{v.size} {v.mean():.17g} {v.std(ddof=1):.17g} {v.min():.17g} {v.max():.17g}"


def inside_polygon(x, y, poly):
    inside = np.zeros(x.shape, dtype=bool)
    for i in range(len(poly)):
        (xi, yi), (xj, yj) = poly[i], poly[i - 1]
        crosses = (yi > y) != (yj > y)
        with np.errstate(divide="ignore", invalid="ignore"):
            at = (xj - xi) * (y - yi) / (yj - yi) + xi
        inside ^= crosses & (x < at)
    return inside


def main():
    base, x0, y0, x1, y1 = sys.argv[1], *map(int, sys.argv[2:6])
    a = np.abs(read_cfl(base))
    plane = a.reshape(a.shape[0], a.shape[1], -1, order="F")[:, :, 0]
    x, y = np.meshgrid(np.arange(plane.shape[0]), np.arange(plane.shape[1]), indexing="ij")
    rect = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    cx, cy, rx, ry = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0 + 1) / 2, (y1 - y0 + 1) / 2
    ellipse = ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1
    print(stats(plane[rect]))
    print(stats(plane[ellipse]))
    if len(sys.argv) > 6:
        poly = [tuple(float(c) for c in p.split(",")) for p in sys.argv[6].split(";")]
        print(stats(plane[inside_polygon(x.astype(np.float64), y.astype(np.float64), poly)]))


if __name__ == "__main__":
    main()
