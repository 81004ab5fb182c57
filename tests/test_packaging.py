"""How zoo declares its dependencies (issue #43): compatible ranges in setup.cfg, as a library
declares them, and the exact tested set in constraints.txt, which `make` installs with. Each
pin lies inside its range, and the installed versions are the pinned ones."""

import configparser
import json
import os
import re
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


def _stand_in_wheel(folder, name):
    """A wheel of a distribution `name` with an import package `name`, as PyPI's `tools` and
    `tasks` are (their import names are the ones zoo's first layout used)."""
    import zipfile

    path = os.path.join(folder, f"{name}-1.0-py3-none-any.whl")
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{name}/__init__.py", f"STAND_IN = {name!r}\n")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\n"
                                        "Root-Is-Purelib: true\nTag: py3-none-any\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


def test_the_wheel_installed_beside_tools_and_tasks_runs_from_an_empty_directory(sample_data,
                                                                                 tmp_path):
    """The wheel (`pip wheel .`), installed as users and Beam workers install it (no editable
    mode), in a fresh environment that already holds stand-ins for PyPI's `tools` and `tasks`:
    `zoo demo --models`, a `zoo train` of a packaged experiment, its `zoo export` and `zoo
    predict`, and `zoo reproduce --list` run from an empty directory, and the stand-ins still
    import. No TensorFlow start-up line reaches the user (they are written before absl's
    logging starts: TF_CPP_MIN_LOG_LEVEL, unset here as a user has it, would not stop them).
    The dependencies are this environment's (its site-packages on the fresh one's path, after
    its own: no download)."""
    import shutil
    import subprocess
    import sys
    import sysconfig

    source = tmp_path / "source"  # built from a copy: the build writes build/ and egg-info
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "site", "*.egg-info", "__pycache__", ".pytest_cache"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL")}
    start_up = re.compile(r"absl::InitializeLog|oneDNN custom operations|cuda drivers|"
                          r"cudart_stub|port\.cc|cpu_feature_guard")

    def run(*command, cwd=tmp_path):
        proc = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-3000:])
        if str(command[0]).endswith("zoo"):  # what a user of the command sees
            seen = start_up.search(proc.stdout + proc.stderr)
            assert not seen, (command, (proc.stdout + proc.stderr)[-3000:])
        return proc.stdout

    run(sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation",
        "-q", "-w", tmp_path / "wheels")
    wheel, = (tmp_path / "wheels").glob("zoo_models-*-py3-none-any.whl")
    fresh = tmp_path / "env"
    run(sys.executable, "-m", "venv", fresh)
    python = fresh / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    with open(os.path.join(site, "deps.pth"), "w", encoding="utf-8") as file:
        file.write(sysconfig.get_paths()["purelib"] + "\n")  # a path: its .pth files not run
    stand_ins = [_stand_in_wheel(tmp_path, name) for name in ("tools", "tasks")]
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", *stand_ins)
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel)

    empty = tmp_path / "empty"
    empty.mkdir()
    zoo = fresh / "bin" / "zoo"
    where = run(python, "-c", "import zoo_cli, zoo_tasks; print(zoo_cli.__file__, "
                "zoo_tasks.__file__)", cwd=empty)
    assert where.count(site) == 2, (where, site)  # the wheel's, not the repository's
    assert "bert_tiny" in run(zoo, "demo", "--models", "bert_tiny", cwd=empty)
    assert "bert/imdb" in run(zoo, "reproduce", "--list", cwd=empty)
    mrpc = sample_data["root"] / "glue" / "MRPC"  # the user's data: the suite's samples
    run(zoo, "train", "--experiment", "bert/glue_mrpc", "--set", f"data.dir={mrpc}",
        "--set", "model.preset=bert_tiny", "--set", f"model.vocabulary={sample_data['wordpiece']}",
        "--set", "data.sequence_length=32", "--set", "train.steps=2", "--set",
        "train.eval_every=2", "--run-dir", "runs/mrpc", cwd=empty)
    assert (empty / "runs" / "mrpc" / "final.keras").exists()
    run(zoo, "export", "--run-dir", "runs/mrpc", "--out", "exports/mrpc", cwd=empty)
    (empty / "requests.jsonl").write_text(
        '{"sentence1": "A cat sat .", "sentence2": "The cat sat ."}\n', encoding="utf-8")
    answer = json.loads(run(zoo, "predict", "--saved-model", "exports/mrpc", "--input",
                            "requests.jsonl", cwd=empty))
    assert answer["label"] in ("0", "1") and len(answer["probabilities"]) == 2
    assert run(python, "-c", "import tools, tasks; print(tools.STAND_IN, tasks.STAND_IN)",
               cwd=empty).split() == ["tools", "tasks"]
