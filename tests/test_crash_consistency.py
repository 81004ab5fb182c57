"""Crash-consistent runs (issue #40): a kill or a full disk during a backup write, a damaged
backup, SIGTERM and SIGINT never cost the run.

Each fault is injected at a chosen write (`tests.faults`) or sent once a chosen backup is
committed, never by sleeping; then the same `zoo train` command is run again and must end
with exactly the weights of an uninterrupted run, each evaluation recorded once. The runs
start together, so the module costs about two runs' time.
"""

import json
import os
import pathlib
import signal
import subprocess

import keras
import numpy as np
import pytest

from tests import forkserver
from tests.harness import REPO, wait_for_backup
from tests.test_storage_faults import fill, tmpfs
from tests.test_training import final_weights, mrpc
from zoo.storage import StorageError, storage_message
from zoo.training import backups, callbacks, preemption, run_dir

STEPS = [10, 20, 30]


def command(sample_data, run_dir):
    args = ["--experiment", "bert/glue_mrpc", "--run-dir", str(run_dir)]
    for override in mrpc(sample_data, "train.steps=30", "train.eval_every=10",
                         "train.deterministic=true"):
        args += ["--set", override]
    return args


def start(args, fault=None, where=None):
    """`zoo train ARGS` in a process of its own (tests.forkserver), with `fault` injected at
    the write `where` (`tests.faults`); stdout and stderr apart."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    module, *rest = ["tests.faults", fault, where, "--"] if fault else ["zoo_cli.main"]
    return forkserver.start(module, [*rest, "train", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


@pytest.fixture(scope="module")
def runs(sample_data, tmp_path_factory):
    """An uninterrupted run and five interrupted ones, each started again once."""
    root = tmp_path_factory.mktemp("crashes")
    cmd = {name: command(sample_data, root / name) for name in
           ("reference", "kill", "enospc", "metrics", "final", "SIGTERM")}
    procs = {"reference": start(cmd["reference"]),
             "kill": start(cmd["kill"], "kill", "backup:30"),  # the last round's backup
             "enospc": start(cmd["enospc"], "enospc", "backup:20"),
             "metrics": start(cmd["metrics"], "kill", "file:metrics.json:2"),  # at step 20
             "final": start(cmd["final"], "enospc", "file:final.keras:1"),
             "SIGTERM": start(cmd["SIGTERM"])}
    # Once step 10 is backed up, mid-run. (A kill -9 mid-round is the `metrics` run's: killed
    # after training step 20, before that step's backup, it resumes at step 10.)
    wait_for_backup(procs["SIGTERM"], root / "SIGTERM" / "backup", 10, 600)
    procs["SIGTERM"].send_signal(signal.SIGTERM)
    first = {}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        run_files = sorted(p.name for p in (root / name).iterdir()
                           if p.name.startswith((".final.keras", "final.keras", ".metrics")))
        if (root / name / "metrics.json").exists():
            run_files += ["metrics.json", f"step {_metrics_steps(root / name)[-1]}"]
        first[name] = (proc.returncode, out, err, backups.committed(
            str(root / name / "backup")), _leftovers(root / name / "backup"), run_files)
    assert first["reference"][0] == 0, first["reference"][2][-3000:]
    # The damaged backup: the `kill` run's newest committed one (step 20; its step 30 is
    # torn) made unreadable as well. Resume must skip it, say so, and take step 10.
    damaged = first["kill"][3][0][1]
    backup_bytes = _size(pathlib.Path(damaged))  # the size of one backup of this run
    with open(os.path.join(damaged, backups.WEIGHTS), "r+b") as file:
        file.truncate(1000)
    again = {name: start(cmd[name]) for name in cmd if name != "reference"}
    second = {}
    for name, proc in again.items():
        out, err = proc.communicate(timeout=600)
        second[name] = (proc.returncode, out + err)
    return root, first, second, damaged, backup_bytes


def _leftovers(backup_dir):
    return sorted(p.name for p in backup_dir.glob(".tmp-*")) if backup_dir.exists() else []


def _metrics_steps(run_dir):
    return [e["step"] for e in json.loads((run_dir / "metrics.json").read_text())]


def _logged_steps(run_dir):
    """{(folder, tag): [steps]} of the run's TensorBoard scalars, in file order."""
    import tensorflow as tf

    logged = {}
    for folder in ("train", "eval"):
        for path in sorted((run_dir / "logs" / folder).glob("events.out.tfevents.*")):
            for record in tf.data.TFRecordDataset(str(path)):
                event = tf.compat.v1.Event.FromString(record.numpy())
                for value in event.summary.value:
                    logged.setdefault((folder, value.tag), []).append(event.step)
    return logged


def _assert_uninterrupted_weights(root, name):
    expected, actual = final_weights(root / "reference"), final_weights(root / name)
    assert set(actual) == set(expected)
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key], err_msg=f"{name}: {key}")
    assert _metrics_steps(root / name) == STEPS
    logged = _logged_steps(root / name)  # each step logged once, as by the uninterrupted run
    assert {tag: sorted(steps) for tag, steps in logged.items()} == _logged_steps(
        root / "reference")
    assert logged[("train", "loss")] == [10, 20, 30]
    assert not (root / name / "backup").exists()  # removed once complete


def test_a_kill_during_a_backup_write_and_a_damaged_backup_cost_nothing(runs):
    root, first, second, damaged, _ = runs
    code, _, err, committed, leftovers, _ = first["kill"]
    assert code == -signal.SIGKILL, err[-3000:]
    assert [step for step, _ in committed] == [20, 10]  # step 30's never committed
    assert len(leftovers) == 1  # its torn staging directory, which resume ignores
    code, out = second["kill"]
    assert code == 0, out[-3000:]
    assert f"backup {damaged}: unreadable" in out, out[-3000:]
    assert "resuming" in out and "at step 10" in out, out[-3000:]
    _assert_uninterrupted_weights(root, "kill")


def test_a_full_disk_during_a_backup_write_is_one_line_and_costs_nothing(runs):
    root, first, second, _, _ = runs
    code, _, err, committed, leftovers, _ = first["enospc"]
    assert code == 1, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("zoo train:")]
    assert len(lines) == 1 and "no space left on device" in lines[0].lower(), err[-3000:]
    assert lines[0] == (f"zoo train: error: writing the backup "
                        f"{root / 'enospc' / 'backup' / 'step_20'}: no space left on device")
    assert [step for step, _ in committed] == [10] and not leftovers
    code, out = second["enospc"]
    assert code == 0, out[-3000:]
    assert "at step 10" in out, out[-3000:]
    _assert_uninterrupted_weights(root, "enospc")


def test_a_kill_while_writing_the_metrics_leaves_them_and_its_temporary_is_cleared(runs):
    root, first, second, _, _ = runs
    code, _, err, committed, _, _ = first["metrics"]
    assert code == -signal.SIGKILL, err[-3000:]
    assert [step for step, _ in committed] == [10]  # killed before step 20's backup
    # The last complete metrics.json (step 10) and the torn temporary of the next one.
    torn, *kept = first["metrics"][5]
    assert torn.startswith(".metrics.json.") and kept == ["metrics.json", "step 10"], kept
    code, out = second["metrics"]
    assert code == 0, out[-3000:]
    assert "removed" in out and ".metrics.json." in out, out[-3000:]
    assert "at step 10" in out, out[-3000:]
    assert not [p for p in (root / "metrics").rglob(".*") if p.is_file()]  # no temporaries
    _assert_uninterrupted_weights(root, "metrics")


def test_a_full_disk_when_saving_the_final_model_keeps_the_last_backup(runs):
    root, first, second, _, _ = runs
    code, _, err, committed, _, _ = first["final"]
    assert code == 1, err[-3000:]
    lines = [line for line in err.splitlines() if line.startswith("zoo train:")]
    assert lines == [f"zoo train: error: saving the model {root / 'final' / 'final.keras'}: "
                     "no space left on device"], err[-3000:]
    assert [step for step, _ in committed][0] == 30
    # No final.keras then and no temporary of it left; the evaluations all recorded.
    assert first["final"][5] == ["metrics.json", "step 30"]
    code, out = second["final"]
    assert code == 0, out[-3000:]
    assert "at step 30" in out, out[-3000:]  # nothing trained again: only the model is saved
    _assert_uninterrupted_weights(root, "final")


def test_sigterm_stops_at_the_next_step_with_a_backup_and_resumes_there(runs):
    root, first, second, _, _ = runs
    name = "SIGTERM"
    code, _, err, committed, _, _ = first[name]
    assert code == 75, err[-3000:]
    [message] = [line for line in err.splitlines() if line.startswith("zoo train:")]
    assert f"stopped by {name} after step" in message, message
    stopped = int(message.split("after step ")[1].split(";")[0])
    assert committed[0][0] == stopped  # the backup of the very step it stopped at
    code, out = second[name]
    assert code == 0, out[-3000:]
    assert f"at step {stopped}" in out, out[-3000:]  # resumed there: no step trained twice
    _assert_uninterrupted_weights(root, name)


def _size(path):
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() \
        else path.stat().st_size


def test_a_run_on_a_disk_that_fills_during_a_backup_resumes_once_space_is_freed(
        runs, sample_data, tmp_path):
    """The issue's scenario on a real file system: the run directory on a tmpfs with room
    for what a run writes before its first backup and half of that backup."""
    root, _, _, _, backup = runs
    before = sum(_size(root / "reference" / name) for name in
                 ("config.yaml", "vocabulary", "best.keras", "metrics.json")) + 256 * 1024
    mount = tmp_path / "disk"
    with tmpfs(mount, "64m"):
        filler = mount / "filler"
        filler.write_bytes(b"\0" * (64 * 2 ** 20 - before - backup // 2))
        args = command(sample_data, mount / "run")
        failed = start(args)
        _, err = failed.communicate(timeout=600)
        assert failed.returncode == 1, err[-3000:]
        lines = [line for line in err.splitlines() if line.startswith("zoo train:")]
        assert lines == [f"zoo train: error: writing the backup {mount / 'run' / 'backup'}"
                         f"/step_10: no space left on device"], err[-3000:]
        assert not list((mount / "run" / "backup").glob("*"))  # nothing torn left behind
        filler.unlink()  # space is freed; the same command again
        again = start(args)
        out, err = again.communicate(timeout=600)
        assert again.returncode == 0, (out + err)[-3000:]
        expected, actual = final_weights(root / "reference"), final_weights(mount / "run")
        for key in expected:
            np.testing.assert_array_equal(actual[key], expected[key], err_msg=key)
        assert _metrics_steps(mount / "run") == STEPS


# === In one process: Ctrl-C, and the backups themselves ===


def test_ctrl_c_backs_up_the_step_under_way_and_a_second_one_stops_at_once(tmp_path):
    """SIGINT takes the path SIGTERM takes above (one handler); sent here by a callback at
    the end of step 3, so the stop is at step 3 whatever the machine's speed."""
    model = _model(0)

    class CtrlC(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                os.kill(os.getpid(), signal.SIGINT)

    x, y = np.zeros((64, 3), "float32"), np.zeros((64, 2), "float32")
    before = signal.getsignal(signal.SIGINT)
    with preemption.signals_noted() as received:
        stop = preemption.Preemption(received, str(tmp_path))
        with pytest.raises(preemption.Interrupted, match=r"stopped by SIGINT after step 3; "
                           r"backed up to .*step_3: run the same command to resume"):
            model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[CtrlC(), stop])
        assert backups.latest_step(str(tmp_path)) == 3
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is before  # put back


def _model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2),
                              keras.layers.Dropout(0.5, seed=seed)])
    model.compile(optimizer="adam", loss="mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_two_committed_backups_are_kept_and_the_newest_readable_one_restored(tmp_path):
    model = _model(0)
    for step in (1, 2, 3):
        model.layers[0].kernel.assign(np.full((3, 2), float(step)))
        backups.save(model, str(tmp_path), step)
    assert [s for s, _ in backups.committed(str(tmp_path))] == [3, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step_2", "step_3"]
    restored = model  # (a new model in this process would name its seed generators anew)
    restored.layers[0].kernel.assign(np.zeros((3, 2)))
    assert backups.restore(restored, str(tmp_path)) == 3
    np.testing.assert_array_equal(restored.layers[0].kernel.numpy(), np.full((3, 2), 3.0))
    (tmp_path / "step_3" / backups.WEIGHTS).write_bytes(b"not hdf5")
    said = []
    assert backups.restore(restored, str(tmp_path), log=said.append) == 2
    assert said and str(tmp_path / "step_3") in said[0] and "unreadable" in said[0]
    np.testing.assert_array_equal(restored.layers[0].kernel.numpy(), np.full((3, 2), 2.0))
    # A staging directory without its state.json is not a backup.
    (tmp_path / "step_4").mkdir()
    assert backups.latest_step(str(tmp_path)) == 3


def test_no_readable_backup_is_an_error_saying_what_to_delete(tmp_path):
    model = _model(0)
    backups.save(model, str(tmp_path), 5)
    (tmp_path / "step_5" / backups.RANDOM_STATE).write_bytes(b"")
    with pytest.raises(backups.BackupError, match=r"no readable backup in .*delete"):
        backups.restore(model, str(tmp_path), log=lambda line: None)
    assert backups.restore(model, str(tmp_path / "none")) == 0
    (tmp_path / "old").mkdir()  # an older zoo's Keras BackupAndRestore file: not a silent restart
    (tmp_path / "old" / "latest.weights.h5").write_bytes(b"")
    with pytest.raises(backups.BackupError, match=r"latest.weights.h5 is a backup in the layout "
                       r"of an older zoo.*delete .*old to train this run again from step 0"):
        backups.restore(model, str(tmp_path / "old"))


# === The other writes of a run: best.keras, checkpoints, TensorBoard ===


def test_a_full_disk_under_a_checkpoint_or_the_logs_is_one_line_and_keeps_the_last_good_copy(
        tmp_path):
    """A real full disk (a tmpfs) while best.keras, checkpoints/step_<N>.keras and the
    TensorBoard events are written; then a resume cuts the events file's torn tail."""
    import tensorflow as tf

    model = _model(0)
    with tmpfs(tmp_path / "disk", "4m") as disk:
        paths = [disk / "best.keras", disk / "checkpoints" / "step_20.keras"]
        (disk / "checkpoints").mkdir()
        for path in paths:
            run_dir.save_model(model, str(path))
        saved = {path: path.read_bytes() for path in paths}
        writer = tf.summary.create_file_writer(str(disk / "logs" / "train"))
        with writer.as_default():
            for step in (10, 20):
                tf.summary.scalar("loss", float(step), step=step)
        writer.flush()
        model.layers[0].kernel.assign(np.ones((3, 2)))
        fill(disk, leave=0)
        for path in paths:
            with pytest.raises(StorageError) as raised:
                run_dir.save_model(model, str(path))
            assert str(raised.value) == f"saving the model {path}: no space left on device"
            assert path.read_bytes() == saved[path]  # the last good copy, untouched
        assert sorted(p.name for p in disk.rglob("*.keras")) == ["best.keras", "step_20.keras"]
        [events] = (disk / "logs" / "train").glob("events.out.tfevents.*")
        with pytest.raises(tf.errors.ResourceExhaustedError) as raised:
            with writer.as_default():
                for step in range(30, 2000):
                    tf.summary.scalar("loss", float(step), step=step)
            writer.flush()
        assert storage_message(raised.value) == f"{events}; No space left on device"
        (disk / "filler").unlink()
        # What the writer got onto the disk before it filled, cut inside a record as a kill
        # mid-flush leaves it: a resume at step 20 keeps the complete records up to 20.
        size = events.stat().st_size
        with open(events, "r+b") as file:
            file.truncate(size - 3)
        callbacks.drop_logs_after(str(disk / "logs"), 20)
        steps = [tf.compat.v1.Event.FromString(r.numpy()).step
                 for r in tf.data.TFRecordDataset(str(events))]
        assert steps == [0, 10, 20], steps  # (0: the file-version event every file starts with)
        assert not [p for p in disk.rglob(".*") if p.is_file()]
