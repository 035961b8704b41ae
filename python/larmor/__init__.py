"""Larmor's MRI reconstruction engine from Python (docs/python.md).

NumPy arrays are the engine's arrays with their axes reversed (C order: the last axis is x, the fastest), so
k-space is (slices, coils, pe2, pe1, readout) and images are (slices, 1, z, y, x).
"""
from ._larmor import (  # noqa: F401  (the public API)
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
