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


def forward_differences(u):
    """D u: one forward difference per axis longer than 1, 0 at the last index (Neumann)."""
    out = []
    for ax in range(u.ndim):
        if u.shape[ax] == 1:
            continue
        d = np.zeros_like(u)
        d[(slice(None),) * ax + (slice(0, -1),)] = np.diff(u, axis=ax)
        out.append(d)
    return np.stack(out)


def adjoint_differences(p, shape):
    u = np.zeros(shape, p.dtype)
    axes = [ax for ax in range(len(shape)) if shape[ax] > 1]
    for q, ax in zip(p, axes):
        lead = (slice(None),) * ax
        u[lead + (slice(1, None),)] += q[lead + (slice(0, -1),)]
        u[lead + (slice(0, -1),)] -= q[lead + (slice(0, -1),)]
    return u


def tv_prox_reference(x, t, iterations):
    """Beck & Teboulle's FGP in float64 from a zero dual field, as backend/sparsity_ops.hpp states it."""
    x = x.astype(np.complex128)
    d = sum(n > 1 for n in x.shape)
    p = np.zeros((d,) + x.shape, np.complex128)
    r, tk = p.copy(), 1.0
    for _ in range(iterations):
        u = x - t * adjoint_differences(r, x.shape)
        q = r + forward_differences(u) / (4 * d * t)
        pn = q / np.maximum(1, np.sqrt(np.sum(np.abs(q) ** 2, axis=0)))
        tk1 = (1 + np.sqrt(1 + 4 * tk * tk)) / 2
        r, p, tk = pn + (tk - 1) / tk1 * (pn - p), pn, tk1
    return x - t * adjoint_differences(p, x.shape)


@pytest.mark.parametrize("shape", [(20, 24), (6, 10, 12)])
def test_total_variation_and_its_prox_against_numpy(shape):
    x = crandn(*shape)
    tv = np.sum(np.sqrt(np.sum(np.abs(forward_differences(x.astype(np.complex128))) ** 2, axis=0)))
    assert larmor.total_variation(x) == pytest.approx(tv, rel=1e-5)
    u = larmor.tv_prox(x, 0.3, iterations=15)
    ref = tv_prox_reference(x, 0.3, 15)
    assert np.linalg.norm(u - ref) / np.linalg.norm(ref) < 1e-4
    assert larmor.total_variation(u) < larmor.total_variation(x)
    np.testing.assert_array_equal(larmor.tv_prox(x, 0.0), x)


def test_wavelet_prox_shrinks_details_and_follows_the_shift():
    x = crandn(32, 48)
    np.testing.assert_allclose(larmor.wavelet_prox(x, 0.0), x, atol=1e-5)
    assert larmor.wavelet_l1(np.ones((32, 48), np.complex64)) == pytest.approx(0, abs=1e-3)
    u = larmor.wavelet_prox(x, 0.5)
    assert larmor.wavelet_l1(u) < larmor.wavelet_l1(x) and np.linalg.norm(u) < np.linalg.norm(x)
    coarse = larmor.wavelet_prox(x, 1e6)
    assert larmor.wavelet_l1(coarse) == pytest.approx(0, abs=1e-2)
    shift = (3, 5)
    shifted = larmor.wavelet_prox(x, 0.5, shift=shift)
    np.testing.assert_allclose(shifted, np.roll(larmor.wavelet_prox(np.roll(x, shift, axis=(0, 1)), 0.5), (-3, -5), axis=(0, 1)),
                               atol=1e-5)


def test_coil_compression(phantoms):
    d = larmor.read(str(phantoms / "cart.h5"))
    matrix, kept = larmor.coil_compression(d, 2)
    m = matrix.reshape(-1, 2, 4)[0]  # (out, in)
    np.testing.assert_allclose(m @ m.conj().T, np.eye(2), atol=1e-5)
    assert 0.5 < kept[0] <= 1
    small = larmor.compress_coils(d.kspace, matrix)
    assert small.shape == (1, 2, 1, 48, d.kspace.shape[-1])
    assert np.linalg.norm(small) <= np.linalg.norm(d.kspace) * (1 + 1e-6)
    full, _ = larmor.coil_compression(d, 4)
    np.testing.assert_allclose(np.linalg.norm(larmor.compress_coils(d.kspace, full)), np.linalg.norm(d.kspace), rtol=1e-5)
    with pytest.raises(larmor.Error):
        larmor.coil_compression(d, 9)
