"""How zoo declares its dependencies (issue #43): compatible ranges in setup.cfg, as a library
declares them, and the exact tested set in constraints.txt, which `make` installs with. Each
pin lies inside its range, and the installed versions are the pinned ones. The wheel itself is
tested by `make test-pythons` (.ci/pythons.sh, run by CI after `make test`): built, installed
beside stand-ins for PyPI's `tools` and `tasks` on each Python, and run from an empty
directory with no TensorFlow start-up line reaching the user."""

import configparser
import os
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.harness import REPO


def _requirements():
    setup = configparser.ConfigParser()
    setup.read(os.path.join(REPO, "setup.cfg"), encoding="utf-8")
    lines = setup["options"]["install_requires"].splitlines()
    return [Requirement(line) for line in lines if line.strip() and not line.startswith("#")]


def _pins():
    pins = {}
    with open(os.path.join(REPO, "constraints.txt"), encoding="utf-8") as file:
        for line in file:
            if line.strip() and not line.startswith("#"):
                name, version = line.strip().split("==")
                pins[canonicalize_name(name)] = Version(version)
    return pins


def test_runtime_requirements_are_ranges_that_hold_the_pinned_and_installed_versions():
    pins = _pins()
    for requirement in _requirements():
        name = canonicalize_name(requirement.name)
        operators = {spec.operator for spec in requirement.specifier}
        if operators:  # pyyaml and tqdm: any version
            assert "==" not in operators and "<" in operators, requirement  # a range
        assert name in pins, f"constraints.txt pins no {name}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (requirement,
                                                                               pins[name])
    for name, version in pins.items():  # what the tests run with is the pinned set
        installed = Version(metadata.version(name))
        assert Version(installed.public) == version, (name, installed, version)
