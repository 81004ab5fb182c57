"""The README's Python examples run as written (keeps the README true to the code)."""

import os
import re

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def python_blocks():
    with open(README, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the examples write sample data and checkpoints
    blocks = python_blocks()
    assert blocks, "README.md has no ```python example"
    for block in blocks:
        exec(compile(block, README, "exec"), {})
