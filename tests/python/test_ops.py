"""larmor.fft against numpy.fft with the project's centring (docs/conventions.md), ESPIRiT maps, and the metrics."""
import numpy as np
import pytest

import larmor

RNG = np.random.default_rng(3)


def centred(x, axes, inverse=False):
    f = np.fft.ifftn if inverse else np.fft.fftn
    return np.fft.fftshift(f(np.fft.ifftshift(x, axes=axes), axes=axes, norm="ortho"), axes=axes)


def crandn(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


@pytest.mark.parametrize("shape,ndim", [((16,), 1), ((9, 12), 2), ((3, 7, 10), 2), ((5, 6, 8), 3), ((2, 4, 5, 6), 3)])
def test_fft_is_numpy_fft_centred_and_unitary(shape, ndim):
    x = crandn(*shape)
    axes = tuple(range(-ndim, 0))
    np.testing.assert_allclose(larmor.fft(x, ndim), centred(x, axes), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(larmor.ifft(x, ndim), centred(x, axes, inverse=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(larmor.ifft(larmor.fft(x, ndim), ndim), x, rtol=1e-5, atol=1e-5)


def test_fft_of_a_centred_impulse_is_flat():
    x = np.zeros((8, 9), np.complex64)
    x[4, 4] = 1
    np.testing.assert_allclose(larmor.fft(x), np.full((8, 9), 1 / np.sqrt(72)), atol=1e-6)


def test_fft_leaves_its_input_alone():
    x = crandn(6, 6)
    before = x.copy()
    larmor.fft(x)
    np.testing.assert_array_equal(x, before)


def test_espirit_maps_are_normalised_inside_the_object():
    n, coils = 32, 4
    yy, xx = np.mgrid[:n, :n] - n // 2
    obj = ((xx**2 + yy**2) < (n * 0.35) ** 2).astype(np.complex64)
    sens = np.stack([np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 14.0**2)) * np.exp(1j * 0.3 * c)
                     for c, (cx, cy) in enumerate([(-12, 0), (12, 0), (0, -12), (0, 12)])])
    ksp = larmor.fft((sens * obj).astype(np.complex64))
    calib = ksp[:, n // 2 - 12:n // 2 + 12, n // 2 - 12:n // 2 + 12]
    maps, eig = larmor.espirit(calib, (n, n))
    assert maps.shape == (coils, 1, n, n) and eig.shape == (1, n, n)
    inside = np.abs(obj) > 0
    energy = np.sum(np.abs(maps[:, 0]) ** 2, axis=0)
    np.testing.assert_allclose(energy[inside], 1, atol=1e-3)
    # The maps are the coil sensitivities up to a common phase and scale: the ratios of coils agree.
    ratio = maps[1, 0][inside] / maps[0, 0][inside]
    truth = sens[1][inside] / sens[0][inside]
    assert np.median(np.abs(ratio - truth) / np.abs(truth)) < 0.05


def test_compare_against_numpy_formulas():
    ref = np.abs(crandn(2, 1, 1, 16, 16)) + 1
    test = (ref * 1.7 + 0.05 * RNG.standard_normal(ref.shape)).astype(np.complex64)
    m = larmor.compare(test, ref.astype(np.complex64))
    t, r = np.abs(test).astype(np.float64), ref.astype(np.float64)
    a = np.sum(t * r) / np.sum(t * t)
    nrmse = np.linalg.norm(a * t - r) / np.linalg.norm(r)
    assert m["scale"] == pytest.approx(a, rel=1e-5)
    assert m["percent_error"] == pytest.approx(100 * nrmse, rel=1e-4)
    assert m["voxels"] == ref.size
    same = larmor.compare(ref.astype(np.complex64), ref.astype(np.complex64))
    assert same["percent_error"] == pytest.approx(0, abs=1e-5) and same["ssim"] == pytest.approx(1, abs=1e-6)


def test_errors_are_larmor_errors():
    with pytest.raises(larmor.Error, match="ndim 4"):
        larmor.fft(crandn(4, 4), 4)
    with pytest.raises(larmor.Error, match="complex"):
        larmor.fft(np.array(["a", "b"]), 1)
    assert issubclass(larmor.Error, RuntimeError)
