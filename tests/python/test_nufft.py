"""larmor.NufftPlan against a float64 direct sum, adjointness, batches, and no copy of C-contiguous complex64 arrays.

The sums (ops/nufft.hpp): forward d_j = sum_n x_n exp(-2 pi i k_j . r_n), adjoint x_n = sum_j d_j exp(+2 pi i k_j . r_n),
r_n = (n - floor(N/2)) / N per dimension; k_j[0] pairs with the image's last NumPy axis.
"""
import numpy as np
import pytest

import larmor

RNG = np.random.default_rng(7)


def positions(shape):
    """r_n of every voxel of a NumPy image shape ((nz,) ny, nx), as (voxels, d) with column 0 along x."""
    axes = [(np.arange(n) - n // 2) / n for n in shape]
    grids = np.meshgrid(*axes, indexing="ij")
    return np.stack([g.ravel() for g in reversed(grids)], axis=1)


def direct_forward(image, traj):
    r = positions(image.shape)
    return np.exp(-2j * np.pi * traj.astype(np.float64) @ r.T) @ image.astype(np.complex128).ravel()


def direct_adjoint(samples, traj, shape):
    r = positions(shape)
    return (np.exp(2j * np.pi * r @ traj.astype(np.float64).T) @ samples.astype(np.complex128)).reshape(shape)


def random_case(shape, m):
    d = len(shape)
    traj = np.stack([RNG.uniform(-n / 2, n / 2, m) for n in reversed(shape)], axis=1).astype(np.float32)
    image = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    samples = (RNG.standard_normal(m) + 1j * RNG.standard_normal(m)).astype(np.complex64)
    assert traj.shape == (m, d)
    return traj, image, samples


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


@pytest.mark.parametrize("shape", [(12, 10), (6, 8, 5)])
def test_nufft_matches_direct_sum(shape):
    traj, image, samples = random_case(shape, 150)
    plan = larmor.NufftPlan(traj, shape)
    assert plan.shape == shape and plan.samples == 150
    assert rel(plan.forward(image), direct_forward(image, traj)) < 2e-3
    assert rel(plan.adjoint(samples), direct_adjoint(samples, traj, shape)) < 2e-3


def test_exact_dft_plan_matches_direct_sum():
    traj, image, samples = random_case((9, 11), 80)
    plan = larmor.NufftPlan(traj, (9, 11), exact=True)
    assert rel(plan.forward(image), direct_forward(image, traj)) < 1e-5
    assert rel(plan.adjoint(samples), direct_adjoint(samples, traj, (9, 11))) < 1e-5


def test_forward_and_adjoint_are_adjoint():
    traj, image, samples = random_case((16, 16), 300)
    plan = larmor.NufftPlan(traj, (16, 16), width=6)
    lhs = np.vdot(plan.forward(image).astype(np.complex128), samples)
    rhs = np.vdot(image.astype(np.complex128), plan.adjoint(samples))
    assert abs(lhs - rhs) / abs(lhs) < 1e-5


def test_batches_are_leading_axes():
    traj, image, _ = random_case((8, 8), 60)
    plan = larmor.NufftPlan(traj, (8, 8))
    stack = np.stack([image, 2 * image, 1j * image])
    out = plan.forward(stack)
    assert out.shape == (3, 60)
    np.testing.assert_allclose(out[1], 2 * out[0], rtol=1e-5, atol=1e-5)
    back = plan.adjoint(out)
    assert back.shape == (3, 8, 8)


def test_trajectory_shape_is_kept_for_samples():
    traj, image, _ = random_case((8, 8), 60)
    plan = larmor.NufftPlan(traj.reshape(6, 10, 2), (8, 8))
    assert plan.forward(image).shape == (6, 10)


def test_c_contiguous_complex64_is_not_copied():
    traj, image, samples = random_case((10, 10), 50)
    plan = larmor.NufftPlan(traj, (10, 10))
    out = np.empty(50, np.complex64)
    result = plan.forward(image, out=out)
    assert result is out
    assert plan._last_input_address == image.ctypes.data
    img_out = np.empty((10, 10), np.complex64)
    assert plan.adjoint(samples, out=img_out) is img_out
    assert plan._last_input_address == samples.ctypes.data
    # Another dtype or order is converted (a copy), with the same result.
    as128 = image.astype(np.complex128)
    np.testing.assert_allclose(plan.forward(as128), out, rtol=1e-6, atol=1e-6)
    assert plan._last_input_address != as128.ctypes.data
    fortran = np.asfortranarray(image)
    np.testing.assert_allclose(plan.forward(fortran), out, rtol=1e-6, atol=1e-6)


def test_cpu_device_arrays_are_accepted():
    traj, image, _ = random_case((10, 10), 50)
    plan = larmor.NufftPlan(traj, (10, 10), "cpu")
    x = larmor.to_device(image, "cpu")
    y = plan.forward(x)
    assert plan._last_input_address == x.ptr
    assert isinstance(y, larmor.DeviceArray) and y.shape == (50,)
    np.testing.assert_allclose(y.to_numpy(), plan.forward(image), rtol=1e-6, atol=1e-6)


def test_bad_inputs_raise_one_line_errors():
    traj, image, _ = random_case((10, 10), 50)
    plan = larmor.NufftPlan(traj, (10, 10))
    with pytest.raises(larmor.Error, match="not a multiple of 100"):
        plan.forward(np.zeros(7, np.complex64))
    with pytest.raises(larmor.Error, match="coordinates"):
        larmor.NufftPlan(np.zeros((5, 4), np.float32), (10, 10))
    with pytest.raises(larmor.Error, match="out must"):
        plan.forward(image, out=np.zeros(50, np.complex128))


def encoding_matrix(traj, shape):
    """F[j, n] = exp(-2 pi i k_j . r_n) in float64."""
    return np.exp(-2j * np.pi * traj.astype(np.float64) @ positions(shape).T)


def test_sense_normal_and_adjoint_against_float64_matrices():
    shape, m, coils = (10, 12), 150, 3
    traj, _, _ = random_case(shape, m)
    maps = np.stack([(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)) for _ in range(coils)]).astype(np.complex64)
    x = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)
    data = (RNG.standard_normal((coils, m)) + 1j * RNG.standard_normal((coils, m))).astype(np.complex64)
    n = np.prod(shape)
    f = encoding_matrix(traj, shape)
    s = maps.reshape(coils, -1).astype(np.complex128)
    normal = sum(np.conj(s[c]) * (f.conj().T @ (f @ (s[c] * x.ravel()))) for c in range(coils)) / n
    adjoint = sum(np.conj(s[c]) * (f.conj().T @ data[c]) for c in range(coils)) / np.sqrt(n)
    op = larmor.SenseNormal(traj, maps)
    assert op.shape == shape and op.coils == coils
    assert rel(op.normal(x).ravel(), normal) < 1e-4
    assert rel(op.adjoint(data).ravel(), adjoint) < 2e-3
    with_prior = larmor.SenseNormal(traj, maps, lam=0.5, reg="tikhonov")
    assert rel(with_prior.normal(x).ravel(), normal + 0.5 * x.ravel()) < 1e-4
    by_nufft = larmor.SenseNormal(traj, maps, psf="nufft")
    assert rel(by_nufft.normal(x).ravel(), normal) < 2e-3
    with pytest.raises(larmor.Error, match="expected none, tikhonov or fd"):
        larmor.SenseNormal(traj, maps, reg="l1")


def test_numpy_arrays_are_borrowed_without_a_copy():
    traj, image, samples = random_case((10, 10), 50)
    plan = larmor.NufftPlan(traj, (10, 10))
    x = larmor.asarray(image)
    assert x.borrowed and x.ptr == image.ctypes.data and x.shape == (10, 10) and x.device == "cpu"
    out = np.zeros(50, np.complex64)
    y = larmor.DeviceArray.from_dlpack(out)
    assert plan.forward(x, out=y) is y
    assert plan._last_input_address == image.ctypes.data
    np.testing.assert_array_equal(out, plan.forward(image))  # written where it is, the NumPy path's bits
    back = larmor.asarray(np.zeros((10, 10), np.complex64))
    plan.adjoint(larmor.asarray(samples), out=back)
    np.testing.assert_array_equal(back.to_numpy(), plan.adjoint(samples))
    # The producer is kept alive by the DeviceArray: nothing else holds this array.
    kept = larmor.asarray(np.full((10, 10), 2, np.complex64))
    np.testing.assert_array_equal(plan.forward(kept).to_numpy(), plan.forward(np.full((10, 10), 2, np.complex64)))
    # numpy.from_dlpack of a borrowed array is the same memory again.
    assert np.from_dlpack(x).ctypes.data == image.ctypes.data


def test_what_cannot_be_borrowed_is_refused_in_one_line():
    traj, image, _ = random_case((10, 10), 50)
    plan = larmor.NufftPlan(traj, (10, 10))
    with pytest.raises(larmor.Error, match="only as complex64"):
        larmor.asarray(image.astype(np.complex128))
    with pytest.raises(larmor.Error, match="only C-contiguous"):
        larmor.asarray(np.asfortranarray(image))
    with pytest.raises(larmor.Error, match="neither __dlpack__ nor __cuda_array_interface__"):
        larmor.asarray([1, 2, 3])
    frozen = np.zeros(50, np.complex64)
    frozen.flags.writeable = False
    with pytest.raises(larmor.Error, match="writable DeviceArray"):
        plan.forward(larmor.asarray(image), out=larmor.asarray(frozen))


def test_fft_on_borrowed_and_device_arrays():
    x = (RNG.standard_normal((3, 8, 6)) + 1j * RNG.standard_normal((3, 8, 6))).astype(np.complex64)
    expected = larmor.fft(x)
    d = larmor.asarray(x.copy())
    y = larmor.fft(d)
    assert isinstance(y, larmor.DeviceArray) and not y.borrowed
    np.testing.assert_array_equal(y.to_numpy(), expected)
    host = x.copy()
    assert larmor.fft(larmor.asarray(host), out=larmor.asarray(host)) is not None
    np.testing.assert_array_equal(host, expected)  # in place, where the NumPy array is
    out = np.empty_like(x)
    assert larmor.ifft(expected, out=out) is out
    np.testing.assert_allclose(out, x, atol=1e-5)


def test_recon_takes_device_array_kspace(phantoms):
    d = larmor.read(str(phantoms / "cart.h5"))
    k = np.ascontiguousarray(d.kspace)
    r = larmor.recon(larmor.asarray(k), method="grappa")
    np.testing.assert_array_equal(r.image, larmor.recon(k, method="grappa").image)


def cartesian_case(shape, coils):
    mask = RNG.uniform(size=shape) < 0.4
    maps = np.stack([(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)) for _ in range(coils)])
    x = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    return mask, maps.astype(np.complex64), x.astype(np.complex64)


def cfft(a, inverse=False):
    """The centred unitary FFT over all axes, float64."""
    f = np.fft.ifftn if inverse else np.fft.fftn
    return np.fft.fftshift(f(np.fft.ifftshift(a.astype(np.complex128)), norm="ortho"))


@pytest.mark.parametrize("shape", [(12, 10), (4, 8, 6)])
def test_cartesian_sense_normal_against_float64_numpy(shape):
    mask, maps, x = cartesian_case(shape, 3)
    s = maps.astype(np.complex128)
    normal = sum(np.conj(s[c]) * cfft(mask * cfft(s[c] * x), inverse=True) for c in range(3))
    data = np.stack([cfft(s[c] * x) for c in range(3)])  # E x = P FFT_u S x, before P
    points = data.reshape(3, -1)[:, np.flatnonzero(mask)].astype(np.complex64)
    adjoint = sum(np.conj(s[c]) * cfft(np.where(mask, data[c], 0), inverse=True) for c in range(3))
    op = larmor.SenseNormal.cartesian(mask, maps)
    assert op.shape == shape and op.coils == 3
    assert rel(op.normal(x), normal) < 1e-5
    assert rel(op.adjoint(points), adjoint) < 1e-5
    assert rel(op.adjoint(data.astype(np.complex64)), adjoint) < 1e-5  # whole grids: the sampled points taken
    tik = larmor.SenseNormal.cartesian(mask.astype(np.float32), maps, lam=0.25, reg="tikhonov")
    assert rel(tik.normal(x), normal + 0.25 * x) < 1e-5
    with pytest.raises(larmor.Error, match="mask must be"):
        larmor.SenseNormal.cartesian(mask[:-1], maps)


class DlpackOnly:
    """Another library's array as DLPack alone shows it (NumPy's own __dlpack__ behind it): the capsule path."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_capsules_are_borrowed_and_released():
    import sys

    image = (RNG.standard_normal((6, 8)) + 0j).astype(np.complex64)
    before = sys.getrefcount(image)
    d = larmor.asarray(DlpackOnly(image))
    assert d.borrowed and d.ptr == image.ctypes.data and d.shape == (6, 8)
    assert sys.getrefcount(image) > before  # the capsule's tensor holds the producer
    np.testing.assert_array_equal(d.to_numpy(), image)
    del d
    assert sys.getrefcount(image) == before  # its deleter ran
    for _ in range(10000):
        larmor.asarray(DlpackOnly(image))
        larmor.asarray(image)
    assert sys.getrefcount(image) == before  # no reference leaks over 10,000 borrows
    with pytest.raises(larmor.Error, match="only as complex64"):
        larmor.asarray(DlpackOnly(np.zeros(4, np.float32)))
    assert sys.getrefcount(image) == before
