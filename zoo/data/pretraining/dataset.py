"""The tf.data side of pretraining: dynamic MLM masking and `pretraining_dataset`.

Reads the shards `write_pretraining_data` wrote and masks them anew in every batch: 15 % of the
tokens selected, of which 80 % become [MASK], 10 % a random token, 10 % stay (BERT Appendix A.1).
"""

import json
import math
import os

import tensorflow as tf
import tensorflow_text as tf_text

from zoo import files
from zoo.data.pipeline import prefetched
from zoo.data.pretraining.runner import METADATA


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

    Examples:
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


def _files_and_metadata(shards):
    if isinstance(shards, (str, os.PathLike)):
        pattern = os.fspath(shards)
        shards = files.glob(pattern)
        if not shards:
            raise FileNotFoundError(f"no files match {pattern!r}")
    shards = [os.fspath(f) for f in shards]
    metadata = {}
    for directory in sorted({os.path.dirname(files.absolute(f)) for f in shards}):
        path = os.path.join(directory, METADATA)
        if not files.exists(path):
            raise FileNotFoundError(f"{path}: missing; shards are read together with the "
                                    f"{METADATA} that write_pretraining_data puts beside them")
        with files.open(path) as f:
            metadata[path] = json.load(f)
    keys = ("vocabulary_size", "cls_token_id", "sep_token_id", "pad_token_id", "mask_token_id")
    vocabularies = {path: tuple(m[k] for k in keys) for path, m in metadata.items()}
    if len(set(vocabularies.values())) > 1:
        raise ValueError(f"shards made with different vocabularies ({', '.join(keys)}): "
                         f"{vocabularies}")
    return shards, metadata, dict(zip(keys, next(iter(vocabularies.values()))))


def pretraining_dataset(files, batch_size, max_sequence_length, *, mask_selection_rate=0.15,
                        mask_token_rate=0.8, random_token_rate=0.1, mask_selection_length=None,
                        shuffle_buffer=10_000, seed=None, repeat=False, drop_remainder=True,
                        input_context=None):
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
        input_context: a `tf.distribute.InputContext` when each worker builds its own input
            (`strategy.distribute_datasets_from_function`): `batch_size` is then the global
            batch and batches hold one replica's share of it; pipeline k of n reads the shard
            files k, k + n, ... (or, with fewer files than pipelines, every n-th record of
            them all) and draws its masks from its own seed.

    Examples:
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

    pipeline, pipelines = 0, 1
    if input_context is not None:
        batch_size = input_context.get_per_replica_batch_size(batch_size)
        pipeline, pipelines = input_context.input_pipeline_id, input_context.num_input_pipelines
    by_file = len(files) >= pipelines
    if by_file:  # each worker reads its own files (FILE sharding, no bytes read twice)
        files = files[pipeline::pipelines]
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_buffer:
        ds = ds.shuffle(len(files), seed=seed)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if not by_file:  # fewer files than workers: every worker reads all, keeps its records
        ds = ds.shard(pipelines, pipeline)
    if pipeline and seed is not None:
        seed += 7919 * pipeline  # another worker's masks and order from another seed
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)
    if repeat:
        ds = ds.repeat()
    ds = ds.batch(batch_size, drop_remainder=drop_remainder)
    # One stateless seed per batch, from a stream that restarts differently in every new
    # iterator (each epoch of `fit`) yet is reproducible for a given `seed`.
    batch_seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True).batch(2)
    ds = tf.data.Dataset.zip((ds, batch_seeds))
    return prefetched(ds.map(prepare, num_parallel_calls=tf.data.AUTOTUNE))
