"""Storage faults (a full disk, a read-only file system) during `zoo export / predict / data
vocab`: one line naming the command, the operation and the path, exit 1, the last good output
left in place and no temporary file behind; `ZOO_TRACEBACK=1` still shows the traceback.

The faults are real: a 2-4 MB tmpfs mounted for the test (root only; skipped where mounting
is not permitted), filled up with a filler file or remounted read-only. The commands run in a
subprocess, so the exit status and stderr are what a user sees.
"""

import contextlib
import json
import os
import shutil
import subprocess

import pytest
import tensorflow as tf

from tests import forkserver
from zoo.metrics.predictions import write_predictions
from zoo.storage import StorageError, storage_message, storage_operation, storage_reason
from zoo_cli.main import main as cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def tmpfs(directory, size="2m"):
    """A small tmpfs mounted at `directory` for the block; unmounted after it."""
    os.makedirs(directory, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(directory)], capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"cannot mount a tmpfs to fill up (needs root): {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def read_only(directory):
    """Remount the tmpfs at `directory` read-only (chmod does not stop root)."""
    subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)


def fill(directory, leave=8 * 1024):
    """Fill the file system of `directory` up to `leave` bytes free."""
    stat = os.statvfs(directory)
    with open(os.path.join(directory, "filler"), "wb") as file:
        file.write(b"\0" * max(stat.f_bavail * stat.f_frsize - leave, 0))


def zoo(*args, traceback=False):
    """(exit status, stderr lines) of `python -m zoo_cli.main ARGS` in a process of its own
    (tests.forkserver)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    env.pop("ZOO_TRACEBACK", None)
    if traceback:
        env["ZOO_TRACEBACK"] = "1"
    done = forkserver.run("zoo_cli.main", args, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=300)
    return done.returncode, done.stderr.splitlines()


def fault_lines(lines, reason):
    return [line for line in lines if reason in line]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-step MRPC run (bert_tiny, 64 wide, a 300-token vocabulary learnt on 40 rows), its
    export, and the vocabulary: about 10 s."""
    from zoo.data.samples import write_samples
    from zoo.tokenizers import train_vocabulary

    root = tmp_path_factory.mktemp("storage_faults")
    write_samples(root / "samples", train_rows=40)
    mrpc = root / "samples" / "glue" / "MRPC"
    train_vocabulary([str(mrpc / "train.tsv")], size=300, kind="wordpiece",
                     out=str(root / "vocab"))
    args = ["train", "--experiment", "bert/glue_mrpc", "--run-dir", str(root / "run")]
    for value in ["model.preset=bert_tiny", "model.backbone.hidden_dim=64",
                  f"data.dir={mrpc}", f"model.vocabulary={root / 'vocab'}",
                  "data.sequence_length=32", "train.batch_size=16", "train.steps=2",
                  "train.eval_every=2"]:
        args += ["--set", value]
    assert cli(args) == 0
    from zoo_tasks import runs

    export = runs.export_run(str(root / "run"), str(root / "exports"), progress=lambda _: None)
    return {"root": root, "run": root / "run", "export": export, "vocab": root / "vocab",
            "corpus": mrpc / "train.tsv"}


def test_zoo_export_onto_a_full_disk_is_one_line_and_leaves_the_last_version(tiny, tmp_path):
    with tmpfs(tmp_path / "disk", size="4m") as disk:
        base = disk / "exports"
        shutil.copytree(tiny["export"], base / "1")  # the last good export
        before = sorted(os.listdir(base / "1"))
        fill(disk)
        code, lines = zoo("export", "--run-dir", tiny["run"], "--out", base)
        assert code == 1, lines
        [line] = fault_lines(lines, "no space left on device")
        assert line == f"zoo export: error: writing the export {base}/2: no space left on " \
                       "device", lines
        assert len(lines) == 2 and "ZOO_TRACEBACK=1" in lines[1], lines  # the line, the hint
        assert os.listdir(base) == ["1"]  # no version 2, no .tmp-2-* staging directory
        assert sorted(os.listdir(base / "1")) == before


def test_zoo_data_vocab_onto_a_read_only_disk_keeps_the_old_vocabulary(tiny, tmp_path):
    with tmpfs(tmp_path / "disk") as disk:
        shutil.copytree(tiny["vocab"], disk / "vocab")
        old = (disk / "vocab" / "vocab.txt").read_text()
        read_only(disk)
        args = ("data", "vocab", "--corpus", tiny["corpus"], "--size", "100", "--kind",
                "wordpiece", "--out", disk / "vocab")
        code, lines = zoo(*args)
        assert code == 1, lines
        [line] = fault_lines(lines, "read-only file system")
        assert line == f"zoo data: error: writing the vocabulary {disk}/vocab: read-only " \
                       "file system", lines
        assert len(lines) == 2, lines
        assert (disk / "vocab" / "vocab.txt").read_text() == old
        assert sorted(os.listdir(disk)) == ["vocab"]  # no staging directory
        code, lines = zoo(*args, traceback=True)
        text = "\n".join(lines)
        assert code == 1 and "Traceback (most recent call last)" in text, text
        assert "OSError: [Errno 30] Read-only file system" in text  # the cause, kept
        assert lines[-1] == f"zoo.storage.StorageError: writing the vocabulary {disk}/vocab: " \
                            "read-only file system"


def test_zoo_predict_onto_a_read_only_disk_keeps_the_old_output(tiny, tmp_path):
    requests = tmp_path / "in.jsonl"
    requests.write_text(json.dumps({"sentence1": "a cat", "sentence2": "the dog"}) + "\n")
    with tmpfs(tmp_path / "disk") as disk:
        (disk / "out.jsonl").write_text("earlier answers\n")
        read_only(disk)
        code, lines = zoo("predict", "--saved-model", tiny["export"], "--input", requests,
                          "--output", disk / "out.jsonl")
        assert code == 1, lines
        [line] = fault_lines(lines, "read-only file system")
        assert line == f"zoo predict: error: writing the predictions {disk}/out.jsonl: " \
                       "read-only file system", lines
        assert (disk / "out.jsonl").read_text() == "earlier answers\n"
        assert os.listdir(disk) == ["out.jsonl"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    with tmpfs(tmp_path / "disk") as disk:
        path = disk / "predictions" / "dev.tsv"
        write_predictions(str(path), ["0", "1"])
        old = path.read_text()
        fill(disk, leave=0)
        with pytest.raises(StorageError) as raised:
            write_predictions(str(path), ["1"] * 10_000)  # 40 KB
        assert str(raised.value) == f"writing the predictions {path}: no space left on device"
        assert raised.value.errno == 28 and isinstance(raised.value.__cause__, OSError)
        assert path.read_text() == old and os.listdir(path.parent) == ["dev.tsv"]


def test_storage_faults_are_told_from_other_errors():
    def convert(error):
        with storage_operation("writing the export", "out/1"):
            raise error

    no_space = tf.errors.ResourceExhaustedError(
        None, None, "{{function_node __wrapped__SaveV2}} out/.tmp-1/variables/x.tempstate1; "
        "No space left on device [Op:SaveV2]")
    faults = {
        no_space: "no space left on device",
        tf.errors.PermissionDeniedError(None, None, "gs://b/out: HTTP 403"): "permission denied",
        tf.errors.FailedPreconditionError(None, None, "out/x; Read-only file system"):
            "read-only file system",
        tf.errors.NotFoundError(None, None, "out/.tmp/x; No such file or directory"):
            "no such file or directory",
        tf.errors.UnknownError(None, None, "out/x; Input/output error"): "input/output error",
        RuntimeError("Unable to synchronously create file (unable to open file: name = 'x', "
                     "errno = 30, error message = 'Read-only file system')"):
            "read-only file system",
        FileNotFoundError(2, "No such file or directory", "out/1"): "no such file or directory",
    }
    chained = ValueError("the model cannot be saved")  # raised `from` an OSError
    chained.__cause__ = OSError(28, "No space left on device")
    faults[chained] = "no space left on device"
    for error, reason in faults.items():
        with pytest.raises(StorageError) as raised:
            convert(error)
        assert str(raised.value) == f"writing the export out/1: {reason}"
        assert raised.value.__cause__ is error
    # Not storage: an out-of-memory ResourceExhausted, a missing op, bad values, our own
    # messages (no errno), an inner StorageError (kept as it is).
    for error in [tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"),
                  tf.errors.NotFoundError(None, None, "Op type not registered 'Foo'"),
                  ValueError("No such file or directory"), KeyError("x"),
                  FileExistsError("out/1 exists; versions are never overwritten"),
                  StorageError("reading the corpus", "c.txt", "permission denied")]:
        with pytest.raises(type(error)) as raised:
            convert(error)
        assert raised.value is error
    assert storage_reason(tf.errors.ResourceExhaustedError(None, None, "OOM")) is None
    # Outside any storage_operation (zoo_cli/main.py): one line, TensorFlow's decorations gone.
    assert storage_message(no_space) == "out/.tmp-1/variables/x.tempstate1; No space left " \
                                        "on device"
    assert storage_message(tf.errors.PermissionDeniedError(None, None, "gs://b: 403\nmore")) \
        == "gs://b: 403: permission denied"
    assert storage_message(KeyError("x")) is None


def test_a_storage_error_survives_pickling():
    import pickle

    error = pickle.loads(pickle.dumps(StorageError("writing the export", "o/1", "no space "
                                                   "left on device", 28)))
    assert str(error) == "writing the export o/1: no space left on device"
    assert (error.operation, error.path, error.reason, error.errno) == \
        ("writing the export", "o/1", "no space left on device", 28)


def test_a_missing_input_inside_a_write_block_is_not_called_a_fault_of_the_output(tmp_path):
    # A conversion reads its source inside the block that writes its output.
    with pytest.raises(FileNotFoundError) as raised:
        with storage_operation("writing the conversion", tmp_path / "out"):
            open("/nonexistent/source/model.safetensors", "rb")
    assert not isinstance(raised.value, StorageError)
    with pytest.raises(StorageError, match="writing the conversion .*: no such file"):
        with storage_operation("writing the conversion", tmp_path / "gone" / "out"):
            open(tmp_path / "gone" / ".out.tmp" / "x", "wb")


def test_zoo_data_pretrain_onto_a_full_disk_keeps_the_old_shards(tmp_path, capsys):
    """Pretraining shards (Beam's DirectRunner in this process) onto a disk that fills up:
    one line, the earlier shards and their metadata untouched, nothing staged left."""
    from tests.data_fixtures import write_corpus, write_vocab

    vocab = write_vocab(str(tmp_path))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 30)
    with tmpfs(tmp_path / "disk", size="2m") as disk:
        args = ["data", "pretrain", "--corpus", corpus, "--vocab", vocab, "--out",
                str(disk / "out"), "--max-sequence-length", "16", "--direct_num_workers", "1"]
        assert cli([*args, "--shards", "1"]) == 0
        before = {p.name: p.read_bytes() for p in (disk / "out" / "seq16").iterdir()}
        capsys.readouterr()
        fill(disk, leave=0)
        assert cli([*args, "--shards", "2", "--dupe-factor", "3"]) == 1
        lines = capsys.readouterr().err.splitlines()
        [line] = fault_lines(lines, "no space left on device")
        assert line == f"zoo data: error: writing the pretraining data {disk}/out: no space " \
                       "left on device", lines
        (disk / "filler").unlink()
        assert os.listdir(disk) == ["out"] and os.listdir(disk / "out") == ["seq16"]
        assert {p.name: p.read_bytes() for p in (disk / "out" / "seq16").iterdir()} == before
