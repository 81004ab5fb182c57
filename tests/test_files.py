"""zoo.files: local and remote paths (TensorFlow's in-process `ram://` filesystem stands in for
`gs://`, which this machine cannot reach), atomic writes, and a walk over the AST that keeps
every user path of zoo/, zoo_tasks/, zoo_cli/ and zoo_benchmarks/ on zoo.files."""

import ast
import os
import pathlib

import pytest

from tests.harness import REPO
from zoo import files

# Calls that reach a file by a path without going through zoo.files (which dispatches local
# paths to these same calls and remote ones to tf.io.gfile).
_OS = {"listdir", "makedirs", "mkdir", "remove", "unlink", "rename", "replace", "walk",
       "scandir", "stat", "rmdir", "removedirs"}
_OS_PATH = {"exists", "isdir", "isfile", "getsize", "getmtime", "lexists", "abspath"}

# Local-only places, each with its reason: (file, call) -> why.
ALLOWED = {
    ("zoo/training/run_lock.py", "open"): "reads /proc/<pid>/stat: is a local process a zombie",
    ("zoo/training/run_lock.py", "os.remove"): "the local branch's mkstemp file, hard-linked as "
                                               "the lock (remote paths take the gfile branch)",
    ("zoo/hardware.py", "open"): "reads /proc/cpuinfo: the local CPU's flags",
    ("zoo/hub.py", "open"): "config.json in huggingface_hub's cache (a local folder)",
    ("zoo/hub.py", "os.path.isfile"): "files of a snapshot in huggingface_hub's local cache",
    ("zoo/hub.py", "os.path.isdir"): "a snapshot folder in huggingface_hub's local cache",
    ("zoo_benchmarks/journey.py", "open"): "the journey's own folder and its CSVs, which "
                                           "transformers' Trainer reads as local files too",
    ("zoo_benchmarks/journey.py", "os.listdir"): "zoo's TensorBoard event files in its own "
                                                 "run folder (their times)",
    ("zoo_benchmarks/journey.py", "os.makedirs"): "the Trainer's folder in its own temporary "
                                                  "folder",
    ("zoo_benchmarks/journey.py", "os.path.getmtime"): "when a run's metrics file was written "
                                                       "(a local temporary folder)",
    ("zoo_benchmarks/journey_trainer.py", "open"): "the Trainer's side runs without "
                                                   "TensorFlow (no zoo.files): local CSVs and "
                                                   "its metrics JSON",
    ("zoo_benchmarks/journey_trainer.py", "os.replace"): "its metrics JSON's atomic rename "
                                                         "(no TensorFlow there)",
    ("zoo_benchmarks/journey_trainer.py", "os.path.abspath"): "its local checkpoint folder, "
                                                              "for transformers",
    ("zoo_benchmarks/generate.py", "open"): "the --out JSON and its scratch prompts; it "
                                            "runs where TensorFlow (and zoo.files) is not",
    ("zoo_benchmarks/generate.py", "os.replace"): "the --out JSON's atomic rename (no "
                                                  "TensorFlow there)",
    ("zoo_benchmarks/generate.py", "os.path.isdir"): "its own TemporaryDirectory",
    ("zoo_benchmarks/generate_contenders.py", "open"): "files in the benchmark's own "
                                                       "TemporaryDirectory, without TensorFlow",
    ("zoo_benchmarks/generate_contenders.py", "os.makedirs"): "a folder in that "
                                                              "TemporaryDirectory",
    ("zoo_benchmarks/generate_contenders.py", "os.path.isdir"): "a folder in that "
                                                                "TemporaryDirectory",
    ("zoo_benchmarks/contenders.py", "open"): "zoo_config.json in the benchmark's own "
                                              "tempfile scratch directory",
    ("zoo_benchmarks/contenders.py", "os.path.exists"): "an ONNX file cached in that scratch "
                                                        "directory",
    ("zoo_benchmarks/data.py", "open"): "corpora written to its TemporaryDirectory; "
                                        "/proc/<pid>/stat for the resident memory",
    ("zoo_benchmarks/data.py", "os.listdir"): "/proc: the processes of a timed run",
    ("zoo_benchmarks/serving.py", "open"): "corpus and texts written to its TemporaryDirectory",
    ("zoo_benchmarks/embeddings.py", "open"): "the texts as JSON in its TemporaryDirectory, "
                                              "for the contenders' processes",
    ("zoo_benchmarks/plot.py", "os.path.abspath"): "the clone's own docs/ folder, the default "
                                                   "of --table and --out",
    ("zoo_benchmarks/tokenizers.py", "open"): "the training corpus in its TemporaryDirectory",
    ("zoo_benchmarks/weights.py", "os.makedirs"): "per-family folders in the scratch directory",
    ("zoo_benchmarks/weights.py", "open"): "zoo_config.json into the scratch directory",
}


def _direct_calls(path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f, name = node.func, None
        if isinstance(f, ast.Name) and f.id == "open":
            name = "open"
        elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            module = f.value.id
            if (module == "os" and f.attr in _OS) or module == "shutil" or (
                    module == "glob" and f.attr == "glob") or (module == "io" and f.attr == "open"):
                name = f"{module}.{f.attr}"
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute)
              and isinstance(f.value.value, ast.Name) and f.value.value.id == "os"
              and f.value.attr == "path" and f.attr in _OS_PATH):
            name = f"os.path.{f.attr}"
        if name:
            yield node.lineno, name


def test_no_module_reaches_a_user_path_around_zoo_files():
    root = pathlib.Path(REPO)
    found, used = [], set()
    packages = ("zoo", "zoo_tasks", "zoo_cli", "zoo_benchmarks")
    for path in sorted(p for d in packages for p in (root / d).rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if relative == "zoo/files.py":
            continue
        for line, name in _direct_calls(path):
            if (relative, name) in ALLOWED:
                used.add((relative, name))
            else:
                found.append(f"{relative}:{line} {name}")
    assert not found, "use zoo.files (gs:// paths), or list a local-only place in ALLOWED " \
                      "with its reason:\n" + "\n".join(found)
    assert used == set(ALLOWED), f"stale ALLOWED entries: {set(ALLOWED) - used}"


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ram"])
def test_reads_writes_and_lists_the_same_on_both_filesystems(remote, tmp_path):
    base = f"ram://files_{os.getpid()}" if remote else str(tmp_path)
    text = "h\u00e9llo\nw\u00f6rld\r\nlast"
    files.write_text(f"{base}/a/x.txt", text)
    with files.open(f"{base}/a/x.txt", newline="") as file:
        assert file.read() == text
    with files.open(f"{base}/a/x.txt") as file:  # universal newlines, as open() reads
        assert list(file) == ["h\u00e9llo\n", "w\u00f6rld\n", "last"]
    with files.open(f"{base}/a/x.txt", "rb") as file:
        assert file.read() == text.encode("utf-8")
    with files.open(f"{base}/a/y.txt", "w") as file:
        file.write("y\n")
    assert files.listdir(f"{base}/a") == ["x.txt", "y.txt"] or sorted(
        files.listdir(f"{base}/a")) == ["x.txt", "y.txt"]
    assert files.glob(f"{base}/a/*.txt") == [f"{base}/a/x.txt", f"{base}/a/y.txt"]
    assert files.isdir(f"{base}/a") and files.isfile(f"{base}/a/x.txt")
    assert not files.isfile(f"{base}/a") and not files.exists(f"{base}/nothing")
    assert files.getsize(f"{base}/a/x.txt") == len(text.encode("utf-8"))
    files.copytree(f"{base}/a", f"{base}/b")
    walked = {(root[len(base):], tuple(sorted(dirs)), tuple(sorted(names)))
              for root, dirs, names in files.walk(base)}
    assert walked == {("", ("a", "b"), ()), ("/a", (), ("x.txt", "y.txt")),
                      ("/b", (), ("x.txt", "y.txt"))}
    files.rename(f"{base}/b/y.txt", f"{base}/b/z.txt")
    with pytest.raises(Exception):
        files.rename(f"{base}/b/x.txt", f"{base}/b/z.txt")  # no overwrite unless asked
    files.rename(f"{base}/b/x.txt", f"{base}/b/z.txt", overwrite=True)
    assert files.listdir(f"{base}/b") == ["z.txt"]
    files.rmtree(f"{base}/b")
    assert not files.exists(f"{base}/b")
    with pytest.raises(UnicodeDecodeError):
        files.write_bytes(f"{base}/bad.txt", b"ok\n\xff\n")
        with files.open(f"{base}/bad.txt") as file:
            file.read()


@pytest.mark.parametrize("remote", [False, True], ids=["local", "ram"])
def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(remote, tmp_path):
    base = f"ram://atomic_{os.getpid()}" if remote else str(tmp_path)
    target = f"{base}/out/model.bin"
    files.write_bytes(target, b"good")
    with pytest.raises(RuntimeError):
        with files.atomic_path(target) as tmp:
            files.write_bytes(tmp, b"half")
            raise RuntimeError("the writer died")
    with files.open(target, "rb") as file:
        assert file.read() == b"good"
    assert files.listdir(f"{base}/out") == ["model.bin"]
    with files.atomic_path(target) as tmp:
        files.write_bytes(tmp, b"new")
    with files.open(target, "rb") as file:
        assert file.read() == b"new"
    assert files.listdir(f"{base}/out") == ["model.bin"]


def test_pretrain_fine_tune_evaluate_export_and_serve_on_a_remote_filesystem(sample_data,
                                                                             tmp_path,
                                                                             monkeypatch):
    """The whole journey with every path on `ram://` (as on `gs://`): `zoo data pretrain` ->
    `zoo train` (BERT pretraining, then SST-2 from its run directory) -> `zoo evaluate` ->
    `zoo export` -> the SavedModel loaded and asked; nothing is written to the local disk."""
    import json

    import tensorflow as tf

    from zoo_cli.main import main as cli

    monkeypatch.chdir(tmp_path)  # a stray relative write would land here
    base = f"ram://journey_{os.getpid()}"
    root = sample_data["root"]
    files.copy(root / "corpus" / "corpus.txt", f"{base}/corpus/corpus.txt")
    files.copytree(sample_data["wordpiece"], f"{base}/vocab")
    files.copytree(root / "glue" / "SST-2", f"{base}/sst2")
    assert cli(["data", "pretrain", "--corpus", f"{base}/corpus/corpus.txt", "--vocab",
                f"{base}/vocab", "--out", f"{base}/shards", "--max-sequence-length", "32",
                "--shards", "2"]) == 0
    assert files.glob(f"{base}/shards/seq32/*.tfrecord")
    tiny = ["model.preset=bert_tiny", "model.backbone.hidden_dim=64", "train.batch_size=8",
            "train.steps=4", "train.eval_every=2"]

    def sets(*overrides):
        return [arg for value in (*tiny, *overrides) for arg in ("--set", value)]

    assert cli(["train", "--experiment", "bert/pretrain", "--run-dir", f"{base}/pretrain",
                *sets(f"model.vocabulary={base}/vocab", f"data.dir={base}/shards",
                      "data.phases=[]", "data.sequence_length=32", "train.warmup_steps=1")]) == 0
    assert cli(["train", "--experiment", "bert/glue_sst2", "--run-dir", f"{base}/sst2_run",
                *sets(f"model.init_checkpoint={base}/pretrain", f"data.dir={base}/sst2",
                      "data.sequence_length=32")]) == 0
    for name in ("final.keras", "best.keras", "metrics.json", "config.yaml"):
        assert files.exists(f"{base}/sst2_run/{name}"), name
    with files.open(f"{base}/sst2_run/metrics.json") as file:
        assert [entry["step"] for entry in json.load(file)] == [2, 4]
    assert files.glob(f"{base}/sst2_run/logs/*/events.out.tfevents.*")
    assert cli(["evaluate", "--run-dir", f"{base}/sst2_run"]) == 0
    assert cli(["export", "--run-dir", f"{base}/sst2_run", "--out", f"{base}/exports/sst2"]) == 0
    serve = tf.saved_model.load(f"{base}/exports/sst2/1").signatures["serving_default"]
    labels = serve(sentence1=tf.constant(["a fine , moving film", "dull"]))["label"].numpy()
    assert {label.decode() for label in labels} <= {"0", "1"} and len(labels) == 2
    assert not os.listdir(tmp_path), os.listdir(tmp_path)
