"""larmor.read and larmor.write: the CLI's readers and writers, NumPy views of the dataset's arrays (no copy), the
header as a dict, and errors with the CLI's one-line messages."""
import nibabel
import numpy as np
import pydicom
import pytest

import larmor
from conftest import SHARED_DATA, cli_error, read_cfl, run_cli


def test_ismrmrd_dataset_as_numpy(phantoms):
    d = larmor.read(str(phantoms / "cart.h5"))
    h = d.header
    assert h["recon_matrix"] == (48, 48, 1) and h["coils"] == 4 and h["trajectory"] == "cartesian"
    assert h["acceleration"] == (2, 1) and h["calibration_lines"] == 16
    assert d.kspace.dtype == np.complex64 and d.kspace.shape == (1, 4, 1, 48, h["encoded_matrix"][0])
    assert d.sampled.shape == (1, 1, 48) and d.sampled.sum() > 24
    assert d.trajectory is None and d.reference.shape == (1, 1, 1, 48, 48)
    # Views of the dataset's own arrays: the same memory every time, alive as long as any view is.
    assert d.kspace.ctypes.data == d.kspace.ctypes.data
    k = d.kspace
    del d
    assert np.isfinite(k).all()


def test_non_cartesian_trajectory(phantoms):
    d = larmor.read(str(phantoms / "radial.h5"))
    assert d.trajectory.shape == (40, 96, 3) and d.trajectory.dtype == np.float32
    assert np.abs(d.trajectory[..., :2]).max() <= 24.5 and np.all(d.trajectory[..., 2] == 0)


def test_twix_file(tmp_path):
    gre = SHARED_DATA / "twix-ve-gre-2ch" / "gre.dat"
    d = larmor.read(str(gre))
    assert d.header["coils"] == 2 and d.kspace.shape[1] == 2 and d.kspace.shape[-1] == 320
    r = larmor.recon(d)
    run_cli("recon", gre, "--device", "cpu", "--output", tmp_path / "cli.cfl")
    assert np.array_equal(read_cfl(tmp_path / "cli.cfl").ravel(), r.image.ravel())


def test_bart_cfl_and_radial_twix():
    brain = larmor.read(str(SHARED_DATA / "brain-poisson-8ch" / "ksp.cfl"))
    assert brain.kspace.shape[1] == 8 and brain.kspace.size == 180 * 230 * 8
    radial = larmor.read(str(SHARED_DATA / "twix-vb-radial-4ch" / "meas_MID00118_FID33075_sol24.dat"),
                         trajectory="radial:180")
    assert radial.header["trajectory"] != "cartesian" and radial.trajectory.shape[0] == 256


def test_write_every_format(phantoms, tmp_path):
    d = larmor.read(str(phantoms / "cart.h5"))
    r = larmor.recon(d)
    assert larmor.write(str(tmp_path / "r.cfl"), r, like=d)["kind"] == "BART"
    assert np.array_equal(read_cfl(tmp_path / "r.cfl").ravel(), r.image.ravel())
    larmor.write(str(tmp_path / "a.cfl"), r.image[0, 0, 0])  # a plain (y, x) array, no dataset
    assert np.array_equal(read_cfl(tmp_path / "a.cfl").ravel(), r.image.ravel())
    larmor.write(str(tmp_path / "r.nii"), r, like=d)
    nii = np.asarray(nibabel.load(str(tmp_path / "r.nii")).dataobj)
    assert nii.shape[:2] == (48, 48)
    np.testing.assert_allclose(nii.squeeze(), np.abs(r.image[0, 0, 0]).T, rtol=1e-6)
    larmor.write(str(tmp_path / "r.png"), r, like=d)
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = larmor.write(str(tmp_path / "dicom") + "/", r, like=d)
    ds = pydicom.dcmread(report["files"][0])
    assert ds.Rows == 48 and ds.Columns == 48 and ds.Modality == "MR"


def test_read_errors_are_the_cli_messages(tmp_path):
    missing = tmp_path / "nothere.h5"
    expected = cli_error("recon", missing, "--output", tmp_path / "x.png")
    with pytest.raises(larmor.Error) as e:
        larmor.read(str(missing))
    assert str(e.value) == expected
    with pytest.raises(larmor.Error, match="x.jpg"):
        larmor.write(str(tmp_path / "x.jpg"), np.zeros((4, 4), np.complex64))
