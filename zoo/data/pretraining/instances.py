"""Offline pretraining data: a stream of documents -> pools -> sentence pairs with NSP labels
-> TFRecord shards.

Pair creation follows the original `create_pretraining_data.py` (google-research/bert); the
shards hold unmasked ids (masking is the input pipeline's, `zoo.data.pretraining.dataset`).
`write_pretraining_data` writes `seq{length}/` with the shards and `METADATA` beside them.
"""

import os
import random

import tensorflow as tf

from zoo import files, tokenizers
from zoo.data.pretraining.chunks import CHUNK_BYTES, Segment, iter_chunk_documents, plan_chunks
from zoo.data.pretraining.runner import ShardJob, run_job
from zoo.progress import bar as progress_bar

# Documents per pool (`iter_pools`): a pool of Wikipedia articles is held as Python lists of
# ids, many times the size of its text, so the pool size bounds a worker's memory
# (`zoo benchmark data` reports the peak).
POOL_SIZE = 5000


def load_tokenizer(vocab):
    """The WordPiece tokenizer of a `vocab.txt` file (lower-cased) or of a tokenizer directory.

    Args:
        vocab: path of a `vocab.txt`, or of a directory written by `zoo data vocab` or holding
            a Hugging Face BERT tokenizer (its tokenizer_config.json sets casing).
    """
    if files.isdir(vocab):
        tokenizer = tokenizers.from_huggingface(vocab)
    elif files.isfile(vocab):
        tokenizer = tokenizers.WordPieceTokenizer(vocab, lowercase=True)
    else:
        raise FileNotFoundError(f"--vocab {vocab}: expected a vocab.txt file or a tokenizer "
                                "directory; found neither")
    if not isinstance(tokenizer, tokenizers.WordPieceTokenizer):
        raise ValueError(f"--vocab {vocab}: BERT pretraining needs a WordPiece vocabulary "
                         f"(vocab.txt); found a {type(tokenizer).__name__}")
    return tokenizer


def iter_documents(corpus_files, tokenizer, batch_size=4096):
    """Tokenized documents of corpus files, one at a time: each a list of sentences (ids).

    The format is the original's: one sentence per line, a blank line between documents; a
    file ends a document. Sentences that tokenize to nothing and empty documents are dropped,
    as in the original. Memory holds one batch of lines and the documents they complete
    (`chunks.iter_chunk_documents` over whole files).

    Args:
        corpus_files: plain-text file paths (UTF-8).
        tokenizer: callable mapping a batch of strings to a `tf.RaggedTensor` of ids.
        batch_size: lines tokenized per TF call.
    """
    def progress(segment, lines):
        return progress_bar(lines, desc=f"tokenizing {os.path.basename(segment.path)}",
                            unit=" lines", leave=False)

    return iter_chunk_documents([Segment(path, 0, None, 1) for path in corpus_files], tokenizer,
                                batch_size, progress=progress)


def read_documents(corpus_files, tokenizer, batch_size=4096):
    """Every document of `iter_documents` in one list (small corpora; tests)."""
    return list(iter_documents(corpus_files, tokenizer, batch_size))


def iter_pools(documents, pool_size):
    """Consecutive pools of about `pool_size` documents from a stream of documents.

    NotNext segments are drawn from the pool of their document, as the original drew them from
    the input file it was processing; only one pool (and the start of the next) is in memory.
    Every pool has at least two documents: a remainder of one joins the last pool.
    """
    if pool_size < 2:
        raise ValueError(f"pool_size={pool_size}: expected >= 2 (NotNext needs another "
                         "document)")
    pool, following = [], []
    for document in documents:
        if len(pool) < pool_size:
            pool.append(document)
            continue
        following.append(document)
        if len(following) == 2:  # the next pool can stand on its own: this one is complete
            yield pool
            pool, following = following, []
    pool += following
    if pool:
        yield pool


def create_instances(documents, max_sequence_length, rng, short_seq_prob=0.1, dupe_factor=1):
    """Sentence pairs `(tokens_a, tokens_b, is_random_next)` from tokenized documents.

    Follows `create_instances_from_document` of the original `create_pretraining_data.py`:
    sentences are gathered into a chunk up to a target length (the full length, or with
    probability `short_seq_prob` a random shorter one), A is a random prefix of the chunk's
    sentences, and B is either the rest of the chunk or, with probability 0.5, text starting at
    a random sentence of another document; the pair is then trimmed to fit.

    One deviation keeps NSP at 50/50: the original makes every single-sentence chunk a random
    pair, which skews the labels towards NotNext. Here the coin is always tossed first; an
    IsNext single-sentence chunk is paired with its next sentence in the document (or, at the
    end of the document, with its previous one). Documents of one sentence cannot give an IsNext
    pair, so they serve only as random B segments.

    Args:
        documents: list of documents, each a list of sentences, each a list of token ids.
        max_sequence_length: length including [CLS], [SEP], [SEP].
        rng: a `random.Random`; the result is deterministic given its state.
        short_seq_prob: probability of a shorter target length (0.1 in the original).
        dupe_factor: passes over the documents, each splitting them into pairs anew.

    Examples:
        >>> import random
        >>> docs = [[[1, 2], [3, 4], [5]], [[6, 7], [8]]]
        >>> pairs = create_instances(docs, 16, random.Random(0))
        >>> all(len(a) + len(b) <= 13 for a, b, _ in pairs)
        True
    """
    if max_sequence_length < 5:
        raise ValueError(f"max_sequence_length={max_sequence_length}: expected >= 5, room for "
                         "[CLS] A [SEP] B [SEP] with two tokens in A and B together")
    if len(documents) < 2:
        raise ValueError(f"NSP needs at least 2 documents to draw random segments from; found "
                         f"{len(documents)} (documents are separated by blank lines)")
    instances = []
    for _ in range(dupe_factor):
        for index in range(len(documents)):
            instances.extend(
                _document_instances(documents, index, max_sequence_length - 3, short_seq_prob,
                                    rng))
    rng.shuffle(instances)
    return instances


def _document_instances(documents, index, max_num_tokens, short_seq_prob, rng):
    document = documents[index]
    if len(document) < 2:
        return []
    # Mostly fill the sequence (short ones waste compute), but sometimes use a shorter one to
    # narrow the gap to fine-tuning inputs (original, `short_seq_prob`).
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)

    instances = []
    chunk, length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target_length:
            is_random_next = rng.random() < 0.5
            if len(chunk) == 1 and not is_random_next:
                if i + 1 < len(document):
                    i += 1
                    chunk.append(document[i])
                else:
                    chunk.insert(0, document[i - 1])
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            if is_random_next:
                tokens_b = _random_segment(documents, index, target_length - len(tokens_a), rng)
                # The rest of the chunk was not used: put it back (original).
                i -= len(chunk) - a_end
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
            instances.append((tokens_a, tokens_b, is_random_next))
            chunk, length = [], 0
        i += 1
    return instances


def _random_segment(documents, index, target_length, rng):
    """Sentences from a random start in a random other document, up to `target_length` tokens."""
    other = rng.randrange(len(documents) - 1)
    document = documents[other + (other >= index)]  # uniform over the other documents
    tokens = []
    for sentence in document[rng.randrange(len(document)):]:
        tokens.extend(sentence)
        if len(tokens) >= target_length:
            break
    return tokens


def _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
    # Trim the longer side, from the front or the back at random to avoid biases (original).
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b  # ties trim B
        longer.pop(0 if rng.random() < 0.5 else -1)


def _serialize(token_ids, segment_ids, next_sentence_label):
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    return tf.train.Example(features=tf.train.Features(feature={
        "token_ids": ints(token_ids),
        "segment_ids": ints(segment_ids),
        "next_sentence_label": ints([next_sentence_label]),
    })).SerializeToString(deterministic=True)  # map order fixed: same bytes every run


class MlmNspJob(ShardJob):
    """BERT's sentence pairs: `seq{length}/pretraining-*.tfrecord` for each length."""

    name = "seq"

    def __init__(self, vocab, out, max_sequence_lengths, shards, seed, short_seq_prob,
                 dupe_factor, pool_size, corpus_files, chunk_bytes):
        super().__init__(vocab, out)
        self.lengths, self.shards, self.seed = list(max_sequence_lengths), shards, seed
        self.short_seq_prob, self.dupe_factor = short_seq_prob, dupe_factor
        self.pool_size, self.corpus_files, self.chunk_bytes = pool_size, corpus_files, chunk_bytes

    def load_tokenizer(self):
        return load_tokenizer(self.vocab)

    def directories(self):
        names = [f"pretraining-{k:05d}-of-{self.shards:05d}.tfrecord" for k in range(self.shards)]
        return {f"seq{length}": names for length in self.lengths}

    def special(self):
        tokenizer = self.tokenizer()
        return {name: int(getattr(tokenizer, name)) for name in
                ("cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id")}

    def write_chunk(self, chunk):
        """Pairs of each pool of the chunk, dealt round-robin over the shards' parts from shard
        `chunk.index % shards`; random numbers from (seed, length, chunk, pool)."""
        special = self.special()
        cls, sep = special["cls_token_id"], special["sep_token_id"]
        counts = {"documents": 0, "one_sentence": 0, "unpaired": 0,
                  "pairs": {str(length): [0, 0] for length in self.lengths}}
        writers = self.writers(chunk.index)
        try:
            documents = iter_chunk_documents(chunk.segments, self.tokenizer())
            for index, pool in enumerate(iter_pools(documents, self.pool_size)):
                counts["documents"] += len(pool)
                # One-sentence documents give no IsNext pair: only used as random B.
                counts["one_sentence"] += sum(len(d) == 1 for d in pool)
                if len(pool) < 2:  # a chunk whose other documents tokenized to nothing
                    counts["unpaired"] += len(pool)
                    continue
                for length in self.lengths:
                    rng = random.Random(f"{self.seed}:{length}:{chunk.index}:{index}")
                    count = counts["pairs"][str(length)]
                    shards = writers[f"seq{length}"]
                    for a, b, is_random_next in create_instances(
                            pool, length, rng, self.short_seq_prob, self.dupe_factor):
                        token_ids = [cls, *a, sep, *b, sep]
                        segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
                        shards[(chunk.index + count[0]) % self.shards].write(
                            _serialize(token_ids, segment_ids, int(is_random_next)))
                        count[0] += 1
                        count[1] += int(is_random_next)
        finally:
            for length_writers in writers.values():
                for writer in length_writers:
                    writer.close()
        return counts

    def metadata(self, counts):
        documents = sum(c["documents"] for c in counts)
        if documents < 2:
            raise ValueError(f"NSP needs at least 2 documents to draw random segments from; "
                             f"found {documents} (documents are separated by blank lines)")
        results = {}
        for length in self.lengths:
            pairs = sum(c["pairs"][str(length)][0] for c in counts)
            random_next = sum(c["pairs"][str(length)][1] for c in counts)
            results[f"seq{length}"] = dict(
                max_sequence_length=length, num_instances=pairs,
                random_next_fraction=random_next / max(pairs, 1), num_documents=documents,
                num_one_sentence_documents=sum(c["one_sentence"] for c in counts),
                num_unpaired_documents=sum(c["unpaired"] for c in counts),
                vocabulary_size=int(self.tokenizer().vocabulary_size()),
                **self.special(), shards=self.directories()[f"seq{length}"], seed=self.seed,
                short_seq_prob=self.short_seq_prob, dupe_factor=self.dupe_factor,
                pool_size=self.pool_size, chunk_bytes=self.chunk_bytes, num_chunks=len(counts),
                corpus_files=[files.absolute(f) for f in self.corpus_files])
        return results


def write_pretraining_data(corpus_files, vocab, out, max_sequence_lengths=(128, 512), shards=4,
                           seed=12345, short_seq_prob=0.1, dupe_factor=1, pool_size=POOL_SIZE,
                           chunk_bytes=CHUNK_BYTES, pipeline_args=None, progress=None):
    """Write BERT pretraining shards (sentence pairs, NSP labels, unmasked) for each length.

    The corpus is read as a stream, in chunks of about `chunk_bytes` (`plan_chunks`), each cut
    into pools of `pool_size` documents (`iter_pools`); each pool is paired, shuffled and
    written before the next is read, so memory holds one pool whatever the size of the corpus.
    NotNext segments come from the document's own pool (the original drew them from the input
    file it was processing); NSP stays 50/50. Random numbers are seeded by `seed`, the length,
    the chunk and the pool, so the output is the same in this process and on any Beam runner
    with any number of workers (`runner.run_job`).

    Each `seq{length}` directory is written in full (shards, then `pretraining.json`) into a
    hidden directory in `out`, which then replaces it whole; on failure the previous
    `seq{length}` is left as it was.

    Args:
        corpus_files: text files, one sentence per line, a blank line between documents.
        vocab: `vocab.txt` path or tokenizer directory (see `load_tokenizer`), or a tokenizer
            (in this process only).
        out: output directory; one subdirectory `seq{length}` per length.
        max_sequence_lengths: sequence lengths (128 and 512 in the paper, Appendix A.2).
        shards: TFRecord files per length.
        seed: random seed.
        short_seq_prob: probability of a shorter target length (original: 0.1).
        dupe_factor: passes over each pool, each with new splits (original: 10, with static
            masks; with dynamic masking 1 is usual).
        pool_size: documents per pool (memory; NotNext segments come from the same pool).
        chunk_bytes: text per chunk, the unit of parallel work.
        pipeline_args: None to run in this process, or Apache Beam pipeline options (list of
            strings) to run as a Beam pipeline.
        progress: file the progress bar writes to (default `sys.stderr`).

    Returns:
        dict mapping each length to its metadata (also saved as `seq{length}/pretraining.json`).

    Examples:
        >>> write_pretraining_data(["wiki.txt"], "vocab.txt", "pretrain")  # doctest: +SKIP
        >>> ds = pretraining_dataset("pretrain/seq128/*.tfrecord", 32, 128)  # doctest: +SKIP
    """
    for length in max_sequence_lengths:
        if length < 5:
            raise ValueError(f"max_sequence_length={length}: expected >= 5, room for "
                             "[CLS] A [SEP] B [SEP] with two tokens in A and B together")
    if pool_size < 2:
        raise ValueError(f"pool_size={pool_size}: expected >= 2 (NotNext needs another "
                         "document)")
    job = MlmNspJob(vocab, out,
                    max_sequence_lengths, shards, seed, short_seq_prob, dupe_factor, pool_size,
                    list(corpus_files), chunk_bytes)
    if isinstance(vocab, (str, os.PathLike)):
        job.tokenizer()  # a bad vocabulary fails here, before any work
    chunks = plan_chunks(corpus_files, chunk_bytes)
    documents = sum(chunk.documents for chunk in chunks)
    if documents < 2:
        raise ValueError(f"NSP needs at least 2 documents to draw random segments from; found "
                         f"{documents} (documents are separated by blank lines)")
    metadata = run_job(job, chunks, pipeline_args, progress)
    return {int(directory[len("seq"):]): meta for directory, meta in metadata.items()}
