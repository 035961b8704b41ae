"""import larmor on the CUDA backend (label gpu; gpu_tests.sh runs it where a CUDA device is, else skips with 77):
DeviceArrays stay on the device and CuPy and PyTorch read them without a copy (CUDA array interface, DLPack, checked
by pointer); NufftPlan on DeviceArrays agrees with the CPU; the Python call's overhead over the C++ call of a NUFFT on
device arrays (target <= 20 us); larmor.recon on the GPU equals larmor-cli recon --device cuda.

No pytest fixtures beyond tmp_path, so that tests/python/run_without_pytest.py runs it where pytest is not installed.
The figures go to $LARMOR_GPU_OUT/python-gpu.json when that is set.
"""
import json
import os
import pathlib
import subprocess
import time

import numpy as np

import larmor

RNG = np.random.default_rng(11)
FIGURES = {}


def crandn(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


def record(name, value):
    FIGURES[name] = value
    out = os.environ.get("LARMOR_GPU_OUT")
    if out:
        pathlib.Path(out).mkdir(parents=True, exist_ok=True)
        pathlib.Path(out, "python-gpu.json").write_text(json.dumps(FIGURES, indent=1) + "\n")
    print(f"{name}: {value}")


def radial(spokes, readout, n):
    angles = np.arange(spokes) * np.pi / spokes
    k = (np.arange(readout) - readout / 2) * (n / readout)
    return np.stack([np.outer(np.cos(angles), k), np.outer(np.sin(angles), k)], axis=-1).astype(np.float32)


def test_a_gpu_is_listed():
    gpus = [d for d in larmor.devices() if d["gpu"]]
    assert gpus, larmor.why_no_gpu()
    record("device", gpus[0]["name"])


def test_cupy_reads_device_arrays_without_a_copy():
    import cupy

    x = crandn(3, 40, 50)
    a = larmor.to_device(x, "cuda")
    assert a.device.startswith("cuda") and a.shape == (3, 40, 50)
    c = cupy.asarray(a)  # __cuda_array_interface__
    assert c.data.ptr == a.ptr and c.dtype == cupy.complex64 and c.shape == (3, 40, 50)
    np.testing.assert_array_equal(cupy.asnumpy(c), x)
    d = cupy.from_dlpack(a)
    assert d.data.ptr == a.ptr
    c *= 2  # CuPy writes the DeviceArray's memory: Larmor sees it
    np.testing.assert_array_equal(a.to_numpy(), 2 * x)


def test_torch_reads_device_arrays_without_a_copy():
    import torch

    x = crandn(4, 32)
    a = larmor.to_device(x, "cuda")
    t = torch.from_dlpack(a)
    assert t.is_cuda and t.dtype == torch.complex64 and t.data_ptr() == a.ptr and tuple(t.shape) == (4, 32)
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    u = torch.as_tensor(a, device="cuda")  # __cuda_array_interface__
    assert u.data_ptr() == a.ptr
    del a
    torch.cuda.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), x)  # the tensor keeps the DeviceArray alive


def test_nufft_on_device_arrays_agrees_with_the_cpu():
    import cupy

    n = 64
    traj = radial(96, 128, n)
    image = crandn(2, n, n)
    on_gpu = larmor.NufftPlan(traj, (n, n), "cuda")
    on_cpu = larmor.NufftPlan(traj, (n, n), "cpu")
    x = larmor.to_device(image, "cuda")
    y = on_gpu.forward(x)
    assert isinstance(y, larmor.DeviceArray) and y.shape == (2, 96, 128) and y.device == x.device
    assert on_gpu._last_input_address == x.ptr
    ref = on_cpu.forward(image)
    got = cupy.asnumpy(cupy.asarray(y))
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 1e-4
    back = on_gpu.adjoint(y)
    assert isinstance(back, larmor.DeviceArray) and back.shape == (2, n, n)
    ref_back = on_cpu.adjoint(ref)
    assert np.linalg.norm(back.to_numpy() - ref_back) / np.linalg.norm(ref_back) < 1e-4
    # NumPy in, NumPy out on a GPU plan (uploaded and downloaded around the call).
    assert np.linalg.norm(on_gpu.forward(image) - ref) / np.linalg.norm(ref) < 1e-4


def test_python_call_overhead_over_the_cpp_call():
    n, repeats = 128, 300
    plan = larmor.NufftPlan(radial(128, 256, n), (n, n), "cuda")
    x = larmor.to_device(crandn(n, n), "cuda")
    y = plan.forward(x)
    cpp = min(plan._cpp_seconds_per_forward(x, y, repeats) for _ in range(3))
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeats):
            plan.forward(x, out=y)
            larmor.synchronize("cuda")
        best = min(best, (time.perf_counter() - t0) / repeats)
    overhead_us = (best - cpp) * 1e6
    record("nufft_forward_128x128_32768_samples_cpp_us", round(cpp * 1e6, 2))
    record("nufft_forward_128x128_32768_samples_python_us", round(best * 1e6, 2))
    record("nufft_forward_python_overhead_us", round(overhead_us, 2))
    assert overhead_us <= 20, f"Python adds {overhead_us:.1f} us per call over C++ ({cpp * 1e6:.1f} us)"


def write_cfl(base, array):
    """NumPy (axes reversed) -> BART .cfl/.hdr."""
    pathlib.Path(str(base) + ".hdr").write_text("# Dimensions\n" + " ".join(map(str, array.shape[::-1])) + "\n")
    array.astype(np.complex64).tofile(str(base) + ".cfl")


def read_cfl(base):
    dims = [int(v) for v in pathlib.Path(str(base) + ".hdr").read_text().splitlines()[1].split()]
    return np.fromfile(str(base) + ".cfl", np.complex64).reshape(dims[::-1])


def cli():
    return os.environ.get("LARMOR_CLI", "larmor-cli")


def test_recon_on_the_gpu_equals_the_cli(tmp_path):
    n, coils = 64, 4
    yy, xx = np.mgrid[:n, :n] - n // 2
    obj = ((xx**2 + (yy / 1.3) ** 2) < (n * 0.3) ** 2) * (1 + 0.5 * (xx > 0))
    sens = np.stack([np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 25.0**2))
                     for cx, cy in [(-20, 0), (20, 0), (0, -20), (0, 20)]])
    ksp = larmor.fft((sens * obj).astype(np.complex64))[:, None]  # (coils, 1, pe1, readout)
    ksp[:, :, 1::2, :] = 0
    ksp[:, :, n // 2 - 8:n // 2 + 8, :] = larmor.fft((sens * obj).astype(np.complex64))[:, None, n // 2 - 8:n // 2 + 8]
    write_cfl(tmp_path / "k", ksp)
    args = ["--method", "cs", "--iters", "20", "--device", "cuda"]
    outputs = []
    for i in range(2):
        subprocess.run([cli(), "recon", str(tmp_path / "k.cfl"), *args, "--output", str(tmp_path / f"cli{i}.cfl")],
                       check=True, capture_output=True)
        outputs.append(read_cfl(tmp_path / f"cli{i}"))
    r = larmor.recon(larmor.read(str(tmp_path / "k.cfl")), method="cs", iters=20, device="cuda")
    assert r.device.startswith("cuda")
    repeatable = np.array_equal(outputs[0], outputs[1])
    record("cli_gpu_recon_repeatable_bit_for_bit", bool(repeatable))
    if repeatable:
        assert np.array_equal(outputs[0].ravel(), r.image.ravel())
    else:  # the GPU's own run-to-run rounding (atomic sums): the CLI differs from itself by as much
        spread = np.abs(outputs[0] - outputs[1]).max()
        assert np.abs(outputs[0].ravel() - r.image.ravel()).max() <= 4 * spread


def test_the_gpu_example_of_the_docs_runs():
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    import re

    blocks = re.findall(r"^```python gpu\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    assert len(blocks) == 1
    exec(compile(blocks[0], "docs/python.md GPU example", "exec"), {"__name__": "__main__"})
