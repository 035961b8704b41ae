"""The k-space and truth of an `ismrmrd_generate_cartesian_shepp_logan` file, read through h5dump (hdf5-tools), not
through any ISMRMRD code of ours.

/dataset/data is printed as text: each acquisition is a head (a fixed list of numbers: flags is the 2nd, the
sample and channel counts the 9th and 10th, kspace_encode_step_1 the 49th) followed by the trajectory and the
samples as two parenthesised lists; the samples are [channels][samples] complex floats. Noise-measurement
acquisitions (flag 19) are left out. /dataset/coil_images [1, coils, ny, nx] (nx with the readout
oversampling) is the generator's noiseless coil images, whose FFT is the file's k-space before noise: their
root sum of squares over the central readout half is the truth.
Arrays returned in BART's order: k-space [readout, pe1, 1, coils], images [x, y].
"""
import re
import subprocess

import numpy as np

FLAGS, SAMPLES, CHANNELS, PE1, REPETITION = 1, 8, 10, 48, 54
NOISE_FLAG_BIT = 18
_record = re.compile(r"\n\s*\(\d+\): \{")
_group = re.compile(r"\(([^()]*)\)")
_number = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")


def _h5dump(args):
    r = subprocess.run(["h5dump"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("h5dump %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip().splitlines()[-1:]))
    return r.stdout


def kspace(path, lines, repetition=0):
    """[readout, pe1, 1, coils] of one repetition (the generator writes R shifted repetitions for acceleration R,
    each with the calibration block)."""
    text = _h5dump(["-d", "/dataset/data", "-m", "%.9g", path])
    body = text.split("DATA {", 1)[1]
    chunks = _record.split("\n" + body)[1:]
    k = None
    for chunk in chunks:
        head_text = chunk.split("(", 1)[0]
        head = [float(v) for v in _number.findall(head_text)]
        groups = _group.findall(chunk)
        if len(groups) < 2:
            raise RuntimeError(path + ": an acquisition without its trajectory and data lists")
        flags = int(head[FLAGS])
        if flags >> NOISE_FLAG_BIT & 1 or int(head[REPETITION]) != repetition:
            continue
        ns, nc, line = int(head[SAMPLES]), int(head[CHANNELS]), int(head[PE1])
        v = np.array(groups[-1].split(","), dtype=np.float64)
        if v.size != 2 * ns * nc:
            raise RuntimeError("%s: acquisition of %d floats, expected %d" % (path, v.size, 2 * ns * nc))
        samples = (v[0::2] + 1j * v[1::2]).reshape(nc, ns).T  # [samples, channels]
        if k is None:
            k = np.zeros((ns, lines, 1, nc), dtype=np.complex64)
        k[:, line, 0, :] = samples
    if k is None:
        raise RuntimeError(path + ": no imaging acquisitions")
    return k


def coil_images(path, tmp):
    """[nx, ny, coils] from /dataset/coil_images (binary through h5dump -b)."""
    header = _h5dump(["-H", "-d", "/dataset/coil_images", path])
    dims = [int(d) for d in re.search(r"SIMPLE \{ \( ([\d, ]+) \)", header).group(1).split(",")]
    _h5dump(["-d", "/dataset/coil_images", "-b", "FILE", "-o", tmp, path])
    raw = np.fromfile(tmp, dtype=np.float32)
    c = (raw[0::2] + 1j * raw[1::2]).reshape(dims[1:])  # [coils, ny, nx], nx fastest
    return np.transpose(c, (2, 1, 0))


def truth(path, tmp, matrix):
    c = coil_images(path, tmp)
    nx = c.shape[0]
    lo = (nx - matrix) // 2
    return np.sqrt(np.sum(np.abs(c[lo:lo + matrix]) ** 2, axis=-1))
