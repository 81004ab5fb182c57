import os

# Before any TensorFlow/Keras import: quiet start-up and a known backend for the main process.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# Under pytest-xdist every worker (and the processes its tests start) computes on one thread:
# the workers already fill the cores, and two thread pools per core spin against each other.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


def _write_sample_data(base):
    from zoo.data.samples import LAYOUT, write_samples
    from zoo.tokenizers import train_vocabulary

    root = base / "samples"
    write_samples(root)
    texts = [str(root / "corpus" / "corpus.txt")] + [
        str(root / LAYOUT[task]["train"]) for task in LAYOUT
        if task.startswith("glue/") or task in ("snli", "scitail")]
    out = {"root": root}
    for kind in ("wordpiece", "bpe"):
        out[kind] = str(base / kind)
        train_vocabulary(texts, size=1500, kind=kind, out=out[kind])
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


# The test files by their measured cost under `make test` (seconds summed over their tests, 2
# workers, three runs of 2026-11-24), dearest first. With --dist loadfile and
# --no-loadscope-reorder (Makefile) pytest-xdist hands files out in collection order, so the
# long ones start first and the short ones fill the end, instead of a two-minute file starting
# last on one worker while the other waits (by default it orders files by their test count).
SLOWEST_FIRST = ["test_benchmark", "test_training", "test_export", "test_multiple_choice",
                 "test_tasks", "test_multi_worker", "test_ner", "test_backbones",
                 "test_span_qa", "test_jax_distribution", "test_export_mc", "test_convert",
                 "test_export_squad", "test_tokenizers", "test_dynamic_padding",
                 "test_export_lm", "test_gpt_transfer", "test_readme", "test_export_ner",
                 "test_images"]


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: files keep order
