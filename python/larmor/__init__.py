"""Larmor's MRI reconstruction engine from Python (docs/python.md).

NumPy arrays are the engine's arrays with their axes reversed (C order: the last axis is x, the fastest), so
k-space is (slices, coils, pe2, pe1, readout) and images are (slices, 1, z, y, x).
"""
import os

# Idle OpenMP workers sleep instead of spinning (larmor/util/openmp_policy.hpp: up to 25x faster on a loaded machine).
# libgomp reads the variable once, when it is loaded, which is the import below; a user's own value is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from ._larmor import (  # noqa: E402,F401  (the public API)
    Cancelled,
    Dataset,
    DeviceArray,
    Error,
    NufftPlan,
    ReconResult,
    compare,
    devices,
    espirit,
    fft,
    ifft,
    read,
    recon,
    settings,
    synchronize,
    to_device,
    why_no_gpu,
    write,
)

__all__ = [
    "Cancelled", "Dataset", "DeviceArray", "Error", "NufftPlan", "ReconResult", "compare", "devices", "espirit",
    "fft", "ifft", "read", "recon", "settings", "synchronize", "to_device", "why_no_gpu", "write",
]
