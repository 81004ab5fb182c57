"""One `zoo train` per run directory: `zoo.lock` names the host and pid of the process that
writes it; a second process is refused, a lock left by a dead process is taken over.

The real case runs real processes: a `zoo train` that holds the lock in the middle of its
training (paused there), a second `zoo train` on the same directory, and, once the first is
killed with SIGKILL, a third that takes its lock over. The object-store path of the lock (no
exclusive create there) runs on TensorFlow's in-process `ram://` filesystem.
"""

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.test_training import mrpc, zoo_train
from zoo.training import run_lock
from zoo_cli.main import main as cli


def _command(sample_data, run_dir, *overrides):
    args = ["--experiment", "bert/glue_mrpc", "--run-dir", str(run_dir)]
    for override in mrpc(sample_data, *overrides):
        args += ["--set", override]
    return args


def test_a_second_zoo_train_is_refused_and_a_dead_holder_is_taken_over(sample_data, tmp_path,
                                                                       capsys):
    run_dir = tmp_path / "run"
    lock = run_dir / run_lock.LOCK
    first = zoo_train(_command(sample_data, run_dir, "train.steps=100000",
                               "train.eval_every=100000"))
    try:
        deadline = time.monotonic() + 300
        while not lock.exists():
            assert first.poll() is None, first.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "no lock within 300 s"
            time.sleep(0.05)
        holder = json.loads(lock.read_text())
        assert holder["pid"] == first.pid and holder["host"] == socket.gethostname()
        # Paused while the second one runs: it holds its lock as a training process does,
        # without taking a core from the second (SIGKILL below ends it all the same).
        first.send_signal(signal.SIGSTOP)
        second = zoo_train(_command(sample_data, run_dir, "train.steps=100000",
                                    "train.eval_every=100000"))
        out = second.communicate(timeout=300)[0]
        assert second.returncode != 0, out[-3000:]
        assert f"in use by process {first.pid} on {socket.gethostname()}" in out, out[-3000:]
        assert first.poll() is None  # the first one lives on, untouched
        assert json.loads(lock.read_text()) == holder
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    # The killed process left its lock; the next run (here with --overwrite and another
    # step count) says it takes it over, trains, and leaves no lock behind.
    assert lock.exists()
    capsys.readouterr()
    assert cli(["train", *_command(sample_data, run_dir, "train.steps=4",
                                   "train.eval_every=4"), "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert f"taking over the lock of process {first.pid}" in out, out
    assert (run_dir / "final.keras").exists() and not lock.exists()


def test_a_lock_of_another_host_or_of_this_process_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lock = run_dir / run_lock.LOCK
    lock.write_text(json.dumps({"host": "tpu-host-7", "pid": 12, "started": "then",
                                "token": "t"}))
    with pytest.raises(run_lock.RunDirLocked, match=r"process 12 on tpu-host-7 since then.*"
                       r"delete .*zoo\.lock"):
        with run_lock.locked(str(run_dir)):
            pass
    assert json.loads(lock.read_text())["host"] == "tpu-host-7"  # left as it was
    lock.write_text("")  # not a lock zoo wrote (say, a crash while it was created)
    with pytest.raises(run_lock.RunDirLocked, match="is not a lock zoo wrote"):
        with run_lock.locked(str(run_dir)):
            pass
    lock.unlink()
    with run_lock.locked(str(run_dir)):
        with pytest.raises(run_lock.RunDirLocked, match="this process is already training"):
            with run_lock.locked(str(run_dir)):
                pass
        assert lock.exists()
    assert not lock.exists()


def test_a_refused_or_failed_run_leaves_no_directory_it_created(tmp_path):
    run_dir = tmp_path / "new"
    with pytest.raises(RuntimeError, match="bad config"):
        with run_lock.locked(str(run_dir)):
            assert (run_dir / run_lock.LOCK).exists()
            raise RuntimeError("bad config")
    assert not run_dir.exists()


def test_the_lock_on_an_object_store_path(tmp_path):
    """ram:// (TensorFlow's in-process filesystem) stands for gs://: the write-if-absent and
    read-back path, with a dead process's lock taken over as on a local disk."""
    import tensorflow as tf

    run_dir = "ram://bucket/runs/lock_test"
    path = f"{run_dir}/{run_lock.LOCK}"
    messages = []
    with run_lock.locked(run_dir, progress=messages.append):
        holder = json.loads(tf.io.gfile.GFile(path).read())
        assert holder["pid"] > 0 and holder["host"] == socket.gethostname()
        with pytest.raises(run_lock.RunDirLocked):
            with run_lock.locked(run_dir):
                pass
    assert not tf.io.gfile.exists(path) and not tf.io.gfile.exists(run_dir)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tf.io.gfile.makedirs(run_dir)
    with tf.io.gfile.GFile(path, "w") as file:
        file.write(json.dumps({"host": socket.gethostname(), "pid": dead.pid,
                               "started": "earlier", "token": "old"}))
    with run_lock.locked(run_dir, progress=messages.append):
        assert json.loads(tf.io.gfile.GFile(path).read())["token"] != "old"
    assert messages == [f"{run_dir}: taking over the lock of process {dead.pid} on "
                        f"{socket.gethostname()} (started earlier), which is no longer running"]
    assert not tf.io.gfile.exists(path)


def test_overwrite_of_a_seeds_or_sweep_directory_spares_a_live_run(tmp_path):
    """`--overwrite` deletes a whole seeds or sweep directory: not while a live process holds
    a run inside it (here: a sleeping child process named in its lock)."""
    parent = tmp_path / "seeds"
    (parent / "seed_0").mkdir(parents=True)
    run_lock.check_unlocked(str(parent))  # no lock: nothing to spare
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (parent / "seed_0" / run_lock.LOCK).write_text(json.dumps(
            {"host": socket.gethostname(), "pid": alive.pid, "started": "now", "token": "t"}))
        with pytest.raises(run_lock.RunDirLocked, match=f"seed_0 is in use by process "
                                                        f"{alive.pid}"):
            run_lock.check_unlocked(str(parent))
    finally:
        alive.kill()
        alive.wait()
    run_lock.check_unlocked(str(parent))  # its holder is gone
