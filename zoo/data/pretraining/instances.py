"""Offline pretraining data: a stream of documents -> pools -> sentence pairs with NSP labels
-> TFRecord shards.

Pair creation follows the original `create_pretraining_data.py` (google-research/bert); the
shards hold unmasked ids (masking is the input pipeline's, `zoo.data.pretraining.dataset`).
`write_pretraining_data` writes `seq{length}/` with the shards and `METADATA` beside them.
"""

import json
import os
import random

import tensorflow as tf

from zoo import files

METADATA = "pretraining.json"
# Documents per pool (`iter_pools`): Wikipedia's articles run about 3 KB each, so a pool is
# ~15 MB of text, held as Python lists of ids (~14 bytes per byte of text): ~200 MB.
POOL_SIZE = 5000


def load_tokenizer(vocab):
    """The WordPiece tokenizer of a `vocab.txt` file (lower-cased) or of a tokenizer directory.

    Args:
        vocab: path of a `vocab.txt`, or of a directory written by `zoo data vocab` or holding
            a Hugging Face BERT tokenizer (its tokenizer_config.json sets casing).
    """
    from zoo import tokenizers

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
    as in the original. Memory holds one batch of lines and the documents they complete.

    Args:
        corpus_files: plain-text file paths (UTF-8).
        tokenizer: callable mapping a batch of strings to a `tf.RaggedTensor` of ids.
        batch_size: lines tokenized per TF call.
    """
    from tqdm import tqdm

    lines, ends = [], []  # ends[k]: whether a document ends after lines[k]
    document = []

    def flush():
        nonlocal document
        done = []
        for ids, end in zip(tokenizer(tf.constant(lines)).to_list() if lines else [], ends):
            if ids:
                document.append(ids)
            if end and document:
                done.append(document)
                document = []
        lines.clear()
        ends.clear()
        return done

    for path in corpus_files:
        with files.open(path, "rb") as f:
            for number, raw in enumerate(tqdm(f, desc=f"tokenizing {os.path.basename(path)}",
                                              unit=" lines", leave=False), 1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as error:
                    raise ValueError(f"{path}:{number}: expected UTF-8 text, found byte "
                                     f"0x{raw[error.start]:02x} at column {error.start + 1}"
                                     ) from None
                if not line:
                    if ends:
                        ends[-1] = True
                    elif document:  # the blank line follows a flushed batch
                        yield document
                        document = []
                    continue
                lines.append(line)
                ends.append(False)
                if len(lines) == batch_size:
                    yield from flush()
        if ends:
            ends[-1] = True
        yield from flush()
        if document:  # the file ended right after a flushed batch
            yield document
            document = []


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

    Example:
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


def _swap_in(staging, directory):
    """Replace `directory` (if any) by the complete `staging` directory."""
    if not files.exists(directory):
        files.move_directory(staging, directory)
        return
    aside = files.scratch_directory(os.path.dirname(directory) or ".",
                               f".{os.path.basename(directory)}-old-")
    old = os.path.join(aside, "old")
    files.move_directory(directory, old)
    try:
        files.move_directory(staging, directory)
    except BaseException:
        files.move_directory(old, directory)  # put the previous data back
        files.rmtree(aside)
        raise
    files.rmtree(aside)


def _serialize(token_ids, segment_ids, next_sentence_label):
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    return tf.train.Example(features=tf.train.Features(feature={
        "token_ids": ints(token_ids),
        "segment_ids": ints(segment_ids),
        "next_sentence_label": ints([next_sentence_label]),
    })).SerializeToString()


def write_pretraining_data(corpus_files, vocab, out, max_sequence_lengths=(128, 512), shards=4,
                           seed=12345, short_seq_prob=0.1, dupe_factor=1, pool_size=POOL_SIZE):
    """Write BERT pretraining shards (sentence pairs, NSP labels, unmasked) for each length.

    The corpus is read as a stream: documents are tokenized once, gathered into pools of
    `pool_size` documents (`iter_pools`), and each pool is paired, shuffled and written before
    the next is read, so memory holds one pool whatever the size of the corpus. NotNext
    segments come from the document's own pool (the original drew them from the input file it
    was processing); NSP stays 50/50. Each length gets its own pairs from `random.Random`
    seeded by `seed`, the length and the pool's index, so the output is deterministic.

    Each `seq{length}` directory is written in full (shards, then `pretraining.json`) into a
    temporary directory next to it, which then replaces it whole; on failure the temporary
    directory is removed and the previous `seq{length}` is left as it was.

    Args:
        corpus_files: text files, one sentence per line, a blank line between documents.
        vocab: `vocab.txt` path or tokenizer directory (see `load_tokenizer`), or a tokenizer.
        out: output directory; one subdirectory `seq{length}` per length.
        max_sequence_lengths: sequence lengths (128 and 512 in the paper, Appendix A.2).
        shards: TFRecord files per length; pairs are dealt round-robin after shuffling.
        seed: random seed.
        short_seq_prob: probability of a shorter target length (original: 0.1).
        dupe_factor: passes over each pool, each with new splits (original: 10, with static
            masks; with dynamic masking 1 is usual).
        pool_size: documents per pool (memory; NotNext segments come from the same pool).

    Returns:
        dict mapping each length to its metadata (also saved as `seq{length}/pretraining.json`).

    Example:
        >>> write_pretraining_data(["wiki.txt"], "vocab.txt", "pretrain")  # doctest: +SKIP
        >>> ds = pretraining_dataset("pretrain/seq128/*.tfrecord", 32, 128)  # doctest: +SKIP
    """
    from tqdm import tqdm

    tokenizer = load_tokenizer(vocab) if isinstance(vocab, (str, os.PathLike)) else vocab
    special = {name: int(getattr(tokenizer, name)) for name in
               ("cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id")}
    cls, sep = special["cls_token_id"], special["sep_token_id"]
    for length in max_sequence_lengths:
        if length < 5:
            raise ValueError(f"max_sequence_length={length}: expected >= 5, room for "
                             "[CLS] A [SEP] B [SEP] with two tokens in A and B together")
    names = [f"pretraining-{k:05d}-of-{shards:05d}.tfrecord" for k in range(shards)]
    umask = os.umask(0)
    os.umask(umask)
    files.makedirs(out)
    # Every length is written to a hidden temporary directory next to seq{length}, which then
    # replaces it in one piece: a failed run leaves the previous data untouched, and shards of
    # an earlier run with another shard count cannot linger.
    staging = {length: files.scratch_directory(out, f".seq{length}-")
               for length in max_sequence_lengths}
    counts = {length: [0, 0] for length in max_sequence_lengths}  # pairs, NotNext pairs
    documents = one_sentence = 0
    try:
        writers = {}
        for length, directory in staging.items():
            if not files.is_remote(directory):  # mkdtemp's 0700 would outlive the rename
                os.chmod(directory, 0o777 & ~umask)
            writers[length] = [tf.io.TFRecordWriter(os.path.join(directory, name))
                               for name in names]
        try:
            pools = iter_pools(iter_documents(corpus_files, tokenizer), pool_size)
            for index, pool in enumerate(tqdm(pools, desc="pairing", unit=" pools",
                                              leave=False)):
                documents += len(pool)
                # One-sentence documents give no IsNext pair: only used as random B.
                one_sentence += sum(len(d) == 1 for d in pool)
                for length in max_sequence_lengths:
                    rng = random.Random(f"{seed}:{length}:{index}")
                    count = counts[length]
                    for a, b, is_random_next in create_instances(pool, length, rng,
                                                                 short_seq_prob, dupe_factor):
                        token_ids = [cls, *a, sep, *b, sep]
                        segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
                        writers[length][count[0] % shards].write(
                            _serialize(token_ids, segment_ids, int(is_random_next)))
                        count[0] += 1
                        count[1] += int(is_random_next)
        finally:
            for length_writers in writers.values():
                for writer in length_writers:
                    writer.close()
        if documents < 2:
            raise ValueError(f"NSP needs at least 2 documents to draw random segments from; "
                             f"found {documents} (documents are separated by blank lines)")
        results = {}
        for length in max_sequence_lengths:
            pairs, random_next = counts[length]
            results[length] = dict(
                max_sequence_length=length, num_instances=pairs,
                random_next_fraction=random_next / max(pairs, 1), num_documents=documents,
                num_one_sentence_documents=one_sentence,
                vocabulary_size=int(tokenizer.vocabulary_size()),
                **special, shards=names, seed=seed, short_seq_prob=short_seq_prob,
                dupe_factor=dupe_factor, pool_size=pool_size,
                corpus_files=[files.absolute(f) for f in corpus_files])
            with files.open(os.path.join(staging[length], METADATA), "w") as f:
                json.dump(results[length], f, indent=2)
        for length in max_sequence_lengths:
            _swap_in(staging[length], os.path.join(out, f"seq{length}"))
    finally:
        for directory in staging.values():  # gone already unless something failed
            files.remove_quietly(directory)
    return results
