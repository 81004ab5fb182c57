"""BERT pretraining data: sentence pairs with NSP labels offline, dynamic MLM masking in tf.data.

Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding" (arXiv:1810.04805). Section 3.1 and Appendix A.1: pairs of segments, 50 % of the
time B is the segment that actually follows A ("IsNext"), 50 % a random segment from another
document ("NotNext"); 15 % of the WordPiece tokens are selected for prediction, of which 80 % are
replaced by [MASK], 10 % by a random token and 10 % left unchanged (Table 8 ablates these rates).
Appendix A.2: 90 % of steps at sequence length 128, 10 % at 512, hence one set of shards per
length.

Pair creation follows the original `create_pretraining_data.py` (google-research/bert). Unlike
it, shards hold unmasked ids: masking happens in the input pipeline, so every epoch sees a new
mask (the "dynamic masking" of RoBERTa, Liu et al. 2019, section 4.1) and `dupe_factor` is only
about re-splitting documents into pairs.

Shard layout written by `write_pretraining_data(corpus, vocab=..., out=OUT)`:

    OUT/seq128/pretraining.json                   vocabulary size, special ids, counts, settings
    OUT/seq128/pretraining-00000-of-00004.tfrecord
    ...
    OUT/seq512/...

Each record is a `tf.train.Example` with int64 features `token_ids` ([CLS] A [SEP] B [SEP],
unpadded), `segment_ids` (0 for [CLS] A [SEP], 1 for B [SEP]) and `next_sentence_label`
(0 = IsNext, 1 = random NotNext; the original's and transformers' convention).
"""

import glob
import json
import math
import os
import random
import shutil
import tempfile

import tensorflow as tf
import tensorflow_text as tf_text

METADATA = "pretraining.json"


# === Offline: documents -> sentence pairs with NSP labels ===


def load_tokenizer(vocab):
    """The WordPiece tokenizer of a `vocab.txt` file (lower-cased) or of a tokenizer directory.

    Args:
        vocab: path of a `vocab.txt`, or of a directory written by `zoo data vocab` or holding
            a Hugging Face BERT tokenizer (its tokenizer_config.json sets casing).
    """
    from zoo import tokenizers

    if os.path.isdir(vocab):
        tokenizer = tokenizers.from_huggingface(vocab)
    elif os.path.isfile(vocab):
        tokenizer = tokenizers.WordPieceTokenizer(vocab, lowercase=True)
    else:
        raise FileNotFoundError(f"--vocab {vocab}: expected a vocab.txt file or a tokenizer "
                                "directory; found neither")
    if not isinstance(tokenizer, tokenizers.WordPieceTokenizer):
        raise ValueError(f"--vocab {vocab}: BERT pretraining needs a WordPiece vocabulary "
                         f"(vocab.txt); found a {type(tokenizer).__name__}")
    return tokenizer


def read_documents(corpus_files, tokenizer, batch_size=4096):
    """Tokenize corpus files into documents: a list of documents, each a list of sentences (ids).

    The format is the original's: one sentence per line, a blank line between documents.
    Sentences that tokenize to nothing and empty documents are dropped, as in the original.

    Args:
        corpus_files: plain-text file paths (UTF-8).
        tokenizer: callable mapping a batch of strings to a `tf.RaggedTensor` of ids.
        batch_size: lines tokenized per TF call.
    """
    from tqdm import tqdm

    documents, lines, where = [[]], [], []  # `where[k]`: document index of `lines[k]`

    def flush():
        if lines:
            for doc, ids in zip(where, tokenizer(tf.constant(lines)).to_list()):
                if ids:
                    documents[doc].append(ids)
            lines.clear()
            where.clear()

    for path in corpus_files:
        with open(path, "rb") as f:
            for number, raw in enumerate(tqdm(f, desc=f"tokenizing {os.path.basename(path)}",
                                              unit=" lines", leave=False), 1):
                try:
                    line = raw.decode("utf-8").strip()
                except UnicodeDecodeError as error:
                    raise ValueError(f"{path}:{number}: expected UTF-8 text, found byte "
                                     f"0x{raw[error.start]:02x} at column {error.start + 1}"
                                     ) from None
                if not line:
                    documents.append([])
                    continue
                lines.append(line)
                where.append(len(documents) - 1)
                if len(lines) == batch_size:
                    flush()
        # A file ends a document even without a trailing blank line.
        documents.append([])
    flush()
    return [doc for doc in documents if doc]


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
    if not os.path.exists(directory):
        os.rename(staging, directory)
        return
    aside = tempfile.mkdtemp(prefix=f".{os.path.basename(directory)}-old-",
                             dir=os.path.dirname(directory) or ".")
    old = os.path.join(aside, "old")
    os.rename(directory, old)
    try:
        os.rename(staging, directory)
    except BaseException:
        os.rename(old, directory)  # put the previous data back
        os.rmdir(aside)
        raise
    shutil.rmtree(aside)


def _serialize(token_ids, segment_ids, next_sentence_label):
    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    return tf.train.Example(features=tf.train.Features(feature={
        "token_ids": ints(token_ids),
        "segment_ids": ints(segment_ids),
        "next_sentence_label": ints([next_sentence_label]),
    })).SerializeToString()


def write_pretraining_data(corpus_files, vocab, out, max_sequence_lengths=(128, 512), shards=4,
                           seed=12345, short_seq_prob=0.1, dupe_factor=1):
    """Write BERT pretraining shards (sentence pairs, NSP labels, unmasked) for each length.

    Documents are tokenized once; each length gets its own pairs from `random.Random` seeded by
    `seed` and the length, so the output is deterministic. Each `seq{length}` directory is
    written in full (shards, then `pretraining.json`) into a temporary directory next to it,
    which then replaces it whole; on failure the temporary directory is removed and the
    previous `seq{length}` is left as it was.

    Args:
        corpus_files: text files, one sentence per line, a blank line between documents.
        vocab: `vocab.txt` path or tokenizer directory (see `load_tokenizer`), or a tokenizer.
        out: output directory; one subdirectory `seq{length}` per length.
        max_sequence_lengths: sequence lengths (128 and 512 in the paper, Appendix A.2).
        shards: TFRecord files per length; instances are dealt round-robin after shuffling.
        seed: random seed.
        short_seq_prob: probability of a shorter target length (original: 0.1).
        dupe_factor: passes over the corpus, each with new splits (original: 10, with static
            masks; with dynamic masking 1 is usual).

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
    documents = read_documents(corpus_files, tokenizer)
    umask = os.umask(0)
    os.umask(umask)
    results = {}
    for length in max_sequence_lengths:
        rng = random.Random(f"{seed}:{length}")
        instances = create_instances(documents, length, rng, short_seq_prob, dupe_factor)
        directory = os.path.join(out, f"seq{length}")
        os.makedirs(out, exist_ok=True)
        names = [f"pretraining-{k:05d}-of-{shards:05d}.tfrecord" for k in range(shards)]
        cls, sep = special["cls_token_id"], special["sep_token_id"]
        metadata = dict(
            max_sequence_length=length, num_instances=len(instances),
            random_next_fraction=sum(r for _, _, r in instances) / max(len(instances), 1),
            num_documents=len(documents),
            # One-sentence documents give no IsNext pair, so they are used only as random B.
            num_one_sentence_documents=sum(len(d) == 1 for d in documents),
            vocabulary_size=int(tokenizer.vocabulary_size()),
            **special, shards=names, seed=seed, short_seq_prob=short_seq_prob,
            dupe_factor=dupe_factor, corpus_files=[os.path.abspath(f) for f in corpus_files],
        )
        # The whole run goes to a hidden temporary directory next to seq{length}, which then
        # replaces it in one piece: a failed run leaves the previous data untouched, and shards
        # of an earlier run with another shard count cannot linger.
        staging = tempfile.mkdtemp(prefix=f".seq{length}-", dir=out)
        try:
            os.chmod(staging, 0o777 & ~umask)  # mkdtemp's 0700 would outlive the rename
            writers = [tf.io.TFRecordWriter(os.path.join(staging, name)) for name in names]
            try:
                for k, (a, b, is_random_next) in enumerate(
                        tqdm(instances, desc=f"writing seq{length}", unit=" pairs", leave=False)):
                    token_ids = [cls, *a, sep, *b, sep]
                    segment_ids = [0] * (len(a) + 2) + [1] * (len(b) + 1)
                    writers[k % shards].write(
                        _serialize(token_ids, segment_ids, int(is_random_next)))
            finally:
                for writer in writers:
                    writer.close()
            with open(os.path.join(staging, METADATA), "w") as f:
                json.dump(metadata, f, indent=2)
            _swap_in(staging, directory)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone already unless something failed
        results[length] = metadata
    return results


# === tf.data: dynamic masking ===


class ExactRateItemSelector(tf_text.RandomItemSelector):
    """`tf_text.RandomItemSelector` that selects `rate * n` of a row's `n` items on average.

    `RandomItemSelector` selects `ceil(rate * n)` per row, which overshoots: 19 of 125 tokens
    is 15.2 %, 4 of 21 is 19 %. The original rounds (`round(len(tokens) * 0.15)` over a length
    that includes [CLS]/[SEP]), which also drifts with the length distribution. Rounding down or
    up with probability equal to the fractional part makes the expected count exactly `rate * n`
    for every length, so the selected fraction is the configured rate.

    Random numbers are stateless, from `seed` (see `mask_tokens`).

    Args:
        max_selections_per_batch: cap on selections per row (the name is tf_text's).
        selection_rate: fraction of selectable items to select.
        unselectable_ids: ids never selected.
        seed: int tensor of shape (2,), the stateless seed of this batch.
    """

    def __init__(self, max_selections_per_batch, selection_rate, unselectable_ids, seed):
        super().__init__(max_selections_per_batch, selection_rate, unselectable_ids)
        self._seed = seed

    def _uniform(self, shape, salt):
        seed = tf.random.experimental.stateless_fold_in(self._seed, salt)
        return tf.random.stateless_uniform(shape, seed=seed)

    def get_selection_mask(self, input_ids, axis=1):
        if axis != 1:
            raise ValueError(f"ExactRateItemSelector selects along axis 1 only; got axis={axis}")
        selectable = self.get_selectable(input_ids, axis)
        dense = selectable.to_tensor(False)  # (batch, width)
        count = tf.reduce_sum(tf.cast(dense, tf.float32), axis=1)
        count = tf.floor(count * self.selection_rate + self._uniform(tf.shape(count), 1))
        count = tf.minimum(count, self.max_selections_per_batch)
        # A random order of the selectable positions; the first `count` of each row are chosen.
        scores = tf.where(dense, self._uniform(tf.shape(dense), 2), -1.0)
        rank = tf.argsort(tf.argsort(scores, axis=1, direction="DESCENDING"), axis=1)
        chosen = tf.logical_and(dense, tf.cast(rank, tf.float32) < count[:, None])
        return tf.RaggedTensor.from_tensor(chosen, lengths=selectable.row_lengths(),
                                           row_splits_dtype=selectable.row_splits.dtype)


class StatelessMaskValuesChooser(tf_text.MaskValuesChooser):
    """`tf_text.MaskValuesChooser` drawing its random numbers from a stateless `seed`.

    Same rule (of the selected items: `mask_token_rate` -> [MASK], `random_token_rate` -> a
    uniform random id in [0, vocab_size), the rest unchanged); tf_text's own chooser uses
    stateful random ops, which replay the same stream in every new iterator of a tf.data
    pipeline once a global seed is set, so every epoch would see the same masks.
    """

    def __init__(self, vocab_size, mask_token, mask_token_rate, random_token_rate, seed):
        super().__init__(vocab_size, mask_token, mask_token_rate=mask_token_rate,
                         random_token_rate=random_token_rate)
        self._seed = seed

    def get_mask_values(self, masked_lm_ids):
        ids = masked_lm_ids.flat_values
        fold_in = tf.random.experimental.stateless_fold_in
        u = tf.random.stateless_uniform(tf.shape(ids), seed=fold_in(self._seed, 3))
        random_ids = tf.random.stateless_uniform(
            tf.shape(ids), seed=fold_in(self._seed, 4), minval=0,
            maxval=tf.cast(self.vocab_size, ids.dtype), dtype=ids.dtype)
        values = tf.where(u < self._mask_token_rate, tf.cast(self.mask_token, ids.dtype),
                          tf.where(u < self._mask_token_rate + self.random_token_rate,
                                   random_ids, ids))
        return masked_lm_ids.with_flat_values(values)


def mask_tokens(token_ids, *, vocabulary_size, mask_token_id, unselectable_token_ids,
                mask_selection_length, mask_selection_rate=0.15, mask_token_rate=0.8,
                random_token_rate=0.1, seed=None):
    """BERT masking of a batch of unpadded sequences (section 3.1, Table 8).

    Args:
        token_ids: `tf.RaggedTensor` (batch, None) of ids, without padding.
        vocabulary_size: random replacements are drawn uniformly from `[0, vocabulary_size)`,
            like the original's `vocab_words[rng.randint(...)]`.
        mask_token_id: id of [MASK].
        unselectable_token_ids: ids never selected ([CLS], [SEP], [PAD], [MASK]).
        mask_selection_length: dense width of the outputs; rows never select more.
        mask_selection_rate: fraction of selectable tokens selected (0.15).
        mask_token_rate: fraction of selected tokens replaced by [MASK] (0.8).
        random_token_rate: fraction replaced by a random token (0.1); the rest stay unchanged.
        seed: int tensor of shape (2,) seeding this batch's masks (stateless random ops); by
            default one is drawn from TF's random stream.

    Returns:
        dict of `token_ids` (ragged, masked), and dense (batch, mask_selection_length)
        `mask_positions` (int32), `mask_ids` (int32, the original ids) and `mask_weights`
        (float32, 1 for a real prediction, 0 for padding).

    Example:
        >>> ids = tf.ragged.constant([[2, 5, 6, 7, 3], [2, 8, 3]])
        >>> out = mask_tokens(ids, vocabulary_size=10, mask_token_id=4,
        ...                   unselectable_token_ids=[0, 2, 3, 4], mask_selection_length=2)
        >>> out["mask_positions"].shape
        TensorShape([2, 2])
    """
    if mask_token_rate + random_token_rate > 1:
        raise ValueError(f"mask_token_rate + random_token_rate must be <= 1; got "
                         f"{mask_token_rate} + {random_token_rate}")
    if seed is None:
        seed = tf.random.uniform([2], maxval=tf.int64.max, dtype=tf.int64)
    selector = ExactRateItemSelector(mask_selection_length, mask_selection_rate,
                                     list(unselectable_token_ids), seed=seed)
    chooser = StatelessMaskValuesChooser(vocabulary_size, mask_token_id, mask_token_rate,
                                         random_token_rate, seed=seed)
    masked, positions, mask_ids = tf_text.mask_language_model(token_ids, selector, chooser)
    shape = [None, mask_selection_length]
    return {
        "token_ids": masked,
        "mask_positions": tf.cast(positions.to_tensor(shape=shape), tf.int32),
        "mask_ids": tf.cast(mask_ids.to_tensor(shape=shape), tf.int32),
        "mask_weights": tf.ones_like(positions, tf.float32).to_tensor(shape=shape),
    }


def _files_and_metadata(files):
    if isinstance(files, (str, os.PathLike)):
        pattern = os.fspath(files)
        files = sorted(glob.glob(pattern))
        if not files:
            raise FileNotFoundError(f"no files match {pattern!r}")
    files = [os.fspath(f) for f in files]
    metadata = {}
    for directory in sorted({os.path.dirname(os.path.abspath(f)) for f in files}):
        path = os.path.join(directory, METADATA)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: missing; shards are read together with the "
                                    f"{METADATA} that write_pretraining_data puts beside them")
        with open(path) as f:
            metadata[path] = json.load(f)
    keys = ("vocabulary_size", "cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id")
    vocabularies = {path: tuple(m[k] for k in keys) for path, m in metadata.items()}
    if len(set(vocabularies.values())) > 1:
        raise ValueError(f"shards made with different vocabularies ({', '.join(keys)}): "
                         f"{vocabularies}")
    return files, metadata, dict(zip(keys, next(iter(vocabularies.values()))))


def pretraining_dataset(files, batch_size, max_sequence_length, *, mask_selection_rate=0.15,
                        mask_token_rate=0.8, random_token_rate=0.1, mask_selection_length=None,
                        shuffle_buffer=10_000, seed=None, repeat=False, drop_remainder=True):
    """Batches of masked-LM + NSP examples from `write_pretraining_data` shards, for `fit`.

    Masks are drawn anew every time a batch is produced (dynamic masking). Each element is the
    Keras triple `(x, y, sample_weight)`:

        x = {"token_ids":      (batch, max_sequence_length) int32, masked,
             "segment_ids":    (batch, max_sequence_length) int32,
             "padding_mask":   (batch, max_sequence_length) int32, 1 = real token,
             "mask_positions": (batch, mask_selection_length) int32}
        y = {"mlm": (batch, mask_selection_length) int32 original ids at `mask_positions`,
             "nsp": (batch,) int32, 0 = IsNext, 1 = random NotNext}
        sample_weight = {"mlm": (batch, mask_selection_length) float32, 0 on padded slots,
                         "nsp": (batch,) float32 ones}

    so a model with outputs named "mlm" and "nsp" trains with plain sparse cross-entropy.
    Compile the MLM loss with `reduction="mean_with_sample_weight"` to average over real
    predictions like the original (`run_pretraining.py`: sum(loss * weights) / sum(weights)).

    Args:
        files: shard paths or a glob pattern; `pretraining.json` must sit beside them.
        batch_size: sequences per batch.
        max_sequence_length: padded length, at least the shards' length.
        mask_selection_rate: fraction of tokens selected for prediction (paper: 0.15).
        mask_token_rate: of those, fraction replaced by [MASK] (paper: 0.8; Table 8 ablates).
        random_token_rate: of those, fraction replaced by a random token (paper: 0.1).
        mask_selection_length: predictions per sequence (width of `mask_positions`); defaults
            to `ceil(max_sequence_length * mask_selection_rate)` (20 at 128, like the
            original's `max_predictions_per_seq`), which the selection never exceeds.
        shuffle_buffer: examples in the shuffle buffer (0: no shuffling, files in order).
        seed: seed of the file order, the shuffle buffer and the masks: the same seed gives
            the same sequence of epochs, and every pass over the dataset draws new masks.
        repeat: repeat forever (for step-based training).
        drop_remainder: keep batches full, so every batch has a static shape.

    Example:
        >>> ds = pretraining_dataset("pretrain/seq128/*.tfrecord", 32, 128)  # doctest: +SKIP
        >>> x, y, sample_weight = next(iter(ds))  # doctest: +SKIP
    """
    files, metadata, vocab = _files_and_metadata(files)
    for path, meta in metadata.items():
        if meta["max_sequence_length"] > max_sequence_length:
            raise ValueError(f"{path}: shards of length {meta['max_sequence_length']} do not fit "
                             f"max_sequence_length={max_sequence_length}")
    if mask_selection_length is None:
        mask_selection_length = math.ceil(max_sequence_length * mask_selection_rate)
    unselectable = sorted({vocab["cls_token_id"], vocab["sep_token_id"], vocab["pad_token_id"],
                           vocab["mask_token_id"]})
    spec = {
        "token_ids": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "segment_ids": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
        "next_sentence_label": tf.io.FixedLenFeature([], tf.int64),
    }

    def prepare(serialized, batch_seed):
        example = tf.io.parse_example(serialized, spec)
        token_ids = tf.cast(example["token_ids"], tf.int32)
        masked = mask_tokens(
            token_ids, vocabulary_size=vocab["vocabulary_size"],
            mask_token_id=vocab["mask_token_id"], unselectable_token_ids=unselectable,
            mask_selection_length=mask_selection_length, mask_selection_rate=mask_selection_rate,
            mask_token_rate=mask_token_rate, random_token_rate=random_token_rate,
            seed=batch_seed)
        shape = [None, max_sequence_length]
        x = {
            "token_ids": masked["token_ids"].to_tensor(vocab["pad_token_id"], shape=shape),
            "segment_ids": tf.cast(example["segment_ids"], tf.int32).to_tensor(shape=shape),
            "padding_mask": tf.ones_like(token_ids).to_tensor(shape=shape),
            "mask_positions": masked["mask_positions"],
        }
        nsp = tf.cast(example["next_sentence_label"], tf.int32)
        y = {"mlm": masked["mask_ids"], "nsp": nsp}
        sample_weight = {"mlm": masked["mask_weights"], "nsp": tf.ones_like(nsp, tf.float32)}
        return x, y, sample_weight

    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_buffer:
        ds = ds.shuffle(len(files), seed=seed)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    # One stateless seed per batch, from a stream that restarts differently in every new
    # iterator (each epoch of `fit`) yet is reproducible for a given `seed`.
    batch_seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    ds = tf.data.Dataset.zip((ds, batch_seeds))
    return ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
