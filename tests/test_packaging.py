"""How zoo declares its dependencies (issue #43): compatible ranges in setup.cfg, as a library
declares them, and the exact tested set in constraints.txt, which `make` installs with. Each
pin lies inside its range, and the installed versions are the pinned ones. What the wheel
holds: zoo, zoo_tasks and zoo_cli, never the measurement lab (zoo_benchmarks/), and a zoo
without the lab says in one line that the benchmarks run from a clone. The wheel itself is
tested by `make test-pythons` (.ci/pythons.sh, run by CI beside `make install-test` and `make
test`): built, installed beside stand-ins for PyPI's `tools` and `tasks` on each Python, and
run from an empty directory with no TensorFlow start-up line reaching the user."""

import argparse
import configparser
import os
import shutil
import subprocess
import sys
import zipfile
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


def test_the_wheel_ships_zoo_zoo_tasks_and_zoo_cli_and_not_the_lab(tmp_path):
    """Built from a copy of the tree, the lab beside the packages as in a clone: its top-level
    folders are the three packages and the distribution's metadata."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO, name), source / name)
    for name in ("zoo", "zoo_tasks", "zoo_cli", "zoo_benchmarks"):
        shutil.copytree(os.path.join(REPO, name), source / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps",
                    "--no-build-isolation", "-q", "-w", str(tmp_path / "wheel")],
                   check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp_path / "wheel").glob("zoo_models-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"zoo", "zoo_tasks", "zoo_cli"}
    assert "zoo_cli/benchmark.py" in names and "zoo/configs/reproduce/bert/imdb.yaml" in names


def test_zoo_benchmark_without_the_lab_says_in_one_line_to_run_from_a_clone(
        tmp_path, monkeypatch, capsys):
    """As from an installed wheel (no zoo_benchmarks on the path or beside zoo_cli/): `zoo
    benchmark` fails with one line, and `zoo reproduce` hands zoo_tasks no lab (zoo's own rows
    run; a lab row stops with its message, tests/test_reproduce.py)."""
    from zoo_cli import benchmark, lab, reproduce

    monkeypatch.setattr(lab, "ROOT", str(tmp_path))
    monkeypatch.setattr(sys, "path", [p for p in sys.path
                                      if not os.path.isdir(os.path.join(p or ".", lab.LAB))])
    for name in [m for m in sys.modules if m.split(".")[0] == lab.LAB]:
        monkeypatch.delitem(sys.modules, name)
    assert benchmark.run(argparse.Namespace(target="models")) == 1
    err = capsys.readouterr().err
    assert err == ("zoo benchmark: error: zoo_benchmarks.report is in the repository's "
                   "zoo_benchmarks/ folder, which the installed zoo does not ship: run it from "
                   "a clone of the repository (pip install -e '.[benchmark]')\n")
    assert reproduce.lab_trainers() == {}
    # `zoo benchmark` itself answers so before TensorFlow loads (zoo_cli.main's
    # `before_tensorflow`): the descriptor capture that wraps TensorFlow's import never runs.
    from zoo_cli import main

    main.build_parser()  # the command modules imported first: zoo_cli.data binds the real one

    def loads_tensorflow():
        raise AssertionError("zoo benchmark loaded TensorFlow before refusing")
    monkeypatch.setattr(main, "quiet_stderr_fd", loads_tensorflow)
    assert main.main(["benchmark", "tokenizers"]) == 1
    assert capsys.readouterr().err == err


def test_uv_installs_from_where_pip_would(tmp_path):
    """`make install-test` and `make test-pythons` install with uv (.ci/uv_as_pip.py), which
    reads no pip configuration: pip's index, extra indexes, find-links folders, constraints
    files and certificate reach uv, pip's PIP_* variables over its files, and a UV_* variable
    set by the user over both."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("uv_as_pip",
                                                  os.path.join(REPO, ".ci", "uv_as_pip.py"))
    uv_as_pip = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(uv_as_pip)
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.example/simple\n"
                    "extra-index-url = file:///a/simple\n  file:///b/simple\n"
                    "find-links = /wheels\n  /more-wheels\nconstraint = /etc/c1.txt /etc/c2.txt\n"
                    "trusted-host = a.example b.example\n[install]\ntimeout = 30\n")
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=str(conf), PIP_CERT="/certs.pem", PIP_DEFAULT_TIMEOUT="45")
    settings = uv_as_pip.pip_settings(sys.executable, env)
    assert uv_as_pip.uv_environment(settings, {})["UV_HTTP_TIMEOUT"] == "45"  # PIP_* wins
    uv_env = uv_as_pip.uv_environment(settings, {"UV_HTTP_TIMEOUT": "99"})
    assert uv_env["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    assert uv_env["UV_INDEX"] == "file:///a/simple file:///b/simple"
    assert uv_env["UV_FIND_LINKS"] == "/wheels,/more-wheels"
    assert uv_env["SSL_CERT_FILE"] == "/certs.pem"
    assert uv_env["UV_INSECURE_HOST"] == "a.example b.example"
    assert "UV_NO_INDEX" not in uv_env
    assert uv_env["UV_HTTP_TIMEOUT"] == "99"  # the user's UV_HTTP_TIMEOUT, not pip's
    assert uv_env["UV_INDEX_STRATEGY"] == "unsafe-best-match"
    assert uv_as_pip.constraints(settings) == ["-c", "/etc/c1.txt", "-c", "/etc/c2.txt"]
