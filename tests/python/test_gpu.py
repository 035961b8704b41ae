"""import larmor on the CUDA backend (label gpu; gpu_tests.sh runs it where a CUDA device is, else skips with 77):
DeviceArrays stay on the device and CuPy and PyTorch read them without a copy (CUDA array interface, DLPack, checked
by pointer); NufftPlan on DeviceArrays agrees with the CPU; the Python call's overhead over the C++ call of a NUFFT on
device arrays (target <= 20 us); larmor.recon on the GPU equals larmor-cli recon --device cuda, and gives its images as
DeviceArrays with out="device"; GRAPPA from given weights on the GPU. The other way: CuPy
arrays and PyTorch CUDA tensors borrowed as DeviceArrays (larmor.asarray, DeviceArray.from_dlpack: the same pointer),
a NUFFT and an FFT on borrowed CuPy arrays (and into them with out=) equal to the NumPy path.

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


def test_recon_image_on_the_device_and_grappa_from_given_weights():
    """recon(out="device"): the images as DeviceArrays on the GPU that ran it (the engine's host images uploaded once),
    read by CuPy at their own address, equal to out="numpy" bit for bit; CuPy k-space is read back to the host first.
    GrappaCalibration on the GPU: apply() fills from the weights as given (zero weights: the FFT image), and the
    image of its own weights is the GPU pipeline's within float32 rounding."""
    import cupy

    n, coils = 64, 4
    yy, xx = np.mgrid[:n, :n] - n // 2
    obj = ((xx**2 + (yy / 1.3) ** 2) < (n * 0.3) ** 2) * (1 + 0.5 * (xx > 0))
    sens = np.stack([np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 25.0**2))
                     for cx, cy in [(-20, 0), (20, 0), (0, -20), (0, 20)]])
    full = larmor.fft((sens * obj).astype(np.complex64))[:, None]  # (coils, 1, pe1, readout)
    ksp = full.copy()
    ksp[:, :, 1::2, :] = 0
    ksp[:, :, n // 2 - 12:n // 2 + 12, :] = full[:, :, n // 2 - 12:n // 2 + 12]
    host = larmor.recon(ksp, method="fft", device="cuda", keep_coil_images=True)
    r = larmor.recon(cupy.asarray(ksp), method="fft", device="cuda", keep_coil_images=True, out="device")
    assert isinstance(r.image, larmor.DeviceArray) and r.image.device.startswith("cuda")
    c = cupy.asarray(r.image)
    assert c.data.ptr == r.image.ptr and c.shape == host.image.shape
    np.testing.assert_array_equal(cupy.asnumpy(c), host.image)
    np.testing.assert_array_equal(r.coil_images.to_numpy(), host.coil_images)
    cal = larmor.grappa_calibrate(ksp, device="cuda")
    pipeline = larmor.recon(ksp, method="grappa", device="cuda").image
    own = cal.apply().image
    assert np.linalg.norm(own - pipeline) <= 1e-5 * np.linalg.norm(pipeline)
    cal.weights = np.zeros_like(cal.weights)
    np.testing.assert_array_equal(cal.apply().image, larmor.recon(ksp, method="fft", device="cuda").image)


def test_cupy_arrays_are_borrowed_without_a_copy():
    import cupy

    c = cupy.asarray(crandn(3, 20, 30))
    a = larmor.asarray(c)  # __dlpack__
    assert a.borrowed and a.ptr == c.data.ptr and a.shape == (3, 20, 30) and a.device.startswith("cuda")
    assert cupy.asarray(a).data.ptr == c.data.ptr  # and back again: still the same memory
    b = larmor.DeviceArray.from_dlpack(c)
    assert b.ptr == c.data.ptr

    class InterfaceOnly:  # the CUDA array interface alone (Numba's and older CuPy's way)
        def __init__(self, x):
            self.__cuda_array_interface__ = x.__cuda_array_interface__
            self.keep = x

    i = larmor.asarray(InterfaceOnly(c))
    assert i.ptr == c.data.ptr and i.shape == (3, 20, 30)
    np.testing.assert_array_equal(a.to_numpy(), cupy.asnumpy(c))
    view = c[:, :, ::2]
    try:
        larmor.asarray(view)
        raise AssertionError("a strided CuPy view was borrowed")
    except larmor.Error as e:
        assert "C-contiguous" in str(e)


def test_torch_tensors_are_borrowed_without_a_copy():
    import torch

    t = torch.randn(4, 16, 16, dtype=torch.complex64, device="cuda")
    a = larmor.asarray(t)
    assert a.borrowed and a.ptr == t.data_ptr() and a.shape == (4, 16, 16)
    assert torch.from_dlpack(a).data_ptr() == t.data_ptr()
    y = larmor.fft(a)  # Larmor's FFT on PyTorch's memory, into a DeviceArray of Larmor's own
    ref = larmor.fft(t.cpu().numpy())
    assert np.abs(y.to_numpy() - ref).max() <= 1e-4 * np.abs(ref).max()
    larmor.fft(t, out=t)  # in place, in the tensor
    assert np.abs(t.cpu().numpy() - ref).max() <= 1e-4 * np.abs(ref).max()


def test_nufft_on_borrowed_cupy_arrays_equals_the_numpy_path():
    import cupy

    n = 64
    traj = radial(96, 128, n)
    image = crandn(2, n, n)
    plan = larmor.NufftPlan(traj, (n, n), "cuda")
    ref = plan.forward(image)  # NumPy in and out (uploaded, downloaded)
    x = cupy.asarray(image)
    y = plan.forward(x)  # a CuPy array in: borrowed on the fly
    assert plan._last_input_address == x.data.ptr
    np.testing.assert_array_equal(cupy.asnumpy(cupy.asarray(y)), ref)
    out = cupy.zeros((2, 96, 128), cupy.complex64)
    plan.forward(larmor.asarray(x), out=out)  # written into CuPy's memory, synchronized on return
    np.testing.assert_array_equal(cupy.asnumpy(out), ref)
    back = cupy.empty((2, n, n), cupy.complex64)
    plan.adjoint(out, out=back)
    ref_back = plan.adjoint(ref)  # the adjoint spreads with atomic sums: the GPU's own rounding order
    assert np.linalg.norm(cupy.asnumpy(back) - ref_back) / np.linalg.norm(ref_back) < 1e-5


def test_the_gpu_examples_of_the_docs_run():
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
    import re

    blocks = re.findall(r"^```python gpu\n(.*?)^```", page.read_text(), flags=re.S | re.M)
    assert len(blocks) == 2
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/python.md GPU example {i + 1}", "exec"), {"__name__": "__main__"})
