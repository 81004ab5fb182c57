"""The house rules of the tree: imports run tools/ -> tasks/ -> zoo/, and files stay small.

Every import of every module is read with `ast`, including the ones inside functions (a lazy
import is still a dependency), and relative imports are resolved against the module's
package.
"""

import ast
import os

import pytest

from tests.harness import REPO

# A package may import the packages below it, never one above it.
LAYERS = {"zoo": 0, "tasks": 1, "tools": 2}
MAX_LINES = 500


def _modules():
    for top in LAYERS:
        for folder, _, files in os.walk(os.path.join(REPO, top)):
            for name in sorted(files):
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(folder, name), REPO)


def _imported(path):
    """(line, top-level package) of every import in the module at `path` (repo-relative)."""
    with open(os.path.join(REPO, path), encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    package = os.path.dirname(path).split(os.sep)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolved against this module's package
                base = package[:len(package) - node.level + 1]
                yield node.lineno, (base or (node.module or "").split("."))[0]
            else:
                yield node.lineno, node.module.split(".")[0]


def test_imports_run_from_tools_to_tasks_to_zoo():
    wrong = []
    for path in _modules():
        layer = LAYERS[path.split(os.sep)[0]]
        for line, top in _imported(path):
            if top in LAYERS and LAYERS[top] > layer:
                wrong.append(f"{path}:{line} imports {top}")
    assert not wrong, "imports against tools -> tasks -> zoo:\n" + "\n".join(wrong)


def test_the_import_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    module = tmp_path / "zoo" / "sub" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    import tasks.runs\n    from .. import tools\n"
                      "from . import x\n")
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    assert sorted(_imported(os.path.join("zoo", "sub", "m.py"))) == [
        (2, "tasks"), (3, "zoo"), (4, "zoo")]
    with pytest.raises(AssertionError, match=r"zoo/sub/m.py:2 imports tasks"):
        test_imports_run_from_tools_to_tasks_to_zoo()


def test_every_module_opens_with_what_it_owns():
    missing = []
    for path in _modules():
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            if not ast.get_docstring(ast.parse(file.read(), path)):
                missing.append(path)
    assert not missing, "modules without an opening docstring:\n" + "\n".join(missing)


def test_no_library_task_or_tool_file_is_over_500_lines():
    long = []
    for path in _modules():
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            count = sum(1 for _ in file)
        if count > MAX_LINES:
            long.append(f"{path}: {count} lines")
    assert not long, f"files over {MAX_LINES} lines (split them by concern):\n" + "\n".join(long)
