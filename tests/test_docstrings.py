"""The runnable examples in zoo's docstrings still run (examples that name a user's own files,
such as "wiki.txt" or "cat.png", are marked `+SKIP` in place and not executed)."""

import doctest
import importlib
import pkgutil

import pytest

import zoo

MODULES = sorted(name for _, name, _ in pkgutil.walk_packages(zoo.__path__, "zoo."))
# Moved out of zoo/ (GPT-1's zero-shot heuristics are a use of the library), examples kept.
MODULES.append("zoo_tasks.zero_shot")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                             verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_public_entry_points_have_examples():
    """The examples above are not vacuous: the public entry points carry some."""
    attempted = 0
    for name in MODULES:
        finder = doctest.DocTestFinder()
        for test in finder.find(importlib.import_module(name)):
            attempted += sum(not example.options.get(doctest.SKIP) for example in test.examples)
    assert attempted >= 100, attempted
