"""The order examples reach `model.fit` and evaluation: a resumable shuffled stream, file
order, evaluation by ascending length (`data.sort_by_length`) and back, and the traced batch
encoders `Dataset.map` calls.

This is the task families' side of resuming: `fit` (zoo.training) asks a task only for its
`phases`, each built from the number of batches already trained; `zoo_tasks.base.BaseTask.batches`
turns that number into the same stream of examples an uninterrupted run would have seen,
with `example_order`.
"""

import numpy as np
import tensorflow as tf

from zoo.data import prefetched


def traced_encoder(cache, config, fn, *key):
    """`fn`, a task's batch encoder (tokenize + pack, TF ops), as a `tf.function` traced once
    per `cache` (the task's), `config` and `key`, for `Dataset.map`.

    `Dataset.map` traces its function anew for every dataset, and a tokenizer with its
    packing is a large graph, paid again at every `train.eval_every` evaluation. Inside
    `map`, a call to an already traced `tf.function` is one op. The config is part of the
    cache key, so a changed setting (say `data.pad_to_multiple_of`) traces again.

    Without AutoGraph: the encoders are plain TF ops with no Python control flow on tensors
    (they are exported, and Keras exports with `autograph=False`), and converting their call
    tree adds about a second to every run's start (time `task.dataset("train")` twice in one
    process to see it).
    """
    cache_key = (getattr(fn, "__name__", repr(fn)), repr(config)) + key
    if cache_key not in cache:
        cache[cache_key] = tf.function(fn, autograph=False)
    return cache[cache_key]


def example_order(n, split, seed, batch_size, repeat=False, skip_batches=0, order=None):
    """Example indices of a split, in the order every task feeds them to `model.fit`.

    The train split with `repeat=True` is an endless stream whose order is a pure function of
    (seed, position): each pass over the n examples is a fresh permutation
    (`tf.random.experimental.index_shuffle`, seeded by the pass number), so a resumed run
    that skips `skip_batches` batches sees exactly the batches an uninterrupted run would.
    Without `repeat` the train split is one pass, reshuffled at every iteration; other splits
    keep file order, which evaluation relies on, or the given `order` (`length_order`).

    Examples:
        >>> order = example_order(5, "train", seed=0, batch_size=2, repeat=True, skip_batches=1)
        >>> first = example_order(5, "train", seed=0, batch_size=2, repeat=True)
        >>> [int(i) for i in order.take(3)] == [int(i) for i in first.skip(2).take(3)]
        True
    """
    if split == "train" and repeat:
        start = skip_batches * batch_size
        return tf.data.Dataset.range(start, 2 ** 62).map(
            lambda i: tf.random.experimental.index_shuffle(
                i % n, seed=tf.stack([tf.constant(seed, tf.int64), i // n]), max_index=n - 1))
    if split == "train":
        return tf.data.Dataset.range(n).shuffle(n, seed=seed, reshuffle_each_iteration=True)
    if order is not None:
        if sorted(int(i) for i in order) != list(range(n)):
            raise ValueError(f"order: not a permutation of the {n} examples")
        return tf.data.Dataset.from_tensor_slices(np.asarray(order, "int64"))
    return tf.data.Dataset.range(n)


# The most examples whose encoded inputs `evaluation_inputs` keeps in memory (MNLI's and
# SQuAD's dev sets are ~10,000): a few hundred MB at 128 tokens; a larger set is encoded again
# at each evaluation.
CACHED_EXAMPLES = 200_000


def evaluation_inputs(task, key, order, build):
    """`build()`, the dataset of one split's (or file's) evaluation inputs, encoded once per
    `task` and `key` and kept in memory for the task's next evaluations (`Dataset.cache`).

    Each evaluation of a run built the same batches again: a new `Dataset` (its `map`
    traced), a new iterator (its functions instantiated) and every example tokenized and
    packed anew, about 0.4 CPU-s on a 100-example dev set where the cached pass takes 1 ms
    (docs/measurements.md, "The test suite"). The examples of a path are read once per task
    already (`BaseTask.examples`): its encoded inputs do not change either. `order` (from
    `length_order`) counts the examples: a set over CACHED_EXAMPLES, or of unknown size
    (`data.sort_by_length` off), is built anew each time, as before.
    """
    if order is None or len(order) > CACHED_EXAMPLES:
        return build()
    store = task.__dict__.setdefault("_evaluation_inputs", {})
    if key not in store:
        # Read whole at the first evaluation (Keras' predict and the tasks' loops read every
        # batch), so the cache is complete and later passes never run the encoder.
        store[key] = prefetched(build().cache())
    return store[key]


def length_order(task, split, path=None):
    """The evaluation order of `data.sort_by_length`: example indices by ascending length.

    A length is the example's real tokens (the sum of its `padding_mask`; for several
    sequences per example, such as multiple-choice options, the longest), read from one pass
    of the task's own packing, so it is exact. Batches of similar lengths, padded dynamically
    (`data.pad_to_multiple_of`), then carry little padding. The sort is stable. None when
    `data.sort_by_length` is off: the file order.

    Returns:
        None, or an int64 array, a permutation of the examples; `in_file_order` undoes it.
    """
    if not task.config.data.sort_by_length:
        return None
    # Once per task, split and path, as its examples are read once (`evaluation_inputs`).
    orders = task.__dict__.setdefault("_length_orders", {})
    if (split, path) not in orders:
        lengths = []
        for batch in task.dataset(split, path, batch_size=256):
            mask = np.asarray(batch[0]["padding_mask"])
            lengths.append((mask > 0).sum(-1).reshape(len(mask), -1).max(-1))
        orders[split, path] = np.argsort(np.concatenate(lengths), kind="stable").astype("int64")
    return orders[split, path]


def in_file_order(values, order):
    """`values` predicted in `order` (`length_order`) put back in file order (a list or an
    array along its first axis); `order` None returns them as they are."""
    if order is None:
        return values
    if isinstance(values, np.ndarray):
        result = np.empty_like(values)
        result[order] = values
        return result
    result = [None] * len(values)
    for position, index in enumerate(order):
        result[index] = values[position]
    return result
