"""pytest settings of the Python binding tests: a skipped test is a failed one.

A skip could hide a failure, so the only skip the project accepts is a script's exit code 77 listed in
tests/allowed-skips.txt (docs/testing.md, "Skips"); inside pytest every skip is turned into a failure.
"""
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid}: skipped, and a skip is a failure here (docs/testing.md, Skips)"


import os  # noqa: E402
import pathlib  # noqa: E402
import subprocess  # noqa: E402

import numpy as np  # noqa: E402

SOURCE = pathlib.Path(os.environ.get("LARMOR_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
CLI = os.environ.get("LARMOR_CLI", str(SOURCE / "build/default/bin/larmor-cli"))
SHARED_DATA = SOURCE.parent / "shared" / "data"


def run_cli(*args, cwd=None):
    """larmor-cli with these arguments; its stdout, or AssertionError with its stderr."""
    p = subprocess.run([CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0, f"larmor-cli {' '.join(map(str, args))}: {p.stderr}"
    return p.stdout


def cli_error(*args):
    """The one-line error larmor-cli prints for these arguments (without its 'larmor-cli: ' prefix)."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True)
    assert p.returncode != 0, f"larmor-cli {' '.join(map(str, args))} succeeded"
    line = [x for x in p.stderr.splitlines() if x.startswith("larmor-cli: ")][-1]
    return line[len("larmor-cli: "):]


def read_cfl(path):
    """A BART .cfl as NumPy (axes reversed, C order: the layout larmor's arrays have)."""
    base = str(path)[:-4] if str(path).endswith(".cfl") else str(path)
    dims = [int(x) for x in open(base + ".hdr").read().splitlines()[1].split()]
    return np.fromfile(base + ".cfl", np.complex64).reshape(dims[::-1])


@pytest.fixture(scope="session")
def phantoms(tmp_path_factory):
    """Simulated ISMRMRD files: cart.h5 (R 2, 16 ACS lines), full.h5 (fully sampled), radial.h5 (40 spokes)."""
    d = tmp_path_factory.mktemp("phantoms")
    run_cli("simulate", "--matrix", 48, "--coils", 4, "--accel", 2, "--acs", 16, "--output", d / "cart.h5")
    run_cli("simulate", "--matrix", 40, "--coils", 2, "--output", d / "full.h5")
    run_cli("simulate", "--matrix", 48, "--coils", 4, "--traj", "radial", "--spokes", 40, "--output", d / "radial.h5")
    return d
