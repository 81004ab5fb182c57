"""BERT pretraining data: NSP pair creation, shards, dynamic masking statistics."""

import glob
import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf

from tests.data_fixtures import wordpiece, write_corpus, write_vocab
from zoo import training
from zoo.data.pretraining import (
    create_instances,
    mask_tokens,
    pretraining_dataset,
    write_pretraining_data,
)
from zoo_cli import data as data_cli

PAD, CLS, SEP, MASK = 0, 2, 3, 4  # ids in tests.data_fixtures.VOCAB


def synthetic_documents(num_documents, seed):
    """Documents whose token ids encode where they come from: doc * 10**6 + position in doc."""
    rng = random.Random(seed)
    documents = []
    for d in range(num_documents):
        position, document = 0, []
        for _ in range(rng.choice([1, 1, 2, 3, 5, 8, 13, 21])):
            n = rng.randint(1, 40)
            document.append([d * 10**6 + position + k for k in range(n)])
            position += n
        documents.append(document)
    return documents


@pytest.mark.parametrize("max_sequence_length", [128, 32])
def test_nsp_balance_and_document_boundaries(max_sequence_length):
    documents = synthetic_documents(3000, seed=max_sequence_length)
    instances = create_instances(documents, max_sequence_length, random.Random(1), dupe_factor=2)
    assert len(instances) > 6000
    sentence_starts = {sentence[0] for document in documents for sentence in document}
    random_next = np.mean([r for _, _, r in instances])
    assert abs(random_next - 0.5) <= 0.02, random_next
    for a, b, is_random_next in instances:
        assert a and b and len(a) + len(b) <= max_sequence_length - 3
        doc_a, doc_b = {t // 10**6 for t in a}, {t // 10**6 for t in b}
        assert len(doc_a) == 1 and len(doc_b) == 1  # each segment is text from one document
        # Segments are contiguous text (trimming only cuts their ends).
        assert a == list(range(a[0], a[0] + len(a))) and b == list(range(b[0], b[0] + len(b)))
        if is_random_next:
            assert doc_a != doc_b
        else:  # IsNext: B follows A in the same document, never across a boundary
            assert doc_a == doc_b and a[-1] < b[0]
            if len(a) + len(b) < max_sequence_length - 3:  # not truncated: whole sentences
                assert a[0] in sentence_starts and b[0] in sentence_starts
                assert b[0] == a[-1] + 1  # B is the very next sentence, none skipped


def test_truncate_pair_trims_b_on_ties():
    from zoo.data.pretraining.instances import _truncate_pair

    for seed in range(10):
        a, b = [1, 2, 3], [4, 5, 6]
        _truncate_pair(a, b, 5, random.Random(seed))  # original: `len(a) > len(b)` trims A
        assert a == [1, 2, 3] and len(b) == 2


def test_create_instances_is_deterministic_and_checks_input():
    documents = synthetic_documents(50, seed=0)
    first = create_instances(documents, 64, random.Random(7))
    assert first == create_instances(documents, 64, random.Random(7))
    with pytest.raises(ValueError, match="at least 2 documents"):
        create_instances(documents[:1], 64, random.Random(0))


def read_shards(files):
    """(token_ids, segment_ids, next_sentence_label) of every record, in file order."""
    out = []
    for record in tf.data.TFRecordDataset(files).as_numpy_iterator():
        feature = tf.train.Example.FromString(record).features.feature
        out.append((np.array(feature["token_ids"].int64_list.value),
                    np.array(feature["segment_ids"].int64_list.value),
                    feature["next_sentence_label"].int64_list.value[0]))
    return out


def test_write_pretraining_data(tmp_path):
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 60)
    meta = write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path / "out"),
                                  max_sequence_lengths=[32, 64], shards=3, seed=5)
    for length in (32, 64):
        directory = tmp_path / "out" / f"seq{length}"
        assert sorted(os.listdir(directory)) == [
            *(f"pretraining-{k:05d}-of-00003.tfrecord" for k in range(3)), "pretraining.json"]
        assert json.loads((directory / "pretraining.json").read_text()) == meta[length]
        rows = read_shards(sorted(str(p) for p in directory.glob("*.tfrecord")))
        assert len(rows) == meta[length]["num_instances"] > 20
        assert np.mean([r for *_, r in rows]) == pytest.approx(meta[length]["random_next_fraction"])
        for token_ids, segment_ids, _ in rows:
            assert len(token_ids) <= length and token_ids[0] == CLS and token_ids[-1] == SEP
            seps = np.flatnonzero(token_ids == SEP)
            assert len(seps) == 2 and not np.isin(token_ids, [PAD, MASK, 1]).any()
            assert (segment_ids == (np.arange(len(token_ids)) > seps[0])).all()
    # Same seed, same bytes.
    write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path / "again"),
                           max_sequence_lengths=[32], shards=3, seed=5)
    for k in range(3):
        name = f"seq32/pretraining-{k:05d}-of-00003.tfrecord"
        assert (tmp_path / "out" / name).read_bytes() == (tmp_path / "again" / name).read_bytes()


def masking_counts(x, y, sample_weight, originals):
    """Tally one batch of `pretraining_dataset` against the unmasked token ids."""
    tokens, positions = x["token_ids"].numpy(), x["mask_positions"].numpy()
    weights, labels = sample_weight["mlm"].numpy(), y["mlm"].numpy()
    selected = np.zeros(tokens.shape, bool)
    rows = np.broadcast_to(np.arange(len(tokens))[:, None], positions.shape)
    selected[rows[weights > 0], positions[weights > 0]] = True
    assert selected.sum() == weights.sum()  # positions are distinct
    assert (originals[rows[weights > 0], positions[weights > 0]] == labels[weights > 0]).all()
    special = np.isin(originals, [CLS, SEP, PAD])
    assert not (selected & special).any(), "a special token or padding was selected"
    assert (tokens[~selected] == originals[~selected]).all(), "an unselected token changed"
    new, old = tokens[selected], originals[selected]
    return dict(eligible=(~special).sum(), selected=selected.sum(), mask=(new == MASK).sum(),
                random=((new != MASK) & (new != old)).sum(), same=(new == old).sum())


def test_dynamic_masking_statistics(tmp_path):
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 1500, seed=1, sentences=(2, 12))
    write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path), shards=1,
                           max_sequence_lengths=[128])
    files = str(tmp_path / "seq128" / "*.tfrecord")
    tf.random.set_seed(0)
    ds = pretraining_dataset(files, 256, 128, shuffle_buffer=0, drop_remainder=False)
    x, y, sample_weight = ds.element_spec
    assert x["token_ids"].shape.as_list() == [None, 128]
    assert x["mask_positions"].shape.as_list() == [None, 20]  # ceil(128 * 0.15)
    originals = [np.pad(t, (0, 128 - len(t))) for t, _, _ in read_shards(glob.glob(files))]
    totals, start = {}, 0
    for x, y, sample_weight in ds:
        n = len(x["token_ids"])
        assert (x["padding_mask"].numpy() == (np.stack(originals[start:start + n]) > 0)).all()
        for key, value in masking_counts(x, y, sample_weight,
                                         np.stack(originals[start:start + n])).items():
            totals[key] = totals.get(key, 0) + value
        start += n
    assert start == len(originals)
    assert totals["eligible"] >= 100_000, totals
    rate = totals["selected"] / totals["eligible"]
    assert abs(rate - 0.15) <= 0.005, rate
    # A "random" replacement can draw the original token (1 in 112 here): it counts as "same".
    for kind, expected in (("mask", 0.8), ("random", 0.1), ("same", 0.1)):
        assert abs(totals[kind] / totals["selected"] - expected) <= 0.01, (kind, totals)


def masks_of_two_passes(tmp_path):
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 40)
    write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path), shards=1,
                           max_sequence_lengths=[64])
    ds = pretraining_dataset(str(tmp_path / "seq64" / "*.tfrecord"), 64, 64, shuffle_buffer=0)
    first, second = ([x["token_ids"].numpy() for x, _, _ in ds] for _ in range(2))
    assert len(first) == len(second) > 0
    return np.concatenate(first), np.concatenate(second)


def test_masks_differ_between_passes(tmp_path):
    tf.random.set_seed(None)  # an earlier test may have set a global seed
    first, second = masks_of_two_passes(tmp_path)
    assert first.shape == second.shape and (first != second).any()  # dynamic masking


def test_masks_differ_between_passes_with_global_seed(tmp_path):
    """`keras.utils.set_random_seed` must not turn dynamic masking into static masking."""
    tf.random.set_seed(0)
    try:
        first, second = masks_of_two_passes(tmp_path)
    finally:
        tf.random.set_seed(None)
    assert (first != second).any()


def test_failed_write_keeps_previous_data(tmp_path, monkeypatch):
    import zoo.data.pretraining.instances as pretraining

    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 30)
    out = tmp_path / "out"
    write_pretraining_data([corpus], vocab=tokenizer, out=str(out), shards=2,
                           max_sequence_lengths=[32])
    before = {p.name: p.read_bytes() for p in (out / "seq32").iterdir()}

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(pretraining, "_serialize", fail)
    with pytest.raises(OSError, match="disk full"):
        write_pretraining_data([corpus], vocab=tokenizer, out=str(out), shards=1,
                               max_sequence_lengths=[32])
    assert sorted(os.listdir(out)) == ["seq32"]  # no temporary directory left
    assert {p.name: p.read_bytes() for p in (out / "seq32").iterdir()} == before


@pytest.mark.parametrize("rates", [(1.0, 0.0), (0.0, 1.0), (0.0, 0.0), (0.8, 0.0)])
def test_masking_rates_are_configurable(rates):
    """Table 8's ablations: MASK/RANDOM/SAME mixes other than 80/10/10."""
    mask_rate, random_rate = rates
    tf.random.set_seed(1)
    ids = tf.ragged.constant([[CLS, *range(10, 60), SEP]] * 400, dtype=tf.int32)
    out = mask_tokens(ids, vocabulary_size=10_000, mask_token_id=MASK,
                      unselectable_token_ids=[PAD, CLS, SEP, MASK], mask_selection_length=10,
                      mask_token_rate=mask_rate, random_token_rate=random_rate)
    weights = out["mask_weights"].numpy() > 0
    new = np.take_along_axis(out["token_ids"].to_tensor().numpy(),
                             out["mask_positions"].numpy(), axis=1)[weights]
    old = out["mask_ids"].numpy()[weights]
    for fraction, expected in (((new == MASK).mean(), mask_rate),
                               (((new != MASK) & (new != old)).mean(), random_rate),
                               ((new == old).mean(), 1 - mask_rate - random_rate)):
        assert abs(fraction - expected) <= 0.03


@pytest.mark.parametrize("num_tokens", [7, 21, 125])
def test_selection_rate_is_exact_for_every_length(num_tokens):
    """tf_text's RandomItemSelector takes ceil(0.15 n): 2 of 7 tokens is 29 %, not 15 %."""
    tf.random.set_seed(2)
    ids = tf.ragged.constant([[CLS, *range(10, 10 + num_tokens), SEP]] * 4000, dtype=tf.int32)
    out = mask_tokens(ids, vocabulary_size=200, mask_token_id=MASK,
                      unselectable_token_ids=[PAD, CLS, SEP, MASK], mask_selection_length=20)
    count = out["mask_weights"].numpy().sum(axis=1)
    expected = 0.15 * num_tokens
    assert set(count) <= {np.floor(expected), np.ceil(expected)}
    assert abs(count.mean() / num_tokens - 0.15) <= 0.005


def test_pretraining_dataset_trains_with_fit(tmp_path):
    """The (x, y, sample_weight) layout fits a two-output model named "mlm" and "nsp"."""
    import keras

    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 40)
    meta = write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path), shards=2,
                                  max_sequence_lengths=[32])[32]
    ds = pretraining_dataset(str(tmp_path / "seq32" / "*.tfrecord"), 8, 32, seed=0)
    inputs = {name: keras.Input((None,), dtype="int32", name=name)
              for name in ("token_ids", "segment_ids", "padding_mask", "mask_positions")}
    hidden = keras.layers.Embedding(meta["vocabulary_size"], 16)(inputs["token_ids"])
    gathered = keras.ops.take_along_axis(hidden, inputs["mask_positions"][..., None], axis=1)
    outputs = {"mlm": keras.layers.Dense(meta["vocabulary_size"], name="mlm")(gathered),
               "nsp": keras.layers.Dense(2, name="nsp")(hidden[:, 0])}
    model = keras.Model(inputs, outputs)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                      reduction="mean_with_sample_weight")
    model.compile("adam", loss={"mlm": loss, "nsp": loss})
    history = model.fit(ds, epochs=1, verbose=0).history
    assert np.isfinite(history["mlm_loss"][0]) and np.isfinite(history["nsp_loss"][0])


def test_zoo_data_pretrain_command(tmp_path):
    from zoo_cli.main import main

    vocab = write_vocab(str(tmp_path))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 30)
    out = tmp_path / "out"
    # Beam's DirectRunner in this process: the two-worker runs are
    # test_beam_writes_the_bytes_of_the_in_process_run_with_one_or_two_workers's.
    assert main(["data", "pretrain", "--corpus", corpus, "--vocab", vocab, "--out", str(out),
                 "--max-sequence-length", "16", "--shards", "2", "--dupe-factor", "2",
                 "--short-seq-prob", "0", "--direct_num_workers", "1"]) == 0
    meta = json.loads((out / "seq16" / "pretraining.json").read_text())
    assert meta["dupe_factor"] == 2 and meta["short_seq_prob"] == 0.0
    assert meta["seed"] == 12345 and meta["shards"] == [
        "pretraining-00000-of-00002.tfrecord", "pretraining-00001-of-00002.tfrecord"]
    # A tokenizer directory works too; rewriting with fewer shards removes the stale ones.
    assert main(["data", "pretrain", "--corpus", corpus, "--vocab", str(tmp_path), "--out",
                 str(out), "--max-sequence-length", "16", "--shards", "1",
                 "--direct_num_workers=1"]) == 0
    assert sorted(os.listdir(out / "seq16")) == ["pretraining-00000-of-00001.tfrecord",
                                                 "pretraining.json"]


def test_zoo_data_pretrain_reads_and_writes_a_remote_filesystem(tmp_path, monkeypatch):
    from zoo import files
    from zoo_cli.main import main

    # The DirectRunner's defaults: a worker process per core for local paths, this process
    # for ram:// ones (whose files worker processes cannot see). Checked on the options, so
    # that the local reference run below can run in this process: spawning the workers cost
    # ~12 of this test's 15 CPU-s (#64), and the bytes of one and two workers are compared
    # in test_beam_writes_the_bytes_of_the_in_process_run_with_one_or_two_workers.
    with monkeypatch.context() as patch:
        patch.setattr(os, "cpu_count", lambda: 4)
        assert data_cli.pipeline_args("DirectRunner", [], ["corpus.txt", "vocab.txt"]) == [
            "--runner=DirectRunner", "--direct_num_workers=4",
            "--direct_running_mode=multi_processing"]
        assert data_cli.pipeline_args("DirectRunner", [], ["corpus.txt", "ram://out"]) == [
            "--runner=DirectRunner", "--direct_num_workers=1", "--direct_running_mode=in_memory"]
    base = f"ram://pretrain_{os.getpid()}_{tmp_path.name}"
    local_corpus = write_corpus(str(tmp_path / "corpus.txt"), 12)
    with open(local_corpus, encoding="utf-8") as f:
        files.write_text(f"{base}/corpus.txt", f.read())
    with open(write_vocab(str(tmp_path)), encoding="utf-8") as f:
        files.write_text(f"{base}/vocab.txt", f.read())
    arguments = ["--max-sequence-length", "16", "--shards", "2"]
    assert main(["data", "pretrain", "--corpus", local_corpus, "--vocab",
                 str(tmp_path / "vocab.txt"), "--out", str(tmp_path / "out"), *arguments,
                 "--direct_num_workers", "1"]) == 0
    assert main(["data", "pretrain", "--corpus", f"{base}/corpus.txt", "--vocab",
                 f"{base}/vocab.txt", "--out", f"{base}/out", *arguments]) == 0
    assert files.listdir(f"{base}/out") == ["seq16"]  # the staging directory is gone
    local, remote = (sorted(files.glob(f"{out}/seq16/*.tfrecord"))
                     for out in (str(tmp_path / "out"), f"{base}/out"))
    assert [os.path.basename(p) for p in remote] == [os.path.basename(p) for p in local]
    for a, b in zip(local, remote):
        records = [list(tf.data.TFRecordDataset(path).as_numpy_iterator()) for path in (a, b)]
        assert records[0] and records[0] == records[1]
    with files.open(f"{base}/out/seq16/pretraining.json") as f:
        meta = json.load(f)
    assert meta["corpus_files"] == [f"{base}/corpus.txt"] and meta["num_instances"] > 0


def test_read_documents_names_bad_bytes(tmp_path):
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"the cat .\n\nthe \xff dog .\n")
    with pytest.raises(ValueError, match="corpus.txt:3: expected UTF-8 text, found byte 0xff"):
        write_pretraining_data([str(corpus)], vocab=tokenizer, out=str(tmp_path / "out"))


def test_pretraining_dataset_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no files match"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), 8, 128)
    (tmp_path / "x.tfrecord").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="pretraining.json"):
        pretraining_dataset(str(tmp_path / "*.tfrecord"), 8, 128)
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 10)
    write_pretraining_data([corpus], vocab=tokenizer, out=str(tmp_path), shards=1,
                           max_sequence_lengths=[64])
    with pytest.raises(ValueError, match="seq64/pretraining.json: shards of length 64 do not "
                                         "fit max_sequence_length=32"):
        pretraining_dataset(str(tmp_path / "seq64" / "*.tfrecord"), 8, 32)


# === Streaming: documents one at a time, pools of documents ===


def test_documents_stream_across_tokenizer_batches_as_the_whole_file_reads(tmp_path):
    """Documents split over several tokenizer batches, blank lines right after a batch, runs
    of blank lines, a sentence with no token and a file without a final blank line read as a
    plain reading of the whole file (sentences tokenized one by one) does."""
    from zoo.data.pretraining import iter_documents

    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    first = write_corpus(str(tmp_path / "a.txt"), 30, seed=1)
    second = tmp_path / "b.txt"
    second.write_text("the cat .\n\n\n\n  \n\u200b\nthe dog .\nthe cat sat .")  # no final \n
    expected = []
    for path in (first, str(second)):
        for block in open(path, encoding="utf-8").read().split("\n\n"):
            sentences = [tokenizer(tf.constant([line.strip()])).to_list()[0]
                         for line in block.splitlines() if line.strip()]
            if any(sentences):
                expected.append([s for s in sentences if s])
    for batch_size in (1, 2, 3, 7, 4096):
        got = list(iter_documents([first, str(second)], tokenizer, batch_size=batch_size))
        assert got == expected, batch_size


def test_pools_hold_at_most_one_pool_and_the_start_of_the_next():
    from zoo.data.pretraining import iter_pools

    held, most = [], 0

    def documents(n):
        nonlocal most
        for d in range(n):
            held.append(d)
            yield [[d]]

    for n, size in ((1, 4), (2, 4), (9, 4), (10, 4), (11, 4), (23, 5)):
        held.clear()
        pools = []
        for pool in iter_pools(documents(n), size):
            # Read so far: this pool and at most one document of the next.
            assert len(held) - sum(map(len, pools)) <= size + 2
            pools.append(pool)
        assert [d for pool in pools for [[d]] in pool] == list(range(n))
        assert all(len(pool) >= 2 for pool in pools) or n < 2
        assert all(size <= len(pool) <= size + 1 for pool in pools[:-1])
        assert len(pools[-1]) <= size + 1
    with pytest.raises(ValueError, match="pool_size=1"):
        list(iter_pools(documents(3), 1))


def test_memory_holds_one_pool_not_the_corpus(tmp_path, monkeypatch):
    """Peak Python memory of writing the shards (tracemalloc; after a first call, which
    traces the tokenizer) stays level when the corpus grows 4x; every document is still
    paired, and NSP stays 50/50."""
    import functools
    import tracemalloc

    from zoo.data.pretraining import instances

    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    # Tokenize 64 lines at a time, so that the tokenizer's batch is not the whole corpus.
    monkeypatch.setattr(instances, "iter_documents",
                        functools.partial(instances.iter_documents, batch_size=64))
    write_pretraining_data([write_corpus(str(tmp_path / "warm.txt"), 30)], vocab=tokenizer,
                           out=str(tmp_path / "warm"), shards=1, max_sequence_lengths=[32])
    peaks, metas = {}, {}
    for n in (600, 2400):
        corpus = write_corpus(str(tmp_path / f"corpus{n}.txt"), n, seed=n)
        tracemalloc.start()
        metas[n] = write_pretraining_data([corpus], vocab=tokenizer,
                                          out=str(tmp_path / f"out{n}"), shards=2,
                                          max_sequence_lengths=[32], pool_size=20)[32]
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert metas[n]["num_documents"] == n and metas[n]["pool_size"] == 20
    # Measured: 115-147 / 143-149 kB (other tests before it move the first); in one pool
    # (pool_size above the corpus) 1.36 / 5.33 MB.
    assert peaks[2400] < 1.5 * peaks[600], peaks
    pairs = sum(m["num_instances"] for m in metas.values())
    random_next = sum(m["num_instances"] * m["random_next_fraction"] for m in metas.values())
    assert abs(random_next / pairs - 0.5) < 0.05, (random_next, pairs)


# === Chunks: the unit of parallel work; Apache Beam ===


def awkward_corpus(tmp_path):
    """Files with runs of blank lines, whitespace-only lines, a sentence with no token, CRLF
    line ends, a one-document file, an empty file and a file without a final newline."""
    first = write_corpus(str(tmp_path / "a.txt"), 40, seed=4)
    (tmp_path / "b.txt").write_bytes("the cat .\r\nthe dog .\r\n\r\n \r\n\r\n\u200b\n\n"
                                     "the cat sat .\n".encode())
    (tmp_path / "c.txt").write_text("the dog sat .\nthe cat .")  # one document, no final \n
    (tmp_path / "d.txt").write_text("")
    second = write_corpus(str(tmp_path / "e.txt"), 25, seed=5)
    return [first, *(str(tmp_path / n) for n in ("b.txt", "c.txt", "d.txt")), second]


@pytest.mark.parametrize("chunk_bytes", [1, 200, 3000, 10**9])
def test_chunks_read_as_the_whole_corpus(tmp_path, chunk_bytes):
    """The documents of every chunk, read apart and in order, are the documents of the
    corpus read in one pass; chunks hold two documents or more, may span files, and count the
    documents (runs of non-blank lines) a `keep_empty` reading finds."""
    from zoo.data.pretraining import iter_documents, plan_chunks
    from zoo.data.pretraining.chunks import iter_chunk_documents

    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    corpus = awkward_corpus(tmp_path)
    chunks = plan_chunks(corpus, chunk_bytes)
    whole = list(iter_documents(corpus, tokenizer, batch_size=3))
    pieces, first_document = [], 0
    for index, chunk in enumerate(chunks):
        assert chunk.index == index and chunk.first_document == first_document
        assert chunk.documents >= 2
        kept = list(iter_chunk_documents(chunk.segments, tokenizer, batch_size=3,
                                         keep_empty=True))
        assert len(kept) == chunk.documents
        pieces += [document for document in kept if document]
        first_document += chunk.documents
    assert pieces == whole
    assert first_document == len(whole) + 1  # the "\u200b" document tokenizes to nothing
    if chunk_bytes == 1:  # a chunk closes at its second document, across files if need be
        assert len(chunks) > 30 and any(
            len({s.path for s in chunk.segments}) > 1 for chunk in chunks)
    if chunk_bytes == 10**9:
        assert len(chunks) == 1 and len(chunks[0].segments) == 4  # d.txt has no bytes


def test_chunks_name_bad_bytes_before_any_work(tmp_path):
    from zoo.data.pretraining import plan_chunks

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"the cat .\n\nthe dog .\n\n" * 50 + b"the \xff dog .\n")
    with pytest.raises(ValueError, match=r"corpus.txt:201: expected UTF-8 text, found byte "
                                         r"0xff at column 5"):
        plan_chunks([str(corpus)], 100)


def read_tree(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def test_beam_writes_the_bytes_of_the_in_process_run_with_one_or_two_workers(tmp_path):
    """The same seed gives the same shards and metadata in this process (`--runner none`) and
    on Beam's DirectRunner with one worker (in this process) and two worker processes, for
    BERT's pairs and the causal-LM ids; and NSP is 50/50 within 1 % over ~25,000 pairs."""
    from zoo_cli.main import main

    vocab = write_vocab(str(tmp_path))
    corpus = [write_corpus(str(tmp_path / "one.txt"), 900, seed=6),
              write_corpus(str(tmp_path / "two.txt"), 700, seed=7, sentences=(2, 14))]
    common = ["data", "pretrain", "--corpus", *corpus, "--vocab", vocab, "--chunk-mb", "0.02",
              "--max-sequence-length", "24", "64", "--shards", "3", "--seed", "11",
              "--dupe-factor", "5"]
    runs = {"none": ["--runner", "none"], "one": ["--direct_num_workers", "1"],
            "two": ["--direct_num_workers=2", "--direct_running_mode", "multi_processing"]}
    for name, extra in runs.items():
        assert main([*common, "--out", str(tmp_path / name), *extra]) == 0
    for length in (24, 64):
        trees = {name: read_tree(tmp_path / name / f"seq{length}") for name in runs}
        assert len(trees["none"]) == 4 and trees["one"] == trees["none"] == trees["two"]
        meta = json.loads(trees["none"]["pretraining.json"])
        assert meta["num_chunks"] > 8 and meta["num_unpaired_documents"] == 0
        if length == 24:
            assert meta["num_instances"] > 25_000
            assert abs(meta["random_next_fraction"] - 0.5) <= 0.01, meta
            rows = read_shards(sorted(glob.glob(str(tmp_path / "two" / "seq24" / "*.tfrecord"))))
            assert len(rows) == meta["num_instances"]
            assert abs(np.mean([r for *_, r in rows]) - 0.5) <= 0.01
    for name in ("none", "one"):  # the causal-LM ids; two workers are the pairs' above
        assert main(["data", "pretrain", "--objective", "causal_lm", "--corpus", *corpus,
                     "--vocab", vocab, "--chunk-mb", "0.02", "--out",
                     str(tmp_path / f"lm_{name}"), *runs[name]]) == 0
    trees = [read_tree(tmp_path / f"lm_{name}" / "causal_lm") for name in ("none", "one")]
    assert trees[0] == trees[1] and json.loads(trees[0]["pretraining.json"])["num_chunks"] > 8
    assert sorted(os.listdir(tmp_path / "two")) == ["seq24", "seq64"]  # no work directory left


def test_a_failed_beam_worker_leaves_the_previous_shards(tmp_path, monkeypatch):
    """A worker that fails after other chunks wrote their parts fails the pipeline: the
    previous `seq{length}` stays as it was and the work directory is removed."""
    import zoo.data.pretraining.instances as pretraining

    vocab = write_vocab(str(tmp_path))
    corpus = write_corpus(str(tmp_path / "corpus.txt"), 60)
    out = tmp_path / "out"
    write_pretraining_data([corpus], vocab=vocab, out=str(out), shards=2,
                           max_sequence_lengths=[32])
    before = read_tree(out / "seq32")
    original, chunks_seen = pretraining.MlmNspJob.write_chunk, []

    def write_chunk(self, chunk):
        chunks_seen.append(chunk.index)
        if len(chunks_seen) == 3:
            raise OSError("worker lost its disk")
        return original(self, chunk)

    monkeypatch.setattr(pretraining.MlmNspJob, "write_chunk", write_chunk)
    with pytest.raises(Exception, match="worker lost its disk"):
        write_pretraining_data([corpus], vocab=vocab, out=str(out), shards=1,
                               max_sequence_lengths=[32], chunk_bytes=500,
                               pipeline_args=["--runner=DirectRunner",
                                              "--direct_num_workers=1"])
    assert len(chunks_seen) == 3  # two chunks had written their parts
    assert sorted(os.listdir(out)) == ["seq32"] and read_tree(out / "seq32") == before


# === One input pipeline per worker (tf.distribute) ===


def unmasked(x, y, sample_weight):
    """The records of a batch as they are in the shards: masked positions given back their
    labels, padding cut off."""
    tokens = x["token_ids"].numpy().copy()
    positions, labels = x["mask_positions"].numpy(), y["mlm"].numpy()
    real = sample_weight["mlm"].numpy() > 0
    for row in range(len(tokens)):
        tokens[row, positions[row][real[row]]] = labels[row][real[row]]
    lengths = x["padding_mask"].numpy().sum(axis=1)
    return [tuple(t[:n]) + (int(nsp),) for t, n, nsp in zip(tokens, lengths, y["nsp"].numpy())]


def context(pipeline, pipelines, replicas):
    return tf.distribute.InputContext(num_input_pipelines=pipelines, input_pipeline_id=pipeline,
                                      num_replicas_in_sync=replicas)


@pytest.mark.parametrize("shards", [4, 1])
def test_each_input_pipeline_reads_its_own_records(tmp_path, shards):
    """Two workers' pipelines: their own shard files (or, with one file, every other record),
    together every record once; batches of one replica's share of the global batch of 8."""
    tokenizer = wordpiece(write_vocab(str(tmp_path)))
    write_pretraining_data([write_corpus(str(tmp_path / "corpus.txt"), 80)], vocab=tokenizer,
                           out=str(tmp_path), shards=shards, max_sequence_lengths=[32])
    files = sorted(glob.glob(str(tmp_path / "seq32" / "*.tfrecord")))
    records = sorted(tuple(t) + (int(r),) for t, _, r in read_shards(files))
    seen = []
    for pipeline in (0, 1):
        ds = pretraining_dataset(files, 8, 32, shuffle_buffer=0, drop_remainder=False,
                                 input_context=context(pipeline, 2, 2))
        batches = [unmasked(*batch) for batch in ds]
        assert max(map(len, batches)) == 4
        seen.append(sorted(r for batch in batches for r in batch))
        if shards == 4:  # files 0 and 2, or 1 and 3
            assert seen[-1] == sorted(tuple(t) + (int(r),) for t, _, r in
                                      read_shards(files[pipeline::2]))
    assert not set(seen[0]) & set(seen[1]) and sorted(seen[0] + seen[1]) == records


def test_a_resumed_pipeline_skips_whole_steps(sample_data, tmp_path):
    """Resuming at step k, a pipeline feeding two replicas skips 2k of its batches: the first
    batch after the skip is the one an uninterrupted run draws at step k, masks included."""
    import zoo_tasks
    from zoo import config as config_lib

    write_pretraining_data([str(sample_data["root"] / "corpus" / "corpus.txt")],
                           sample_data["wordpiece"], str(tmp_path), shards=2,
                           max_sequence_lengths=[32])
    config = config_lib.resolve("bert/pretrain", [
        "model.preset=bert_tiny", f"model.vocabulary={sample_data['wordpiece']}",
        f"data.dir={tmp_path}", "train.batch_size=8",
        "data.phases=[{sequence_length: 32, fraction: 1.0}]"])
    task = zoo_tasks.create(config.task, config)
    [phase] = task.phases(training.StepCounts(config.train, task.steps_per_epoch()))
    pipeline = context(0, 1, 2)
    uninterrupted = [batch for batch in phase.dataset(0, input_context=pipeline).take(8)]
    resumed = next(iter(phase.dataset(3, input_context=pipeline)))
    assert uninterrupted[0][0]["token_ids"].shape[0] == 4  # one replica's share of 8
    for name in ("token_ids", "mask_positions", "segment_ids"):
        np.testing.assert_array_equal(resumed[0][name], uninterrupted[6][0][name])


def test_fit_gets_one_pipeline_per_worker_under_a_strategy():
    """Under a tf.distribute strategy a phase that takes an `input_context` is built per
    worker (`distribute_datasets_from_function`); other tasks' datasets and the default
    strategy are passed to `fit` as they are."""
    from zoo.config import TrainConfig as Train
    from zoo.training import distribution

    contexts = []

    def per_worker(skip, input_context=None):
        contexts.append((skip, input_context))
        return tf.data.Dataset.range(16).batch(2)

    def plain(skip):
        return tf.data.Dataset.range(4)

    mirrored = Train(strategy="mirrored")  # over this process's one CPU device
    ds = distribution.distributed_dataset(mirrored, per_worker, 3)
    assert isinstance(ds, tf.distribute.DistributedDataset)
    assert [(skip, c.num_input_pipelines, c.input_pipeline_id) for skip, c in contexts] == [
        (3, 1, 0)]
    assert isinstance(distribution.distributed_dataset(mirrored, plain, 3), tf.data.Dataset)
    assert isinstance(distribution.distributed_dataset(Train(), per_worker, 3),
                      tf.data.Dataset)
