"""Serving of tagging (CoNLL-2003's named entities, your own tag sets): whitespace-separated
sentences in, their words and tags (CoNLL-2003: IOB2) out, each word's tag read at its first
sub-token as the task's `predict` reads it."""

import tensorflow as tf

from zoo import export
from zoo.data import packing
from zoo.data.tagging import align_tokens
from zoo_tasks.serving.common import probabilities_and_names, valid_utf8


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.tagging.TaggingTask`: raw sentences in,
    words and their tags out.

    `serving_default`: `text` [batch] string, one sentence of whitespace-separated words
    (split on runs of ASCII whitespace: space, tab, newline, CR, VT, FF; other Unicode
    spaces stay inside a word, which a CoNLL word never holds) -> `words` and `tags`
    [batch, max_words] string, padded with "". The tags are the training data's names in
    IOB2 (as `evaluate` predicts and scores them), read at each word's first sub-token
    exactly as `predict` does: a word with no token (it tokenizes to nothing, e.g. a lone
    control character or soft hyphen, or `data.sequence_length` cuts it off; there is no
    windowing, as in training) is tagged "O".

    Defined outputs for odd input: an empty or all-whitespace text has no words (its row
    is all ""; a batch of only such texts gives [batch, 0]); a batch of 0 gives [0, 0];
    invalid UTF-8 bytes become U+FFFD before splitting (the tokenizer reads them so too),
    so `words` are always valid UTF-8; a very long text (100,000 characters) gets tags for
    the words that fit in the sequence and "O" after them.

    `serving_ids`: `token_ids`, `segment_ids`, `padding_mask` [batch, sequence] int32 (as
    `zoo.data.tagging.align_tokens` packs them) -> `probabilities` [batch, sequence, tags]
    float32 and `tags` [batch, sequence] string, the argmax at every position.
    """
    names = tf.constant(task.labels)
    outside = task.labels.index(task.outside)  # the tag of a word with no token
    length = task.config.data.sequence_length

    def per_token(x):
        logits = tf.cast(model(x, training=False)["logits"], tf.float32)
        return tf.nn.softmax(logits, axis=-1)

    def raw(text):
        words = tf.strings.split(valid_utf8(text))  # (batch, words), row_splits int64
        # Dynamic padding: the tags of real tokens do not depend on the padding.
        aligned = packing.trim_padding(align_tokens(words, task.tokenizer, length),
                                       export.PAD_TO_MULTIPLE_OF)
        probabilities = per_token({key: aligned[key] for key in
                                   ("token_ids", "segment_ids", "padding_mask")})
        token_tags = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        # A word's tag is read where `predict` reads it: the first position of each run of
        # one word id inside the padding mask.
        word_ids = aligned["word_ids"]
        starts = tf.concat([tf.ones_like(word_ids[:, :1], tf.bool),
                            word_ids[:, 1:] != word_ids[:, :-1]], axis=1)
        first = (aligned["padding_mask"] > 0) & starts & (word_ids >= 0)
        where = tf.where(first)  # (n, 2) [row, position]
        target = tf.stack([where[:, 0], tf.cast(tf.gather_nd(word_ids, where), tf.int64)],
                          axis=1)
        padded = words.to_tensor("")
        shape = tf.shape(padded, out_type=tf.int64)
        tag_ids = tf.tensor_scatter_nd_update(tf.fill(shape, outside), target,
                                              tf.gather_nd(token_tags, where))
        real = tf.sequence_mask(words.row_lengths(), shape[1])
        return {"words": padded, "tags": tf.where(real, tf.gather(names, tag_ids), "")}

    def ids(**x):
        return probabilities_and_names(model(x, training=False)["logits"], names, "tags")

    return {
        export.DEFAULT: export.Signature(
            {"text": export.text("text")}, raw, ("words", "tags"),
            "whitespace-separated words in, words and their IOB2 tags out"),
        export.IDS: export.Signature(
            export.model_inputs(model), ids, ("probabilities", "tags"),
            "packed token ids in, per-token tag probabilities and tags out"),
    }
