"""Larmor's MRI reconstruction engine from Python (docs/python.md).

NumPy arrays are the engine's arrays with their axes reversed (C order: the last axis is x, the fastest), so
k-space is (slices, coils, pe2, pe1, readout) and images are (slices, 1, z, y, x).
"""
import os

# Idle OpenMP workers sleep instead of spinning (larmor/util/openmp_policy.hpp: up to 25x faster on a loaded machine).
# libgomp reads the variable once, when it is loaded, which is the import below; a user's own value is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import _larmor  # noqa: E402
from ._larmor import (  # noqa: E402,F401  (the public API)
    Cancelled,
    Dataset,
    DeviceArray,
    Error,
    NufftPlan,
    ReconResult,
    SenseNormal,
    Series,
    coil_compression,
    coil_maps,
    compare,
    compress_coils,
    devices,
    espirit,
    fft,
    ifft,
    read,
    read_series,
    recon_series,
    settings,
    synchronize,
    to_device,
    total_variation,
    tv_prox,
    wavelet_l1,
    wavelet_prox,
    why_no_gpu,
    write,
    write_series,
)

__all__ = [
    "Cancelled", "Dataset", "DeviceArray", "Error", "NufftPlan", "ReconResult", "SenseNormal", "Series",
    "coil_compression", "coil_maps", "compare", "compress_coils", "devices", "espirit", "fft", "ifft", "read",
    "read_series", "recon", "recon_series", "settings", "synchronize", "to_device", "total_variation", "tv_prox",
    "wavelet_l1", "wavelet_prox", "why_no_gpu", "write", "write_series",
]


def recon(data, *, trajectory=None, **settings):
    """Reconstructs a Dataset, or k-space arrays (with their trajectory where non-Cartesian), as larmor-cli recon does.

    data: a Dataset (larmor.read), or k-space as Dataset.from_arrays takes it: ([slices,] coils, [pe2,] pe1, readout),
    non-Cartesian ([slices,] coils, 1, profiles, readout) with trajectory (profiles, readout, 2|3) in cycles per FOV:
    the same image as larmor-cli recon of a .cfl of the arrays (and --traj of the trajectory's).
    settings: method=, device=, keep_coil_images=, progress=, and larmor-cli recon's flags with _ for - (lam= for
    --lambda); larmor.settings() lists them.
    """
    if not isinstance(data, Dataset):
        matrix = settings.get("matrix", ())
        if isinstance(matrix, str):
            matrix = [int(v) for v in matrix.lower().split("x")]
        data = Dataset.from_arrays(data, trajectory, list(matrix))
    elif trajectory is not None:
        raise Error("larmor.recon: a Dataset carries its own trajectory; trajectory= is for k-space arrays")
    return _larmor.recon(data, **settings)
