"""`zoo train` under MultiWorkerMirroredStrategy: two real worker processes on 127.0.0.1.

Keras 3.15.1's `model.fit` fails under this strategy (keras-team/keras#20585); zoo patches the
two failing paths for that version (zoo.training.distribution._patch_keras_for_multi_worker).
Checked here:
the two workers end with identical weights, equal to float tolerance to one process training
on the same global batch; a worker killed mid-run, restarted with the chief (as a cluster
manager restarts a job), resumes from the chief's backup (zoo.training.backups) and ends with the
weights of the uninterrupted run. Dropout is off and the optimizer is SGD so that the only
difference between the runs is the order of float additions (per-replica dropout masks cannot
match one process's, and Adam's first steps turn tiny gradient noise into whole steps).
"""

import json
import os
import signal
import socket
import subprocess
import time

import keras
import numpy as np
import pytest

from tests import forkserver
from tests.harness import REPO
from tests.test_training import mrpc
from zoo.training import backups
from zoo_cli.main import main as cli

SETTINGS = ["train.steps=12", "train.eval_every=4", "train.optimizer=sgd",
            "train.learning_rate=0.1", "train.weight_decay=0", "model.dropout=0",
            "model.backbone.dropout=0", "model.backbone.attention_dropout=0"]


def _ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _command(sample_data, run_dir, *extra, experiment="bert/glue_mrpc"):
    args = ["train", "--experiment", experiment, "--run-dir", str(run_dir)]
    for value in (mrpc(sample_data, *SETTINGS, *extra) if experiment == "bert/glue_mrpc"
                  else extra):
        args += ["--set", value]
    return args


def _start_workers(sample_data, run_dir, *extra, experiment="bert/glue_mrpc"):
    addresses = [f"127.0.0.1:{port}" for port in _ports(2)]
    procs = []
    for index in range(2):
        tf_config = {"cluster": {"worker": addresses}, "task": {"type": "worker",
                                                                "index": index}}
        env = dict(os.environ, TF_CONFIG=json.dumps(tf_config), TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONPATH=REPO, KERAS_BACKEND="tensorflow")
        procs.append(forkserver.start(
            "zoo_cli.main", _command(sample_data, run_dir, "train.strategy=multi_worker_mirrored",
                                     *extra, experiment=experiment),
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
    return procs


def _finish(procs):
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, out in zip(procs, outputs):
        assert p.returncode == 0, out[-3000:]
    return outputs


def _weights(path):
    import zoo  # noqa: F401  (registers the zoo classes)

    model = keras.saving.load_model(path)
    return {w.path: keras.ops.convert_to_numpy(w) for w in model.weights}


def _max_difference(a, b):
    return max(float(np.abs(a[k] - b[k]).max()) for k in a)


@pytest.fixture(scope="module")
def runs(sample_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("multi_worker")
    outputs = _finish(_start_workers(sample_data, root / "two_workers"))
    # The reference: one process on the same global batch, in this one (no start-up to pay).
    assert cli(_command(sample_data, root / "one_process")) == 0
    return root, outputs


def test_two_workers_end_with_the_weights_of_one_process(runs):
    root, outputs = runs
    # MultiWorkerMirroredStrategy is CollectiveAllReduceStrategy by its class name.
    assert all("CollectiveAllReduceStrategy, 2 replicas" in out for out in outputs), outputs[0]
    chief = _weights(root / "two_workers" / "final.keras")
    worker = _weights(root / "two_workers" / "workers" / "worker-1" / "final.keras")
    single = _weights(root / "one_process" / "final.keras")
    assert _max_difference(chief, worker) == 0.0  # all-reduced updates: the same weights
    # SGD at lr 0.1 moves weights by ~1e-2 in 12 steps; float round-off stays below 1e-4.
    difference = _max_difference(chief, single)
    assert difference < 1e-4, difference
    metrics = json.loads((root / "two_workers" / "metrics.json").read_text())
    assert [m["step"] for m in metrics] == [4, 8, 12]


def test_a_killed_worker_restarts_with_the_chief_and_resumes_from_the_backup(runs,
                                                                             sample_data):
    root, _ = runs
    run_dir = root / "killed"
    procs = _start_workers(sample_data, run_dir)
    deadline = time.time() + 600
    while not backups.latest_step(str(run_dir / "backup")):  # the chief has backed up step 4
        assert all(p.poll() is None for p in procs) and time.time() < deadline, \
            [p.communicate()[0][-2000:] for p in procs if p.poll() is not None]
        time.sleep(0.05)
    procs[1].send_signal(signal.SIGKILL)  # worker 1 dies mid-run
    procs[1].wait()
    # The chief cannot finish a step without it; a cluster manager restarts the whole job.
    try:
        procs[0].wait(timeout=5)
    except subprocess.TimeoutExpired:
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
    assert not (run_dir / "final.keras").exists()
    outputs = _finish(_start_workers(sample_data, run_dir))
    assert all("resuming" in out for out in outputs), [o[-1500:] for o in outputs]
    resumed = _weights(run_dir / "final.keras")
    uninterrupted = _weights(root / "two_workers" / "final.keras")
    assert _max_difference(resumed, uninterrupted) < 1e-5
    assert _max_difference(resumed, _weights(run_dir / "workers" / "worker-1" /
                                             "final.keras")) == 0.0


def test_pretraining_builds_one_input_pipeline_per_worker(sample_data, tmp_path):
    """BERT pretraining under MultiWorkerMirroredStrategy: each worker builds its own input
    pipeline (`distribute_datasets_from_function`; which records each reads:
    test_pretraining.py::test_each_input_pipeline_reads_its_own_records), the workers stay
    in lock-step and end with the same weights."""
    from zoo.data.pretraining import write_pretraining_data

    write_pretraining_data([str(sample_data["root"] / "corpus" / "corpus.txt")],
                           sample_data["wordpiece"], str(tmp_path / "shards"), shards=4,
                           max_sequence_lengths=[32])
    run_dir = tmp_path / "pretrain"
    outputs = _finish(_start_workers(
        sample_data, run_dir, "model.preset=bert_tiny", "model.backbone.hidden_dim=64",
        f"model.vocabulary={sample_data['wordpiece']}", f"data.dir={tmp_path / 'shards'}",
        "train.batch_size=8", "train.steps=4", "train.warmup_steps=1", "train.eval_every=2",
        "data.phases=[{sequence_length: 32, fraction: 1.0}]", experiment="bert/pretrain"))
    assert all("CollectiveAllReduceStrategy, 2 replicas" in out for out in outputs), outputs[0]
    for index, out in enumerate(outputs):
        assert (f"input: one pipeline per worker (2 in all), this one pipeline {index} for 1 "
                "replica(s)") in out, out[-2000:]
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert [m["step"] for m in metrics] == [2, 4]
    assert all(np.isfinite(v) for m in metrics for v in m.values()), metrics
    assert _max_difference(_weights(run_dir / "final.keras"), _weights(
        run_dir / "workers" / "worker-1" / "final.keras")) == 0.0

