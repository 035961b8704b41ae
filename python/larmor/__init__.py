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
    GrappaCalibration,
    NufftPlan,
    ReconResult,
    SenseNormal,
    Series,
    asarray,
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
    "Cancelled", "Dataset", "DeviceArray", "Error", "GrappaCalibration", "NufftPlan", "ReconResult", "SenseNormal",
    "Series", "asarray", "coil_compression", "coil_maps", "compare", "compress_coils", "devices", "espirit", "fft",
    "grappa_calibrate", "ifft", "read", "read_series", "recon", "recon_series", "settings", "synchronize",
    "to_device", "total_variation", "tv_prox", "wavelet_l1", "wavelet_prox", "why_no_gpu", "write", "write_series",
]


def _on_host(kspace):
    """k-space for Dataset.from_arrays: a DeviceArray, CuPy array or PyTorch CUDA tensor is read back to the host (the
    engine's reconstructions take a Dataset in host memory); anything else as it is."""
    if isinstance(kspace, DeviceArray):
        return kspace.to_numpy()
    cuda = hasattr(kspace, "__cuda_array_interface__") or (
        hasattr(kspace, "__dlpack_device__") and kspace.__dlpack_device__()[0] == 2)
    return asarray(kspace).to_numpy() if cuda else kspace


def _dataset(data, trajectory, settings, who):
    if isinstance(data, Dataset):
        if trajectory is not None:
            raise Error(who + ": a Dataset carries its own trajectory; trajectory= is for k-space arrays")
        return data
    matrix = settings.get("matrix", ())
    if isinstance(matrix, str):
        matrix = [int(v) for v in matrix.lower().split("x")]
    return Dataset.from_arrays(_on_host(data), trajectory, list(matrix))


def recon(data, *, trajectory=None, **settings):
    """Reconstructs a Dataset, or k-space arrays (with their trajectory where non-Cartesian), as larmor-cli recon does.

    data: a Dataset (larmor.read), or k-space as Dataset.from_arrays takes it: ([slices,] coils, [pe2,] pe1, readout),
    non-Cartesian ([slices,] coils, 1, profiles, readout) with trajectory (profiles, readout, 2|3) in cycles per FOV:
    the same image as larmor-cli recon of a .cfl of the arrays (and --traj of the trajectory's).
    settings: method=, device=, keep_coil_images=, progress=, and larmor-cli recon's flags with _ for - (lam= for
    --lambda); larmor.settings() lists them.
    out="device": .image and .coil_images are DeviceArrays on the device that ran it (the engine's host images uploaded
    once; CuPy and PyTorch read them without a further copy). k-space on a device is read back to the host first.
    """
    return _larmor.recon(_dataset(data, trajectory, settings, "larmor.recon"), **settings)


def grappa_calibrate(data, *, device="cpu", **settings):
    """GRAPPA weights of Cartesian k-space with calibration lines: a GrappaCalibration (.weights, .sampling, .apply).

    data: a Dataset, or k-space arrays as larmor.recon takes them (a DeviceArray, CuPy or PyTorch array is read back).
    settings: larmor-cli recon's GRAPPA flags with _ for - (grappa_kernel="4x5", chi=, eta=, kappa=, ...).
    .apply(kspace=None) fills k-space of the same shape from .weights as they are (no calibration runs; assign edited
    weights, or another calibration's, to .weights) and reconstructs it by the FFT; .apply() is larmor-cli recon
    --method grappa's image (bit for bit with the improved kernel on 2D slices, else within float32 rounding).
    """
    return _larmor._grappa_calibrate(_dataset(data, None, settings, "larmor.grappa_calibrate"), device=device, **settings)
