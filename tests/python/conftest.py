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
