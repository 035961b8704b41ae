"""The examples of docs/python.md, run as they are written (each ```python block in a fresh namespace, in a folder
holding the files the page says to make: phantom.h5 from larmor-cli simulate, gre.dat a twix file). The
```python gpu block runs in test_gpu.py."""
import os
import re

import pytest

from conftest import SHARED_DATA, SOURCE, run_cli

PAGE = SOURCE / "docs" / "python.md"


def examples(tag="python"):
    return re.findall(r"^```" + tag + r"\n(.*?)^```", PAGE.read_text(), flags=re.S | re.M)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("docs")
    command = re.search(r"^(larmor-cli simulate .*)$", PAGE.read_text(), flags=re.M).group(1).split()
    run_cli(*command[1:], cwd=d)
    os.symlink(SHARED_DATA / "twix-ve-gre-2ch" / "gre.dat", d / "gre.dat")
    return d


def test_the_page_has_its_examples():
    assert len(examples()) == 7 and len(examples("python gpu")) == 2


@pytest.mark.parametrize("index", range(7))
def test_example_runs(workdir, index, monkeypatch, capsys):
    monkeypatch.chdir(workdir)
    exec(compile(examples()[index], f"docs/python.md example {index + 1}", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip()
