"""The house rules of the tree: imports run zoo_cli/ -> zoo_tasks/ -> zoo/, files stay small, a
module uses only the public names of another, modules import each other without a cycle, an
import inside a function says why it is there, a class name is defined once, and imports are in
isort's order with the project's packages last. The measurement lab, zoo_benchmarks/, sits
beside the product: it imports zoo and zoo_tasks, the installed packages never import it (the
wheel does not ship it), and its modules keep the same rules.

Every import of every module is read with `ast`, including the ones inside functions (a lazy
import is still a dependency), and relative imports are resolved against the module's
package.
"""

import ast
import doctest
import json
import os
import subprocess
import sys
import tomllib

import pycodestyle
import pytest

from tests.budget import SLOW, SLOW_S
from tests.harness import REPO

# A package may import the packages below it, never one above it. The lab (zoo_benchmarks/) uses
# the library and the tasks; zoo_cli runs it, by name (zoo_cli.lab.import_lab), never by an
# import statement: INSTALLED, what the wheel ships, never imports it.
LAB = "zoo_benchmarks"
LAYERS = {"zoo": 0, "zoo_tasks": 1, LAB: 2, "zoo_cli": 3}
INSTALLED = ("zoo", "zoo_tasks", "zoo_cli")
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


def test_imports_run_from_cli_to_tasks_to_zoo():
    wrong = []
    for path in _modules():
        layer = LAYERS[path.split(os.sep)[0]]
        for line, top in _imported(path):
            if top in LAYERS and LAYERS[top] > layer:
                wrong.append(f"{path}:{line} imports {top}")
    assert not wrong, "imports against zoo_cli -> zoo_tasks -> zoo:\n" + "\n".join(wrong)


def test_the_import_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    module = tmp_path / "zoo" / "sub" / "m.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    import zoo_tasks.runs\n    from .. import tools\n"
                      "from . import x\n")
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    assert sorted(_imported(os.path.join("zoo", "sub", "m.py"))) == [
        (2, "zoo_tasks"), (3, "zoo"), (4, "zoo")]
    with pytest.raises(AssertionError, match=r"zoo/sub/m.py:2 imports zoo_tasks"):
        test_imports_run_from_cli_to_tasks_to_zoo()


def _lab_imports():
    return [f"{path}:{line} imports {top}" for path in _modules()
            if path.split(os.sep)[0] in INSTALLED for line, top in _imported(path) if top == LAB]


def test_the_lab_is_never_imported_by_zoo_zoo_tasks_or_zoo_cli():
    """The installed packages run where the lab is not (an installed wheel): zoo and zoo_tasks
    never import it, and zoo_cli reaches it only through zoo_cli.lab.import_lab, which says in
    one line that it runs from a clone of the repository."""
    found = _lab_imports()
    assert not found, f"the installed packages import the lab ({LAB}/):\n" + "\n".join(found)


def test_the_lab_check_sees_lazy_and_relative_imports(tmp_path, monkeypatch):
    for path, text in (
            ("zoo/m.py", "def f():\n    import zoo_benchmarks.gpu\n"),
            ("zoo_tasks/sub/m.py", "def f():\n    # lazy: a reason\n"
                                   "    from zoo_benchmarks import rows\n"),
            ("zoo_cli/m.py", "from zoo_benchmarks.report import run\n"),
            ("zoo_benchmarks/m.py", "import zoo_tasks\nfrom . import rows\n")):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    assert _lab_imports() == [os.path.join(*parts) + f":{line} imports zoo_benchmarks"
                              for parts, line in ((("zoo", "m.py"), 2),
                                                  (("zoo_tasks", "sub", "m.py"), 3),
                                                  (("zoo_cli", "m.py"), 1))]
    with pytest.raises(AssertionError, match=r"zoo_cli/m.py:1 imports zoo_benchmarks"):
        test_the_lab_is_never_imported_by_zoo_zoo_tasks_or_zoo_cli()


def test_every_module_opens_with_what_it_owns():
    missing = []
    for path in _modules():
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            if not ast.get_docstring(ast.parse(file.read(), path)):
                missing.append(path)
    assert not missing, "modules without an opening docstring:\n" + "\n".join(missing)


def test_no_module_is_over_500_lines():
    long = []
    for path in _modules():
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            count = sum(1 for _ in file)
        if count > MAX_LINES:
            long.append(f"{path}: {count} lines")
    assert not long, f"files over {MAX_LINES} lines (split them by concern):\n" + "\n".join(long)


# === Public names, no cycles, imports at the top ===


def _module_name(path):
    """"zoo/data/__init__.py" -> "zoo.data"; "zoo/files.py" -> "zoo.files"."""
    parts = path[:-3].split(os.sep)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_imports(path, modules):
    """(line, imported module, names, node, inside a function) of each import of a project
    module in `path`. `from a import b` imports the module a.b when there is one, else a."""
    with open(os.path.join(REPO, path), encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    package = _module_name(path).split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inside.update(id(sub) for sub in ast.walk(node))
    for node in ast.walk(tree):
        nested = id(node) in inside
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in LAYERS:
                    yield node.lineno, alias.name, [], node, nested
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            if source.split(".")[0] not in LAYERS:
                continue
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:
                    yield node.lineno, sub, [], node, nested
                else:
                    yield node.lineno, source, [alias.name], node, nested


def _all_modules():
    return {_module_name(path): path for path in _modules()}


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def _private_imports(modules):
    """`from module import _name`, and `module._name` on a project module imported by name."""
    found = []
    for name, path in sorted(modules.items()):
        aliases = {}  # local name -> project module
        for line, source, names, node, _ in _project_imports(path, modules):
            found += [f"{path}:{line} imports {source}.{n}" for n in names if _private(n)]
            if not names:
                for alias in node.names:
                    if source.endswith(alias.name) and (alias.asname or "." not in alias.name):
                        aliases[alias.asname or alias.name] = source
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            tree = ast.parse(file.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and \
                    isinstance(node.value, ast.Name) and node.value.id in aliases:
                found.append(f"{path}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_names():
    """A helper another module needs gets a public name in a module named for it."""
    found = _private_imports(_all_modules())
    assert not found, "private names imported across modules:\n" + "\n".join(found)


def _cycles(modules):
    """The import cycles among `modules` (strongly connected components of more than one
    module), function-level imports included."""
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for _, source, _, _, _ in _project_imports(path, modules):
            if source in modules and source != name:
                graph[name].add(source)
    # Tarjan's strongly connected components, iteratively.
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter[0]
                    counter[0] += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_no_import_cycle_even_through_function_level_imports():
    cycles = _cycles(_all_modules())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def _unexplained_lazy_imports(modules):
    """Imports of project modules inside functions with no comment on their line or the line
    above saying why they are not at the top."""
    found = []
    for name, path in sorted(modules.items()):
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            lines = file.read().splitlines()
        for line, source, _, node, nested in _project_imports(path, modules):
            statement = lines[line - 1:node.end_lineno]
            above = lines[line - 2].strip() if line > 1 else ""
            if nested and not above.startswith("#") and not any("#" in t for t in statement):
                found.append(f"{path}:{line} imports {source} inside a function")
    return sorted(set(found))


def test_imports_inside_functions_say_why():
    """Imports sit at the top of the module, where they show what it depends on; one inside
    a function (an optional heavy dependency, the CLI's start-up time) says why in a comment."""
    found = _unexplained_lazy_imports(_all_modules())
    assert not found, "function-level imports without a reason:\n" + "\n".join(found)


def test_the_rules_see_private_names_cycles_and_lazy_imports(tmp_path, monkeypatch):
    package = tmp_path / "zoo" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "zoo" / "__init__.py").write_text('"""z."""\n')
    (package / "__init__.py").write_text('"""p."""\nfrom zoo.pkg import a\n')
    (package / "a.py").write_text('"""a."""\ndef f():\n    from zoo.pkg import _x\n'
                                  '    import zoo.pkg.b as b\n    return b._y\n')
    (package / "b.py").write_text('"""b."""\ndef f():\n    # lazy: start-up time\n'
                                  '    from zoo.pkg import a\n')
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    monkeypatch.setattr("tests.test_layout.LAYERS", {"zoo": 0})
    modules = _all_modules()
    a = os.path.join("zoo", "pkg", "a.py")
    assert _private_imports(modules) == [f"{a}:3 imports zoo.pkg._x", f"{a}:5 uses zoo.pkg.b._y"]
    assert _cycles(modules) == [["zoo.pkg", "zoo.pkg.a", "zoo.pkg.b"]]
    assert _unexplained_lazy_imports(modules) == [f"{a}:3 imports zoo.pkg inside a function",
                                                  f"{a}:4 imports zoo.pkg.b inside a function"]


def test_the_library_calls_a_task_only_through_its_contract():
    """zoo/ knows a task through `zoo.training.task.Task` (optional methods have defaults
    there), never by probing it with hasattr / getattr or reading its `__dict__`."""
    found = []
    for path in _modules():
        if not path.startswith("zoo" + os.sep):
            continue
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            tree = ast.parse(file.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                    node.func.id in ("hasattr", "getattr") and node.args and \
                    isinstance(node.args[0], ast.Name) and node.args[0].id == "task":
                found.append(f"{path}:{node.lineno} {node.func.id}(task, ...)")
            if isinstance(node, ast.Attribute) and node.attr == "__dict__" and \
                    isinstance(node.value, ast.Name) and node.value.id == "task":
                found.append(f"{path}:{node.lineno} task.__dict__")
    assert not found, "tasks probed outside the contract:\n" + "\n".join(found)


# === One name, one class; imports in order ===


def _class_definitions():
    """{class name: ["path:line", ...]} of every class defined in the packages and the lab."""
    found = {}
    for path in _modules():
        with open(os.path.join(REPO, path), encoding="utf-8") as file:
            tree = ast.parse(file.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(f"{path}:{node.lineno}")
    return found


def test_no_class_name_is_defined_twice():
    """A class name means one class: a second class of the same name (a task's `Config` beside
    the library's, two `Report`s) makes an import or a traceback ambiguous. A deprecated name
    is an alias (`Old = New`), not a class."""
    twice = {name: places for name, places in _class_definitions().items() if len(places) > 1}
    assert not twice, "class names defined more than once:\n" + "\n".join(
        f"{name}: {', '.join(places)}" for name, places in sorted(twice.items()))


def test_the_class_check_sees_nested_classes(tmp_path, monkeypatch):
    for path, text in (("zoo/a.py", "class Report:\n    pass\n"),
                       ("zoo_tasks/b.py", "def f():\n    class Report:\n        pass\n"),
                       ("zoo_cli/c.py", "Report = 1\n")):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    assert _class_definitions() == {"Report": [os.path.join("zoo", "a.py") + ":1",
                                               os.path.join("zoo_tasks", "b.py") + ":2"]}
    with pytest.raises(AssertionError, match="Report: zoo/a.py:1, zoo_tasks/b.py:2"):
        test_no_class_name_is_defined_twice()


def _ruff_import_order(folder):
    """ruff's isort rules (I) over `folder` with the project's settings: (exit code, output)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--select", "I",
                           "--config", os.path.join(REPO, "pyproject.toml"),
                           "--output-format", "concise", "--no-cache", folder],
                          capture_output=True, text=True, cwd=REPO)
    return done.returncode, done.stdout + done.stderr


def test_imports_are_in_isort_order_with_the_project_last():
    """Standard library, third party, then the project's packages (`make lint` runs the same
    rules over the whole tree): every top-level package of the repository is first-party."""
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as file:
        settings = tomllib.load(file)["tool"]["ruff"]["lint"]
    assert "I" in settings["select"]
    assert sorted(settings["isort"]["known-first-party"]) == sorted([*LAYERS, "tests"])
    code, output = _ruff_import_order(REPO)
    assert code == 0, output


def test_the_import_order_check_fails_on_the_project_before_a_library(tmp_path):
    (tmp_path / "m.py").write_text('"""m."""\n\nimport zoo_tasks\nfrom zoo import files\n'
                                   'import numpy\n')
    code, output = _ruff_import_order(str(tmp_path))
    assert code == 1 and "I001" in output, output


# pycodestyle's continuation-line rules (`make lint` runs them over the code): a line that
# continues a bracket lines up with it.
CONTINUATION_RULES = ("E127", "E128", "E131")


def _misaligned_examples(path):
    """["path:line rule text"] of the continuation lines of the docstring examples in the
    module at `path` (repo-relative) that pycodestyle's CONTINUATION_RULES reject."""
    with open(os.path.join(REPO, path), encoding="utf-8") as file:
        tree = ast.parse(file.read(), path)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)) or not ast.get_docstring(node):
            continue
        docstring = node.body[0].value
        for example in doctest.DocTestParser().get_examples(ast.get_docstring(node, False)):
            if example.source.count("\n") < 2:
                continue
            report = _Collect(pycodestyle.StyleGuide(select=CONTINUATION_RULES,
                                                     max_line_length=200).options)
            pycodestyle.Checker(lines=example.source.splitlines(True), report=report,
                                options=report.options).check_all()
            found += [f"{path}:{docstring.lineno + example.lineno + line - 1} {text}"
                      for line, text in report.found]
    return found


class _Collect(pycodestyle.StandardReport):
    """A pycodestyle report that keeps (line, "code text") instead of printing."""

    def __init__(self, options):
        super().__init__(options)
        self.options, self.found = options, []

    def error(self, line_number, offset, text, check):
        code = super().error(line_number, offset, text, check)
        if code:
            self.found.append((line_number, text))
        return code


def test_docstring_examples_line_up_their_continuation_lines():
    """`>>>` examples are code too: their `...` lines line up with the bracket they continue,
    as `make lint` checks in the code (E127, E128, E131)."""
    found = [line for path in _modules() for line in _misaligned_examples(path)]
    assert not found, "docstring examples with misaligned continuation lines:\n" + "\n".join(
        found)


def test_the_example_check_finds_a_misaligned_line(tmp_path, monkeypatch):
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "m.py").write_text(
        'def f():\n    """F.\n\n    Examples:\n        >>> f({"a": 1,\n        ...  "b": 2},\n'
        '        ... 3)\n    """\n')
    monkeypatch.setattr("tests.test_layout.REPO", str(tmp_path))
    assert _misaligned_examples(os.path.join("zoo", "m.py")) == [
        os.path.join("zoo", "m.py") + ":6 E128 continuation line under-indented for visual "
        "indent", os.path.join("zoo", "m.py") + ":7 E128 continuation line under-indented for "
        "visual indent"]


def _slow_list_problems(slow, durations, slow_s, tests_dir):
    """What is wrong with tests/budget.py's SLOW against a run's durations: a test over
    `slow_s` seconds with no reason, a reason that says nothing, an entry naming no test."""
    problems = [f"{nodeid}: {seconds:.0f} s, over {slow_s} s, and not in tests/budget.py SLOW"
                for nodeid, seconds in durations.items()
                if seconds > slow_s and nodeid not in slow]
    for nodeid, reason in slow.items():
        if len(reason.split()) < 5:
            problems.append(f"{nodeid}: its reason in SLOW is under five words: {reason!r}")
        path, _, name = nodeid.partition("::")
        file = os.path.join(os.path.dirname(tests_dir), path)
        function = name.split("[")[0]
        if not os.path.exists(file) or f"def {function}(" not in open(file).read():
            problems.append(f"{nodeid}: SLOW names a test that does not exist")
    return problems


def test_every_test_over_a_minute_says_why():
    """tests/durations.json is the last measured `make test` (build/test-profile/
    durations.json, copied); each test over SLOW_S in it has its reason in tests/budget.py SLOW."""
    with open(os.path.join(REPO, "tests", "durations.json")) as f:
        durations = json.load(f)["tests"]
    assert _slow_list_problems(SLOW, durations, SLOW_S,
                               os.path.join(REPO, "tests")) == []


def test_the_slow_list_check_sees_a_missing_reason_and_a_stale_name():
    durations = {"tests/test_layout.py::test_no_module_is_over_500_lines": 61.0,
                 "tests/test_layout.py::test_every_test_over_a_minute_says_why": 5.0}
    problems = _slow_list_problems(
        {"tests/test_layout.py::test_every_test_over_a_minute_says_why": "slow",
         "tests/test_layout.py::test_gone[1]": "a reason of more than five words here"},
        durations, 60, os.path.join(REPO, "tests"))
    assert [p.split(": ")[0] for p in problems] == [
        "tests/test_layout.py::test_no_module_is_over_500_lines",
        "tests/test_layout.py::test_every_test_over_a_minute_says_why",
        "tests/test_layout.py::test_gone[1]"]
