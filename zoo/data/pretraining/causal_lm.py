"""Causal language-model input for GPT-1: contiguous blocks of tokens.

Radford et al. 2018, section 4.1: the model is trained "on contiguous sequences of 512 tokens"
of BooksCorpus. Documents are tokenized, concatenated into one stream (optionally with a
separator id between them) and cut into non-overlapping blocks of `sequence_length + 1` tokens;
a block gives inputs `block[:-1]` and next-token targets `block[1:]` (transformers' `run_clm.py`
`group_texts` does the same, shifting inside the model). The last partial block is dropped.
"""

import tensorflow as tf

from zoo import files, tokenizers
from zoo.data.pipeline import prefetched
from zoo.data.pretraining.chunks import CHUNK_BYTES, iter_chunk_documents, plan_chunks
from zoo.data.pretraining.runner import ShardJob, run_job


def causal_lm_dataset(texts, tokenizer, sequence_length, batch_size, separator_token_id=None,
                      shuffle_buffer=0, seed=None, drop_remainder=True, input_context=None):
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
        input_context: a `tf.distribute.InputContext` when each worker builds its own input:
            `batch_size` is the global batch, batches hold one replica's share, and pipeline
            k of n keeps blocks k, k + n, ... of the stream.

    Examples:
        >>> from zoo.tokenizers import WordPieceTokenizer
        >>> tokenizer = WordPieceTokenizer(
        ...     ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c", "."])
        >>> ds = causal_lm_dataset(["a b c.", "c b a."], tokenizer, sequence_length=3,
        ...                        batch_size=2)
        >>> x, y = next(iter(ds))
        >>> x["token_ids"].numpy().tolist(), y.numpy().tolist()
        ([[5, 6, 7], [7, 6, 5]], [[6, 7, 8], [6, 5, 8]])
    """

    @tf.autograph.experimental.do_not_convert  # TF ops only: AutoGraph would only add tracing time
    def tokenize(batch):
        ids = tf.cast(tokenizer(batch), tf.int32)
        if separator_token_id is not None:
            separator = tf.fill([tf.shape(batch)[0], 1], tf.constant(separator_token_id, tf.int32))
            ids = tf.concat([ids, separator], axis=1)
        return ids.flat_values

    ds = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
    ds = ds.batch(256).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return _batches(ds, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder,
                    input_context)


def _batches(stream, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder,
             input_context=None):
    """(x, y) batches of blocks cut from `stream`, a dataset of 1-D int32 pieces of the token
    stream in order."""
    # Re-cut the token stream into blocks; one extra token gives the last target.
    ds = stream.rebatch(sequence_length + 1, drop_remainder=True)
    if input_context is not None:  # the stream is one order: each worker keeps its blocks
        batch_size = input_context.get_per_replica_batch_size(batch_size)
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)

    def split(block):
        x = {"token_ids": block[:-1], "padding_mask": tf.ones_like(block[:-1])}
        return x, block[1:]

    ds = ds.map(split, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(ds.batch(batch_size, drop_remainder=drop_remainder))


# === Token-id shards: `zoo data pretrain --objective causal_lm` ===

HELD_OUT_EVERY = 20  # every 20th document is held out for evaluation (5 %)


def load_causal_lm_tokenizer(vocab):
    """The tokenizer of a tokenizer directory (BPE or WordPiece), or of a `vocab.txt` file
    (WordPiece, lower-cased)."""
    if files.isdir(vocab):
        return tokenizers.from_huggingface(vocab)
    if files.isfile(vocab):
        return tokenizers.WordPieceTokenizer(vocab, lowercase=True)
    raise FileNotFoundError(f"--vocab {vocab}: expected a tokenizer directory or a vocab.txt "
                            "file; found neither")


class CausalLmJob(ShardJob):
    """Token ids of whole documents: `causal_lm/train-*` and `causal_lm/dev-*`."""

    name = "causal_lm"

    def __init__(self, vocab, out, shards, corpus_files):
        super().__init__(vocab, out)
        self.shards, self.corpus_files = shards, corpus_files

    def load_tokenizer(self):
        return load_causal_lm_tokenizer(self.vocab)

    def directories(self):
        return {"causal_lm": [f"train-{k:05d}-of-{self.shards:05d}.tfrecord"
                              for k in range(self.shards)] + ["dev-00000-of-00001.tfrecord"]}

    def write_chunk(self, chunk):
        """One record per document (run of non-blank lines; `[]` if it tokenized to nothing),
        at the place its corpus-wide index gives it, so the parts of all chunks concatenate
        into the round-robin layout."""
        counts = {split: {"documents": 0, "tokens": 0} for split in ("train", "dev")}
        shards = self.writers(chunk.index)["causal_lm"]
        try:
            read = 0
            for read, document in enumerate(iter_chunk_documents(
                    chunk.segments, self.tokenizer(), keep_empty=True), 1):
                index = chunk.first_document + read - 1  # in the corpus
                ids = [token for sentence in document for token in sentence]
                if index % HELD_OUT_EVERY == HELD_OUT_EVERY - 1:
                    split, shard = "dev", self.shards
                else:  # documents before it: index, of which index // HELD_OUT_EVERY dev
                    split, shard = "train", (index - index // HELD_OUT_EVERY) % self.shards
                shards[shard].write(tf.train.Example(features=tf.train.Features(feature={
                    "token_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
                })).SerializeToString(deterministic=True))
                counts[split]["documents"] += bool(ids)
                counts[split]["tokens"] += len(ids)
        finally:
            for writer in shards:
                writer.close()
        if read != chunk.documents:  # the plan and the reading must see the same documents
            raise RuntimeError(f"chunk {chunk.index} of {chunk.segments[0].path}: planned "
                               f"{chunk.documents} documents, read {read}")
        return counts

    def metadata(self, counts):
        totals = {split: {key: sum(c[split][key] for c in counts) for key in ("documents",
                                                                              "tokens")}
                  for split in ("train", "dev")}
        if not totals["dev"]["documents"]:
            raise ValueError(f"{', '.join(map(str, self.corpus_files))}: "
                             f"{totals['train']['documents']} documents; at least "
                             f"{HELD_OUT_EVERY} are needed (every {HELD_OUT_EVERY}th is held "
                             "out for evaluation)")
        names = self.directories()["causal_lm"]
        return {"causal_lm": dict(
            objective="causal_lm", vocabulary_size=int(self.tokenizer().vocabulary_size()),
            shards={"train": names[:-1], "dev": names[-1:]}, held_out_every=HELD_OUT_EVERY,
            num_documents={k: v["documents"] for k, v in totals.items()},
            num_tokens={k: v["tokens"] for k, v in totals.items()}, num_chunks=len(counts),
            corpus_files=[files.absolute(f) for f in self.corpus_files])}


def write_causal_lm_data(corpus_files, tokenizer, out, shards=4, chunk_bytes=None,
                         pipeline_args=None, progress=None):
    """Write a corpus as token-id shards for left-to-right LM pretraining, as a stream.

    `out/causal_lm/`: `train-0000k-of-0000n.tfrecord` and `dev-00000-of-00001.tfrecord`, one
    record per document (`token_ids`, int64: its sentences' ids in order), dealt round-robin
    over the train shards in corpus order; every HELD_OUT_EVERY-th document goes to dev (a
    stream cannot know which are the last 5 %). A document that tokenizes to nothing is an
    empty record, which readers skip, so that every chunk of the corpus knows where its
    documents go without the others (`zoo.data.pretraining.runner`). `pretraining.json` beside
    them counts (non-empty) documents and tokens per split. The corpus is read in chunks, one
    document at a time, so memory does not grow with it; the directory is written under a
    temporary name and replaces `out/causal_lm` whole when complete.

    Args:
        corpus_files: text files, one sentence per line, a blank line between documents.
        tokenizer: a tokenizer, or the path `load_causal_lm_tokenizer` loads (a path is
            needed for a Beam pipeline: each worker loads its own).
        out: output directory.
        shards: train shards.
        chunk_bytes: text per chunk (default `zoo.data.pretraining.CHUNK_BYTES`).
        pipeline_args: None to run in this process, or Apache Beam pipeline options.
        progress: file the progress bar writes to (default `sys.stderr`).

    Returns:
        The metadata (dict).
    """
    job = CausalLmJob(tokenizer, out, shards, list(corpus_files))
    job.tokenizer()  # a bad vocabulary fails here, before any work
    chunks = plan_chunks(corpus_files, chunk_bytes or CHUNK_BYTES, min_documents=1)
    return run_job(job, chunks, pipeline_args, progress)["causal_lm"]


def causal_lm_shards_dataset(directory, split, sequence_length, batch_size,
                             separator_token_id=None, shuffle_buffer=0, seed=None,
                             drop_remainder=True, input_context=None):
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
        return tf.cast(ids, tf.int32)

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # A document that tokenized to nothing is an empty record (`write_causal_lm_data`).
    ds = ds.filter(lambda ids: tf.size(ids) > 0)
    if separator_token_id is not None:
        ds = ds.map(lambda ids: tf.concat([ids, [separator_token_id]], axis=0),
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return _batches(ds, sequence_length, batch_size, shuffle_buffer, seed, drop_remainder,
                    input_context)
