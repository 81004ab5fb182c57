"""The measurement lab (the repository's zoo_benchmarks/ package) for the commands that run it:
`zoo benchmark`, and the lab's rows of `zoo reproduce`.

The wheel ships zoo, zoo_tasks and zoo_cli, not the lab: it is found beside zoo_cli/ in the
clone this zoo runs from (an editable install puts only the three packages on the path), and
from an installed wheel it is missing, which `LabMissing` says in one line.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

LAB = "zoo_benchmarks"
# The clone zoo_cli/ is in: the folder above it.
ROOT = os.path.dirname(os.path.dirname(__file__))


class LabMissing(ImportError):
    """The lab is not here: zoo runs from an installed wheel, not from a clone."""


def locate(module):
    """Make the lab importable: found on the path, or in the clone beside zoo_cli/ (put first on
    sys.path); `LabMissing`, naming `module`, where neither has it. Imports nothing."""
    if importlib.util.find_spec(LAB) is None:
        if importlib.machinery.PathFinder.find_spec(LAB, [ROOT]) is None:
            raise LabMissing(f"{module} is in the repository's {LAB}/ folder, which the "
                             "installed zoo does not ship: run it from a clone of the "
                             "repository (pip install -e '.[benchmark]')")
        sys.path.insert(0, ROOT)


def import_lab(module):
    """The lab's `module` (e.g. "zoo_benchmarks.report"), from the path or from the clone beside
    zoo_cli/; `LabMissing` where neither has it."""
    locate(module)
    return importlib.import_module(module)
