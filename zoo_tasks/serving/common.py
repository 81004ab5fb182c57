"""What several families' serving graphs share: reading raw text as the tokenizers do, and
turning logits into probabilities and the names of their argmax (TF ops only)."""

import tensorflow as tf


def valid_utf8(text):
    """String tensor `text` with invalid UTF-8 bytes replaced by U+FFFD, as the tokenizers
    read them, so that what the graph returns is valid UTF-8."""
    return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                        replacement_char=0xFFFD)


def probabilities_and_names(logits, names, key):
    """{"probabilities": float32 softmax of `logits` over the last axis, `key`: the entry of
    `names` (a string tensor) at their argmax}."""
    probabilities = tf.nn.softmax(tf.cast(logits, tf.float32), axis=-1)
    return {"probabilities": probabilities,
            key: tf.gather(names, tf.argmax(probabilities, axis=-1))}
