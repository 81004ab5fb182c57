"""Causal language-model input for GPT-1: contiguous blocks of tokens.

Radford et al. 2018, section 4.1: the model is trained "on contiguous sequences of 512 tokens"
of BooksCorpus. Documents are tokenized, concatenated into one stream (optionally with a
separator id between them) and cut into non-overlapping blocks of `sequence_length + 1` tokens;
a block gives inputs `block[:-1]` and next-token targets `block[1:]` (transformers' `run_clm.py`
`group_texts` does the same, shifting inside the model). The last partial block is dropped.
"""

import tensorflow as tf

from zoo.data.pipeline import prefetched


def causal_lm_dataset(texts, tokenizer, sequence_length, batch_size, separator_token_id=None,
                      shuffle_buffer=0, seed=None, drop_remainder=True):
    """A tf.data pipeline of `(x, y)` batches of contiguous token blocks, for `fit`.

    `x` holds `token_ids` and `padding_mask` (all ones: blocks are full), each
    (batch, sequence_length) int32; `y` is (batch, sequence_length) int32, the next token.

    Args:
        texts: documents (str), in stream order.
        tokenizer: callable mapping a batch of strings to a `tf.RaggedTensor` of ids.
        sequence_length: tokens per block (512 for GPT-1).
        batch_size: blocks per batch.
        separator_token_id: id appended after every document, or None to join them directly.
        shuffle_buffer: blocks in the shuffle buffer (0: keep stream order).
        seed: shuffle seed.
        drop_remainder: drop a last partial batch.

    Example:
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "."])
        >>> ds = causal_lm_dataset(["a b c.", "c b a."], tokenizer, sequence_length=3,
        ...                        batch_size=2)
        >>> x, y = next(iter(ds))
        >>> x["token_ids"].numpy().tolist(), y.numpy().tolist()
        ([[5, 6, 7], [7, 6, 5]], [[6, 7, 8], [6, 5, 8]])
    """

    @tf.autograph.experimental.do_not_convert  # TF ops only: AutoGraph would cost ~1 s
    def tokenize(batch):
        ids = tf.cast(tokenizer(batch), tf.int32)
        if separator_token_id is not None:
            separator = tf.fill([tf.shape(batch)[0], 1], tf.constant(separator_token_id, tf.int32))
            ids = tf.concat([ids, separator], axis=1)
        return ids.flat_values

    ds = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
    ds = ds.batch(256).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return _batches(ds, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder)


def _batches(stream, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder):
    """(x, y) batches of blocks cut from `stream`, a dataset of 1-D int32 pieces of the token
    stream in order."""
    # Re-cut the token stream into blocks; one extra token gives the last target.
    ds = stream.rebatch(sequence_length + 1, drop_remainder=True)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)

    def split(block):
        x = {"token_ids": block[:-1], "padding_mask": tf.ones_like(block[:-1])}
        return x, block[1:]

    ds = ds.map(split, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(ds.batch(batch_size, drop_remainder=drop_remainder))


# === Token-id shards: `zoo data pretrain --objective causal_lm` ===

HELD_OUT_EVERY = 20  # every 20th document is held out for evaluation (5 %)


def write_causal_lm_data(corpus_files, tokenizer, out, shards=4):
    """Write a corpus as token-id shards for left-to-right LM pretraining, as a stream.

    `out/causal_lm/`: `train-0000k-of-0000n.tfrecord` and `dev-00000-of-00001.tfrecord`, one
    record per document (`token_ids`, int64: its sentences' ids in order), dealt round-robin
    over the train shards in corpus order; every HELD_OUT_EVERY-th document goes to dev (a
    stream cannot know which are the last 5 %). `pretraining.json` beside them counts
    documents and tokens per split. Documents are read one at a time
    (`zoo.data.pretraining.iter_documents`: one sentence per line, a blank line between
    documents), so memory does not grow with the corpus. The directory is written under a
    temporary name and replaces `out/causal_lm` whole when complete.

    Returns:
        The metadata (dict).
    """
    import json
    import os

    from zoo import files
    from zoo.data.pretraining.instances import METADATA, _swap_in, iter_documents

    names = {"train": [f"train-{k:05d}-of-{shards:05d}.tfrecord" for k in range(shards)],
             "dev": ["dev-00000-of-00001.tfrecord"]}
    counts = {split: {"documents": 0, "tokens": 0} for split in names}
    files.makedirs(out)
    staging = files.scratch_directory(out, ".causal_lm-")
    try:
        if not files.is_remote(staging):  # mkdtemp's 0700 would outlive the rename
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(staging, 0o777 & ~umask)
        writers = {split: [tf.io.TFRecordWriter(os.path.join(staging, name))
                           for name in split_names]
                   for split, split_names in names.items()}
        try:
            for index, document in enumerate(iter_documents(corpus_files, tokenizer)):
                ids = [token for sentence in document for token in sentence]
                split = "dev" if index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else "train"
                count = counts[split]
                writers[split][count["documents"] % len(names[split])].write(
                    tf.train.Example(features=tf.train.Features(feature={
                        "token_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                    })).SerializeToString())
                count["documents"] += 1
                count["tokens"] += len(ids)
        finally:
            for split_writers in writers.values():
                for writer in split_writers:
                    writer.close()
        if not counts["dev"]["documents"]:
            raise ValueError(f"{', '.join(map(str, corpus_files))}: {counts['train']['documents']}"
                             f" documents; at least {HELD_OUT_EVERY} are needed (every "
                             f"{HELD_OUT_EVERY}th is held out for evaluation)")
        metadata = dict(objective="causal_lm", vocabulary_size=int(tokenizer.vocabulary_size()),
                        shards=names, held_out_every=HELD_OUT_EVERY,
                        num_documents={k: v["documents"] for k, v in counts.items()},
                        num_tokens={k: v["tokens"] for k, v in counts.items()},
                        corpus_files=[files.absolute(f) for f in corpus_files])
        with files.open(os.path.join(staging, METADATA), "w") as f:
            json.dump(metadata, f, indent=2)
        _swap_in(staging, os.path.join(out, "causal_lm"))
    finally:
        files.remove_quietly(staging)  # gone already unless something failed
    return metadata


def causal_lm_shards_dataset(directory, split, sequence_length, batch_size,
                             separator_token_id=None, shuffle_buffer=0, seed=None,
                             drop_remainder=True):
    """`causal_lm_dataset`'s batches from the shards of `write_causal_lm_data` in `directory`,
    streamed: the documents in corpus order (the train shards interleaved back into it), a
    separator id after each if given, cut into blocks."""
    import os

    files = sorted(tf.io.gfile.glob(os.path.join(directory, f"{split}-*.tfrecord")))
    if not files:
        raise FileNotFoundError(f"{directory}: no {split}-*.tfrecord shards (written by "
                                "`zoo data pretrain --objective causal_lm`)")
    # Record k of the corpus is in shard k % n: reading one record of each shard in turn
    # restores corpus order.
    ds = tf.data.Dataset.from_tensor_slices(files).interleave(
        tf.data.TFRecordDataset, cycle_length=len(files), block_length=1, deterministic=True)

    def parse(record):
        ids = tf.io.parse_single_example(
            record, {"token_ids": tf.io.VarLenFeature(tf.int64)})["token_ids"].values
        ids = tf.cast(ids, tf.int32)
        if separator_token_id is not None:
            ids = tf.concat([ids, [separator_token_id]], axis=0)
        return ids

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return _batches(ds, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder)
