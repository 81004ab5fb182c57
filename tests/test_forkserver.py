"""tests/forkserver.py: a forked command is the process `python -m MODULE` would be, as far as
the tests that use it look: its own pid, argv, folder, environment, streams and exit status."""

import json
import os
import signal
import subprocess

import pytest

from tests import forkserver


@pytest.fixture(autouse=True)
def _forking(monkeypatch):
    monkeypatch.setenv("ZOO_TEST_FORK", "1")  # the server itself, under ZOO_TEST_FORK=0 too


def _probe(action, **kwargs):
    return forkserver.start("tests.fork_probe", [action], stdout=subprocess.PIPE, **kwargs)


def test_a_forked_command_has_its_own_pid_streams_folder_and_runtime_environment(tmp_path):
    env = dict(os.environ, TF_CONFIG='{"task": 1}', TMPDIR=str(tmp_path))
    proc = _probe("exit:3", stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    assert isinstance(proc, forkserver.Forked)
    out, err = proc.communicate(timeout=60)
    seen = json.loads(out)
    assert proc.returncode == 3 and err == "to stderr\n"
    assert seen["pid"] == proc.pid != os.getpid()
    assert seen["name"] == "__main__" and seen["argv"] == ["exit:3"]
    assert seen["cwd"] == str(tmp_path) and seen["tf_config"] == '{"task": 1}'
    assert seen["tmp"] == str(tmp_path)  # not the server's temporary folder
    assert seen["modules"]  # forked after TensorFlow's import: what the server saves
    assert seen["tf2_behavior"] == "1"  # what TensorFlow's import sets, as in a fresh process


def test_exit_statuses_are_popens_signals_included():
    cpu = forkserver.STATS["cpu"]
    merged = _probe("raise", stderr=subprocess.STDOUT)
    out, err = merged.communicate(timeout=60)
    assert merged.returncode == 1 and err is None
    assert forkserver.STATS["cpu"] > cpu  # the child's CPU, for tests.suite_profile
    assert "to stderr" in out and "ValueError: raised in the probe" in out
    killed = _probe("kill", stderr=subprocess.DEVNULL)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    running = forkserver.start("tests.fork_probe", ["exit:0"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    running.send_signal(signal.SIGKILL)  # signalled whether or not it has ended by then
    assert running.wait(timeout=60) in (0, -signal.SIGKILL)
    done = forkserver.run("tests.fork_probe", ["exit:0"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0 and done.stderr == "to stderr\n"


def test_an_environment_read_at_start_up_gets_a_fresh_interpreter():
    fresh = _probe("exit:0", stderr=subprocess.PIPE,
                   env=dict(os.environ, KERAS_BACKEND="jax"))
    assert isinstance(fresh, subprocess.Popen)
    out, _ = fresh.communicate(timeout=120)
    assert fresh.returncode == 0 and not json.loads(out)["modules"]


def test_a_variable_set_since_the_server_started_gets_a_new_server(monkeypatch):
    forkserver.run("tests.fork_probe", ["exit:0"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60)
    servers = forkserver.STATS["servers"]
    # As a library imported later sets one (sentence-transformers: TORCHINDUCTOR_CACHE_DIR).
    monkeypatch.setenv("ZOO_PROBE_SET_LATER", "1")
    proc = _probe("exit:0", stderr=subprocess.DEVNULL)
    assert isinstance(proc, forkserver.Forked), forkserver.STATS
    assert proc.communicate(timeout=60)[0] and proc.returncode == 0
    assert forkserver.STATS["servers"] == servers + 1
