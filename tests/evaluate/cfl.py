"""BART .cfl/.hdr files from their documented layout (numpy only, no code shared with Larmor): the .hdr holds the
dimensions on the line after '# Dimensions', the .cfl complex64 samples with dimension 0 fastest (Fortran order)."""
import os

import numpy as np


def base_of(path):
    for ext in (".cfl", ".hdr"):
        if path.endswith(ext):
            return path[: -len(ext)]
    return path


def read(path):
    base = base_of(path)
    with open(base + ".hdr") as f:
        lines = f.read().splitlines()
    try:
        dims = [int(x) for x in lines[lines.index("# Dimensions") + 1].split()]
    except (ValueError, IndexError):
        raise RuntimeError(base + ".hdr: no '# Dimensions' line followed by the dimensions")
    data = np.fromfile(base + ".cfl", dtype=np.complex64)
    if data.size != int(np.prod(dims)):
        raise RuntimeError("%s.cfl: %d samples, the header says %s" % (base, data.size, dims))
    return data.reshape(dims, order="F")


def write(path, array):
    base = base_of(path)
    a = np.asarray(array, dtype=np.complex64)
    dims = list(a.shape) + [1] * max(0, 16 - a.ndim)
    with open(base + ".hdr", "w") as f:
        f.write("# Dimensions\n" + " ".join(str(d) for d in dims) + "\n")
    a.reshape(-1, order="F").tofile(base + ".cfl")


def image2d(path):
    """A reconstruction's magnitude as a 2D array: every singleton dimension dropped; anything but one plane is an
    error (the corpus is 2D)."""
    a = np.abs(read(path))
    a = a.reshape([d for d in a.shape if d > 1])
    if a.ndim != 2:
        raise RuntimeError("%s: expected one 2D image, got dimensions %s" % (base_of(path), list(a.shape)))
    return a


def exists(path):
    base = base_of(path)
    return os.path.exists(base + ".cfl") and os.path.exists(base + ".hdr")
