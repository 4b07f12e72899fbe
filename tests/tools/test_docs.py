"""The Python examples in README.md and docs/*.md run (each file in one namespace, in a
temporary working directory)."""

import linecache
import os
import re

import pytest

from tests.helpers import REPO

FILES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))


def _blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("path", [f for f in FILES if _blocks(f)], ids=lambda p: p.name)
def test_markdown_examples_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, code in enumerate(_blocks(path)):
        name = f"<{path.name} example {i}>"            # inspect.getsource finds functions
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        exec(compile(code, name, "exec"), namespace)    # our own docs, not user input
    assert os.getcwd() == str(tmp_path)
