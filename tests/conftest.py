import os
import shutil

# Before any TensorFlow/Keras import: quiet start-up and a known backend for the main process.
# TensorFlow's oneDNN kernels stay on, as users run them (TF_ENABLE_ONEDNN_OPTS unset): faster
# here too (docs/measurements.md, "The test suite", has the figures behind this file's settings).
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# Tests never touch the network: transformers and huggingface_hub read local folders only, and
# anything that would reach the Hub fails at once instead of waiting on a connection.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Under pytest-xdist every worker (and the processes its tests start) runs each TF op on one
# thread: the workers already fill the cores. TF_NUM_INTEROP_THREADS stays as TensorFlow sets it.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
# JAX in the tests' processes (the other-backend checks) compiles without XLA's expensive
# passes (LLVM at -O0): the programs are tiny and run a few times each, so compiling them is
# most of their time. The comparisons and their tolerances are left as they were
# (tests/test_jax_distribution.py set it first, for its own processes). Those checks took
# 138-146 CPU-s against 174-180 with the passes on (docs/measurements.md, "The test suite");
# JAX_DISABLE_MOST_OPTIMIZATIONS=0 turns them back on.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

import pytest

# The BPE vocabulary of the samples (`_write_sample_data`).
SAMPLES_BPE = os.path.join(os.path.dirname(__file__), "data", "samples_bpe")

# Each test's and fixture's time, and the run against its budget (tests/budget.py).
pytest_plugins = ["tests.suite_profile"]

# The test files that take over a minute under `make test`, longest first (by their summed test
# durations; docs/measurements.md, "The test suite").
# pytest-xdist hands whole files (`--dist loadfile`) to the workers in collection order
# (`--no-loadscope-reorder`); by default it orders them by their number of tests, which left
# test_training.py, the longest, to start last and run alone on one core at the end.
LONGEST_FIRST = (
    "test_training.py", "test_crash_consistency.py", "test_export.py",
    "test_multiple_choice.py", "test_text_classification.py",
    "test_classification.py", "test_multi_worker.py", "test_tagging.py", "test_span_qa.py",
    "test_jax_distribution.py", "test_backbones.py", "test_convert.py", "test_tokenizers.py",
    "test_multiple_choice_export.py", "test_reproduce.py", "test_transformers_recipe.py",
    "test_lora.py", "test_sentence_embedding.py", "test_sentence_embedding_export.py",
    "test_hub.py", "test_serve_hub.py", "test_docs.py",
    "test_span_qa_own_data.py",
    "test_tagging_own_data.py",
    "test_generate_cli.py")


def pytest_collection_modifyitems(config, items):
    """Collect the files of LONGEST_FIRST first, in its order; the rest keep theirs."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole


@pytest.fixture(scope="session", autouse=True)
def _temporary_files_under_basetemp(tmp_path_factory):
    """What the tests and the processes they start put in the temporary directory goes under
    pytest's basetemp, which pytest prunes to its last three runs.

    Docstring examples write to `tempfile.mkdtemp()` (16 MB for a converted checkpoint) and
    TensorFlow's autograph leaves its generated sources there: left in /tmp they added up over
    many runs (3 GB, 1,600 folders on this machine when found).
    """
    import tempfile

    folder = str(tmp_path_factory.mktemp("tmp"))
    before = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    yield
    tempfile.tempdir = before[0]
    if before[1] is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before[1]


def sample_texts(root):
    """The sample files the suite's vocabularies are learnt on."""
    from zoo.data.samples import LAYOUT

    return [str(root / "corpus" / "corpus.txt")] + [
        str(root / LAYOUT[task]["train"]) for task in LAYOUT
        if task.startswith("glue/") or task in ("snli", "scitail")]


def _write_sample_data(base):
    from zoo.data.samples import write_samples
    from zoo.tokenizers import train_vocabulary

    root = base / "samples"
    write_samples(root)
    texts = sample_texts(root)
    out = {"root": root}
    # WordPiece at 1,150 tokens: the vocabulary every margin of the suite was measured with
    # (asked 1,500, tensorflow-text's own threshold search ended at 1,150; at exactly 1,150,
    # `train_vocabulary` gives that same vocabulary, token for token).
    out["wordpiece"] = str(base / "wordpiece")
    train_vocabulary(texts, size=1150, kind="wordpiece", out=out["wordpiece"])
    # BPE: `train_vocabulary(texts, size=1500, kind="bpe")` once, kept in tests/data. The
    # `tokenizers` trainer breaks ties in its per-process hash order, so each run of the suite
    # learnt the same tokens and merges with other ids and another merge order (from the 74th
    # merge on, 224 ids moved): every GPT-1 learning test ran on another draw, as if on another
    # seed (swag-gpt1 fell to 47.0, under its 49.0). test_tokenizers checks that this copy has
    # the tokens and merges the trainer learns from these samples today.
    out["bpe"] = str(base / "bpe")
    shutil.copytree(SAMPLES_BPE, out["bpe"])
    return out


@pytest.fixture(scope="session")
def sample_data(tmp_path_factory, worker_id):
    """The sample datasets plus a WordPiece and a BPE vocabulary learnt on their text.

    Returns a dict: "root" (the samples tree), "wordpiece" and "bpe" (vocabulary folders).
    Under pytest-xdist the workers share one copy, written by the first to ask (the
    pytest-xdist docs' FileLock recipe); tests only read it.
    """
    if worker_id == "master":
        return _write_sample_data(tmp_path_factory.mktemp("training"))
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp().parent / "sample_data"
    with FileLock(str(base) + ".lock"):
        if not (base / "done").exists():
            _write_sample_data(base)
            (base / "done").touch()
    return {"root": base / "samples", "wordpiece": str(base / "wordpiece"),
            "bpe": str(base / "bpe")}
