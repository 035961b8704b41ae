"""The calls themselves: no reference or memory leak over 10,000 small calls, the GIL released while the engine works
(another Python thread runs meanwhile), Ctrl-C cancels a reconstruction (within 0.5 s, between reports too), and DeviceArrays on the CPU (DLPack to
NumPy without a copy)."""
import gc
import os
import signal
import sys
import threading
import time
import _thread

import numpy as np
import pytest

import larmor
from conftest import run_cli

CALLS = 10_000


def resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_no_leak_over_ten_thousand_calls():
    x = np.ones((4, 4), np.complex64)
    traj = np.random.default_rng(1).uniform(-2, 2, (20, 2)).astype(np.float32)
    plan = larmor.NufftPlan(traj, (4, 4))
    out = np.empty(20, np.complex64)

    def round_of_calls(n):
        for _ in range(n):
            larmor.fft(x)
            plan.forward(x, out=out)
            plan.adjoint(out)
            larmor.to_device(x, "cpu").to_numpy()
            larmor.compare(x, x)

    round_of_calls(500)  # allocator pools and caches warmed
    gc.collect()
    refs, objects, rss = sys.getrefcount(x), len(gc.get_objects()), resident_bytes()
    round_of_calls(CALLS)
    gc.collect()
    assert sys.getrefcount(x) == refs
    assert sys.getrefcount(out) == 2
    assert len(gc.get_objects()) - objects < 50
    assert resident_bytes() - rss < 8 << 20, f"resident memory grew by {(resident_bytes() - rss) >> 10} KiB"


def other_thread_runs_during(call):
    """How often a pure-Python loop in another thread ran in the least busy quarter of `call` (5 ms from either end):
    the loop stamps the clock every 100 turns. A call that held the GIL for most of its time leaves quarters
    without a stamp (a call that lets it go only near an end still has the others empty)."""
    stamps, running = [], [True]

    def spin():
        turns = 0
        while running[0]:
            turns += 1
            if turns % 100 == 0:
                stamps.append(time.perf_counter())

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.02)
    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    running[0] = False
    t.join()
    a, b = t0 + 0.005, t1 - 0.005
    quarters = [sum(a + q * (b - a) / 4 < s < a + (q + 1) * (b - a) / 4 for s in stamps) for q in range(4)]
    return min(quarters), t1 - t0


def test_the_gil_is_released_while_the_engine_works(phantoms):
    sys.setswitchinterval(1e-4)
    d = larmor.read(str(phantoms / "radial.h5"))
    during, seconds = other_thread_runs_during(lambda: larmor.recon(d, method="cs", iters=200, tol=0))
    assert seconds > 0.05
    # With the GIL held the other thread would not run at all inside the call.
    assert during > 5, f"the other thread stamped {during} times in a quarter of {seconds:.3f} s of recon"
    big = np.ones((64, 256, 256), np.complex64)
    during, seconds = other_thread_runs_during(lambda: larmor.fft(big, 2))
    assert seconds > 0.02
    assert during > 1, f"the other thread stamped {during} times in a quarter of {seconds:.3f} s of fft"


def test_ctrl_c_cancels_a_reconstruction(phantoms):
    d = larmor.read(str(phantoms / "radial.h5"))
    t0 = time.perf_counter()
    full = larmor.recon(d, method="cs", iters=50, tol=0)
    per_iteration = (time.perf_counter() - t0) / 50
    timer = threading.Timer(0.1, _thread.interrupt_main)
    timer.start()
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        larmor.recon(d, method="cs", iters=100000, tol=0)
    timer.join()
    assert time.perf_counter() - t0 < 0.1 + 200 * per_iteration + 1.0
    assert full.image.shape == (1, 1, 1, 48, 48)


def test_ctrl_c_stops_a_stage_that_reports_no_progress(tmp_path):
    # A real SIGINT (as a terminal's Ctrl-C sends) inside 3D GRAPPA's planning and calibration, which report no
    # progress for seconds: KeyboardInterrupt within the workstation's 0.5 s, not at the next report.
    run_cli("simulate", "--matrix", "64x64x64", "--coils", 8, "--accel", "2x2", "--output", tmp_path / "g3.h5")
    d = larmor.read(str(tmp_path / "g3.h5"))
    for after in (0.3, 1.2):
        fired = {}

        def interrupt():
            fired["t"] = time.perf_counter()
            os.kill(os.getpid(), signal.SIGINT)

        timer = threading.Timer(after, interrupt)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            larmor.recon(d, method="grappa")
        latency = time.perf_counter() - fired["t"]
        timer.join()
        assert latency < 0.5, f"Ctrl-C at {after} s: KeyboardInterrupt {latency:.3f} s later"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):  # Python's own handler is back after the call
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


def test_cpu_device_array_round_trip_and_dlpack():
    x = (np.arange(24).reshape(2, 3, 4) * (1 + 1j)).astype(np.complex64)
    a = larmor.to_device(x, "cpu")
    assert a.shape == (2, 3, 4) and a.dtype == np.complex64 and a.device == "cpu" and a.nbytes == 24 * 8
    np.testing.assert_array_equal(a.to_numpy(), x)
    np.testing.assert_array_equal(np.asarray(a), x)
    assert a.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(a)
    assert v.ctypes.data == a.ptr  # NumPy reads the DeviceArray's memory, no copy
    np.testing.assert_array_equal(v, x)
    del a
    gc.collect()
    np.testing.assert_array_equal(v, x)  # the capsule keeps the DeviceArray alive
    assert not hasattr(larmor.to_device(x, "cpu"), "__cuda_array_interface__")
    b = larmor.to_device(x, "cpu")
    b.__dlpack__(stream=None, max_version=(1, 0), dl_device=None, copy=None)  # DLPack 1.0's keywords are accepted
    with pytest.raises(BufferError):
        b.__dlpack__(copy=True)
