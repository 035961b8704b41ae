"""Runs the test_* functions of one test file where pytest is not installed (the GPU machine's Python may lack it):
each with a fresh temporary folder when it takes `tmp_path`; exit 1 when any failed. No skips exist here.

    python3 tests/python/run_without_pytest.py tests/python/test_gpu.py
"""
import importlib.util
import inspect
import pathlib
import sys
import tempfile
import traceback


def main(path):
    spec = importlib.util.spec_from_file_location(pathlib.Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    failed = 0
    tests = [(name, f) for name, f in vars(module).items() if name.startswith("test_") and callable(f)]
    for name, f in tests:
        with tempfile.TemporaryDirectory() as tmp:
            kwargs = {"tmp_path": pathlib.Path(tmp)} if "tmp_path" in inspect.signature(f).parameters else {}
            try:
                f(**kwargs)
                print(f"PASSED {name}")
            except Exception:  # noqa: BLE001 (every failure is reported)
                failed += 1
                print(f"FAILED {name}\n{traceback.format_exc()}")
    print(f"{len(tests) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
