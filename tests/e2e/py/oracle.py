"""Independent readers for the e2e scripts (tests/e2e/*.sh): BART .cfl by its documented layout (numpy), HDF5
datasets through h5dump (hdf5-tools, not our reader), PNG through Python's zlib. Written from the formats, sharing
no code with Larmor. `need()` fails (exit 1), never skips: install-deps.sh installs every tool used here."""
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
except ImportError:  # the .sh wrapper picks an interpreter with numpy; this is the last word
    sys.exit("numpy is not importable by " + sys.executable + " (python3-nibabel brings it; installer/install-deps.sh)")


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg)


def read_cfl(base):
    """BART .hdr/.cfl: dims on the line after '# Dimensions', complex64, dimension 0 fastest."""
    base = re.sub(r"\.(cfl|hdr)$", "", base)
    lines = open(base + ".hdr").read().splitlines()
    dims = [int(x) for x in lines[lines.index("# Dimensions") + 1].split()]
    data = np.fromfile(base + ".cfl", dtype=np.complex64)
    if data.size != int(np.prod(dims)):
        fail(f"{base}.cfl holds {data.size} values, its header says {dims}")
    return data.reshape(dims, order="F")


def h5_array(path, dataset):
    """A complex {real, imag} float32 HDF5 dataset as h5dump writes it in binary (NATIVE: float32 pairs), in C order (last fastest)."""
    header = subprocess.run(["h5dump", "-H", "-d", dataset, path], check=True, capture_output=True, text=True).stdout
    shape = [int(x) for x in re.search(r"DATASPACE\s+SIMPLE\s+\{\s*\(([^)]*)\)", header).group(1).split(",")]
    with tempfile.TemporaryDirectory() as t:
        out = os.path.join(t, "d.bin")
        subprocess.run(["h5dump", "-d", dataset, "-b", "NATIVE", "-o", out, path], check=True, capture_output=True)
        raw = np.fromfile(out, dtype=np.float32)
    return (raw[0::2] + 1j * raw[1::2]).reshape(shape)


def read_png(path):
    """8-bit grey or RGB, non-interlaced PNG, decoded with zlib and the five PNG filters. Returns [rows, cols, ch]."""
    b = open(path, "rb").read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        fail(f"{path}: not a PNG signature")
    pos, idat, w = 8, b"", None
    while pos < len(b):
        n, = struct.unpack(">I", b[pos:pos + 4])
        kind, body = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) & 0xffffffff != struct.unpack(">I", b[pos + 8 + n:pos + 12 + n])[0]:
            fail(f"{path}: bad CRC in chunk {kind}")
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0 or colour not in (0, 2):
                fail(f"{path}: depth {depth}, colour {colour}, interlace {interlace} not handled")
            ch = 1 if colour == 0 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)], dtype=np.uint8).astype(np.int32)
        cur = np.zeros(stride, dtype=np.int32)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            c = prev[x - ch] if x >= ch else 0
            up = prev[x]
            if f == 0: p = 0
            elif f == 1: p = a
            elif f == 2: p = up
            elif f == 3: p = (a + up) // 2
            else:
                pa, pb, pc = abs(up - c), abs(a - c), abs(a + up - 2 * c)
                p = a if pa <= pb and pa <= pc else (up if pb <= pc else c)
            cur[x] = (line[x] + p) & 0xff
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)


def rel_l2(got, ref):
    """||got - ref|| / ||ref|| over complex values, no fitted gain or phase (support/error_norms.hpp's measure)."""
    got, ref = np.asarray(got, dtype=np.complex128).ravel(), np.asarray(ref, dtype=np.complex128).ravel()
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
