"""larmor.recon against larmor-cli recon on the same file and settings: the same image, bit for bit; the settings
(from the engine's one table) fail with the CLI's one-line messages; results carry timings, convergence and metrics."""
import numpy as np
import pytest

import larmor
from conftest import cli_error, read_cfl, run_cli

CASES = [
    ("cart.h5", "fft", {}),
    ("cart.h5", "grappa", {}),
    ("cart.h5", "cg", {"iters": 8}),
    ("full.h5", "fft", {"combine": "adaptive"}),
    ("radial.h5", "gridding", {"width": 6}),
    ("radial.h5", "cs", {"lam": 0.001, "iters": 15}),
    ("radial.h5", "cs", {"reg": "wavelet", "lambda_rule": "fixed", "lam": 2e-4, "iters": 10}),
    ("radial.h5", "cg", {"iters": 6, "toeplitz": "nufft", "kernel_direct": True}),
]


def cli_flags(settings):
    flags = []
    for k, v in settings.items():
        flag = "--" + ("lambda" if k == "lam" else k.replace("_", "-"))
        flags += [flag] if v is True else [flag, str(v)]
    return flags


@pytest.mark.parametrize("file,method,settings", CASES)
def test_recon_equals_the_cli_bit_for_bit(phantoms, tmp_path, file, method, settings):
    out = tmp_path / "cli.cfl"
    run_cli("recon", phantoms / file, "--method", method, "--device", "cpu", *cli_flags(settings), "--output", out)
    d = larmor.read(str(phantoms / file))
    r = larmor.recon(d, method=method, **settings)
    cli = read_cfl(out)
    assert cli.size == r.image.size
    assert np.array_equal(cli.ravel(), r.image.ravel()), f"max difference {np.abs(cli.ravel() - r.image.ravel()).max()}"


def test_result_carries_timings_convergence_and_metrics(phantoms):
    r = larmor.recon(larmor.read(str(phantoms / "radial.h5")), method="cs", lam=0.001, iters=5, keep_coil_images=True)
    assert r.image.shape == (1, 1, 1, 48, 48) and r.image.dtype == np.complex64
    assert r.coil_images.shape == (1, 4, 1, 48, 48)
    assert r.device == "cpu" and "FISTA" in r.timings and all(ms >= 0 for ms in r.timings.values())
    assert r.convergence and r.metrics["percent_error"] > 0
    assert r.provenance["settings"]["method"] == "cs"
    assert larmor.recon(larmor.read(str(phantoms / "cart.h5"))).coil_images is None


def test_settings_come_from_the_table():
    names = {s["name"] for s in larmor.settings()}
    assert {"method", "lambda", "iters", "reg", "lambda_rule", "grappa_kernel", "combine"} <= names
    assert all(s["help"] for s in larmor.settings())


@pytest.mark.parametrize("settings,flags", [
    ({"iters": -1}, ["--iters", "-1"]),
    ({"reg": "bogus"}, ["--reg", "bogus"]),
    ({"lam": -1.0}, ["--lambda", "-1.0"]),
])
def test_bad_settings_raise_the_cli_message(phantoms, tmp_path, settings, flags):
    expected = cli_error("recon", phantoms / "radial.h5", "--method", "cs", *flags, "--output", tmp_path / "x.png")
    with pytest.raises(larmor.Error) as e:
        larmor.recon(larmor.read(str(phantoms / "radial.h5")), method="cs", **settings)
    assert str(e.value) == expected


def test_a_setting_the_method_does_not_read_is_an_error(phantoms, tmp_path):
    expected = cli_error("recon", phantoms / "cart.h5", "--method", "fft", "--lambda", "0.1", "--output", tmp_path / "x.png")
    with pytest.raises(larmor.Error) as e:
        larmor.recon(larmor.read(str(phantoms / "cart.h5")), method="fft", lam=0.1)
    assert str(e.value) == expected
    with pytest.raises(larmor.Error, match="unknown setting bogus"):
        larmor.recon(larmor.read(str(phantoms / "cart.h5")), bogus=1)


def test_progress_is_reported_and_its_exception_stops_the_recon(phantoms):
    d = larmor.read(str(phantoms / "radial.h5"))
    seen = []
    larmor.recon(d, method="cs", iters=5, progress=lambda f, stage: seen.append((f, stage)))
    assert seen and all(0 <= f <= 1 for f, _ in seen)

    class Stop(Exception):
        pass

    def stop(f, stage):
        raise Stop(stage)

    with pytest.raises(Stop):
        larmor.recon(d, method="cs", iters=5, progress=stop)


def write_cfl(base, array):
    """NumPy (axes reversed) -> BART .cfl/.hdr."""
    with open(f"{base}.hdr", "w") as f:
        f.write("# Dimensions\n" + " ".join(map(str, array.shape[::-1])) + "\n")
    np.ascontiguousarray(array, np.complex64).tofile(f"{base}.cfl")


def test_recon_of_arrays_equals_the_cli_of_their_cfl(phantoms, tmp_path):
    d = larmor.read(str(phantoms / "cart.h5"))
    k = d.kspace[0]  # (coils, 1, pe1, readout)
    write_cfl(tmp_path / "k", k)
    run_cli("recon", tmp_path / "k.cfl", "--method", "grappa", "--device", "cpu", "--output", tmp_path / "cli.cfl")
    r = larmor.recon(k, method="grappa")
    assert np.array_equal(read_cfl(tmp_path / "cli.cfl").ravel(), r.image.ravel())
    assert np.array_equal(larmor.recon(k[:, 0], method="grappa").image, r.image)  # (coils, pe1, readout)


def test_recon_of_non_cartesian_arrays_equals_the_cli(phantoms, tmp_path):
    d = larmor.read(str(phantoms / "radial.h5"))
    k, traj = d.kspace[0], d.trajectory  # (coils, 1, spokes, readout), (spokes, readout, 3)
    write_cfl(tmp_path / "k", k)
    write_cfl(tmp_path / "t", traj.astype(np.complex64))
    run_cli("recon", tmp_path / "k.cfl", "--traj", tmp_path / "t.cfl", "--method", "cs", "--iters", 10, "--device", "cpu",
            "--matrix", "48x48", "--output", tmp_path / "cli.cfl")
    r = larmor.recon(k, trajectory=traj[..., :2], method="cs", iters=10, matrix="48x48")
    assert np.array_equal(read_cfl(tmp_path / "cli.cfl").ravel(), r.image.ravel())
    with pytest.raises(larmor.Error, match="trajectory must be real"):
        larmor.recon(k, trajectory=np.zeros((3, 4), np.float32))


@pytest.mark.parametrize("file,source,settings", [
    ("cart.h5", "espirit", {}),
    ("cart.h5", "walsh", {"calibration_size": 16}),
    ("radial.h5", "espirit", {"espirit_crop": 0.7}),
    ("radial.h5", "walsh", {}),
])
def test_coil_maps_equal_larmor_cli_maps(phantoms, tmp_path, file, source, settings):
    flags = []
    for k, v in settings.items():
        flags += ["--" + k.replace("_", "-"), str(v)]
    run_cli("maps", phantoms / file, "--coil-maps", source, "--device", "cpu", *flags, "--output", tmp_path / "m.cfl")
    maps = larmor.coil_maps(larmor.read(str(phantoms / file)), source, **settings)
    cli = read_cfl(tmp_path / "m.cfl")
    assert maps.shape == (1, 4, 1, 48, 48)
    assert np.array_equal(cli.ravel(), maps.ravel())


def test_a_series_of_frames_equals_the_cli(tmp_path):
    dyn = tmp_path / "dyn.h5"
    run_cli("simulate", "--frames", 3, "--traj", "golden", "--matrix", 32, "--coils", 2, "--output", dyn)
    run_cli("recon", dyn, "--method", "cs", "--iters", 8, "--device", "cpu", "--output", tmp_path / "cli.cfl")
    series = larmor.read_series(str(dyn))
    assert len(series) == 3 and [k["repetition"] for k in series.keys] == [0, 1, 2]
    assert series[1].kspace.shape[1] == 2
    results = larmor.recon_series(series, method="cs", iters=8)
    assert len(results) == 3 and results[0].provenance.get("dynamic")
    larmor.write_series(str(tmp_path / "py.cfl"), results, series)
    cli, py = read_cfl(tmp_path / "cli.cfl"), read_cfl(tmp_path / "py.cfl")
    assert cli.shape == py.shape and np.array_equal(cli, py)
    frames = np.stack([r.image.ravel() for r in results])
    assert np.array_equal(frames.ravel(), cli.ravel())
    with pytest.raises(larmor.Error, match="frames"):
        larmor.read(str(dyn))  # one frame at a time: the message says how to choose


@pytest.mark.parametrize("settings", [{}, {"grappa_kernel": "2x3", "chi": 1e-3}, {"grappa_calibration": "basic"}])
def test_grappa_calibrate_then_apply_equals_the_cli(phantoms, tmp_path, settings):
    """apply() fills the k-space from the calibration's weights and reconstructs it by the FFT: the CLI's grappa image
    bit for bit with the improved kernel; the basic kernel's pipeline goes from its hybrid space (x, ky) straight to
    the image where the fill returns k-space (a forward and an inverse FFT more): float32 rounding, measured 9e-8."""
    out = tmp_path / "cli.cfl"
    run_cli("recon", phantoms / "cart.h5", "--method", "grappa", "--device", "cpu", *cli_flags(settings), "--output", out)
    d = larmor.read(str(phantoms / "cart.h5"))
    cal = larmor.grappa_calibrate(d, **settings)
    assert cal.sampling["acceleration"] == 2 and cal.sampling["calibration_lines"][1] == 16
    w = cal.weights
    assert w.ndim == 3 and np.isfinite(w).all() and np.abs(w).max() > 0
    image, cli = cal.apply().image.ravel(), read_cfl(out).ravel()
    if settings.get("grappa_calibration") == "basic":
        assert np.linalg.norm(image - cli) <= 1e-6 * np.linalg.norm(cli)
    else:
        assert np.array_equal(image, cli)
    assert np.array_equal(cal.apply(d.kspace).image, cal.apply().image)  # the same k-space given
    # Arrays as recon takes them: the Dataset of their .cfl, the same weights' shape.
    assert larmor.grappa_calibrate(np.ascontiguousarray(d.kspace), **settings).weights.shape == w.shape


def test_grappa_weights_shape_and_apply_to_other_kspace(phantoms):
    """The weights' shape is the kernel's (entries, targets x coils, K_PE K_RO coils); apply() of scaled k-space is the
    scaled image (the fill is linear in the k-space); k-space of another size is refused with a ValueError."""
    d = larmor.read(str(phantoms / "cart.h5"))
    cal = larmor.grappa_calibrate(d, grappa_kernel="2x3")
    assert cal.weights.shape == (1, 4 * 1, 2 * 3 * 4)  # (entries, targets x coils, K_PE K_RO coils)
    other = np.ascontiguousarray(d.kspace * 2)
    assert np.allclose(cal.apply(other).image, 2 * cal.apply().image, rtol=1e-5, atol=1e-5 * np.abs(cal.apply().image).max())
    with pytest.raises(ValueError, match="elements, the calibrated data"):
        cal.apply(d.kspace[..., :-1])


def test_grappa_apply_uses_the_weights_as_given(phantoms):
    """No calibration in apply(): zero weights fill nothing (the zero-filled FFT image, bit for bit), and the coil
    images are affine in the weights (measured lines plus F W), so doubled weights give 2 x - x0."""
    d = larmor.read(str(phantoms / "cart.h5"))
    cal = larmor.grappa_calibrate(d)
    w = cal.weights
    cal.weights = np.zeros_like(w)
    assert np.array_equal(cal.apply().image, larmor.recon(d, method="fft").image)
    x0 = cal.apply(keep_coil_images=True).coil_images
    cal.weights = w
    x1 = cal.apply(keep_coil_images=True).coil_images
    cal.weights = 2 * w
    x2 = cal.apply(keep_coil_images=True).coil_images
    assert np.allclose(x2, 2 * x1 - x0, atol=1e-5 * np.abs(x1).max())
    assert np.abs(x1 - x0).max() > 0.01 * np.abs(x1).max()  # the weights fill something
    assert "grappa_weights" in cal.apply().provenance


def test_grappa_weights_of_another_scan(phantoms):
    """Scan B is scan A with each coil's phase turned (other coil sensitivities, the same object): B's own weights give
    A's image (a sum of squares does not see the phases); A's weights, assigned to B's calibration or applied to B's
    k-space through A's, fill B as A's coils would be filled: another image."""
    ka = np.ascontiguousarray(larmor.read(str(phantoms / "cart.h5")).kspace)
    phases = np.exp(0.9j * np.arange(ka.shape[1])).astype(np.complex64)
    kb = np.ascontiguousarray(ka * phases[None, :, None, None, None])
    cal_a, cal_b = larmor.grappa_calibrate(ka), larmor.grappa_calibrate(kb)
    own = cal_b.apply().image
    reference = cal_a.apply().image.ravel()
    assert np.linalg.norm(own.ravel() - reference) < 1e-4 * np.linalg.norm(reference)
    cal_b.weights = cal_a.weights
    other = cal_b.apply().image
    error = np.linalg.norm(other.ravel() - reference) / np.linalg.norm(reference)
    assert error > 1e-2, error
    assert np.array_equal(cal_a.apply(kb).image.ravel(), other.ravel())  # the same weights, the same k-space


def test_grappa_refuses_weights_of_another_shape(phantoms):
    d = larmor.read(str(phantoms / "cart.h5"))
    cal = larmor.grappa_calibrate(d)
    with pytest.raises(ValueError, match=r"expected shape \(1, 4, 80\) .*, got \(1, 4, 79\)$"):
        cal.weights = cal.weights[..., :-1]
    with pytest.raises(ValueError, match="expected shape"):
        cal.weights = larmor.grappa_calibrate(d, grappa_kernel="2x3").weights
    with pytest.raises(ValueError, match="complex numbers"):
        cal.weights = "weights"
    compressed = larmor.grappa_calibrate(d, out_coils=2)
    with pytest.raises(larmor.Error, match="coil compression"):
        compressed.apply()


def test_recon_out_device_gives_device_arrays(phantoms):
    """out="device": .image and .coil_images are DeviceArrays on the device that ran it (here the CPU's memory), the
    same values as out="numpy"; larmor.write still writes the result; another out= is a ValueError."""
    d = larmor.read(str(phantoms / "cart.h5"))
    host = larmor.recon(d, method="grappa", keep_coil_images=True)
    r = larmor.recon(d, method="grappa", keep_coil_images=True, out="device")
    assert isinstance(r.image, larmor.DeviceArray) and r.image.device == "cpu" and r.image.shape == host.image.shape
    assert np.array_equal(r.image.to_numpy(), host.image) and np.array_equal(r.coil_images.to_numpy(), host.coil_images)
    assert larmor.recon(d, out="device").coil_images is None
    with pytest.raises(ValueError, match="out=gpu is not one of numpy, device"):
        larmor.recon(d, out="gpu")
