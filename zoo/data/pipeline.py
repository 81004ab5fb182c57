"""The last step of every zoo input pipeline: `prefetched`, a prefetch with tf.data's
autotuning model switched off (why: its docstring)."""

import tensorflow as tf


def prefetched(ds):
    """`ds.prefetch(tf.data.AUTOTUNE)` with `tf.data.Options().autotune.enabled = False`.

    Why: tf.data's autotuning model re-optimizes in a thread of its own whose period doubles
    up to 60 s. Destroying the iterator (the end of every `model.fit`, every evaluation,
    every `for batch in ds`) cancels that thread through a callback that TensorFlow 2.21 runs
    before it marks the cancellation done (`CancellationManager::StartCancel`), so the woken
    thread can find itself not yet cancelled and sleep out the rest of its period while the
    caller waits to join it: now and then the end of an iteration stalls for up to that
    period, most often on a loaded machine. Without the model, `num_parallel_calls=AUTOTUNE`
    runs at TF's default parallelism (the cores) and `prefetch(AUTOTUNE)` keeps its own
    buffer autotuner; a parallel map's throughput is the same either way
    (docs/measurements.md).

    Options pass on to every dataset made from the result, so a later `map` keeps them.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return ds.prefetch(tf.data.AUTOTUNE).with_options(options)
