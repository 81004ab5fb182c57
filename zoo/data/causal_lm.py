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

    def tokenize(batch):
        ids = tf.cast(tokenizer(batch), tf.int32)
        if separator_token_id is not None:
            separator = tf.fill([tf.shape(batch)[0], 1], tf.constant(separator_token_id, tf.int32))
            ids = tf.concat([ids, separator], axis=1)
        return ids.flat_values

    ds = tf.data.Dataset.from_tensor_slices(tf.constant(list(texts), tf.string))
    ds = ds.batch(256).map(tokenize, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    # Re-cut the token stream into blocks; one extra token gives the last target.
    ds = ds.rebatch(sequence_length + 1, drop_remainder=True)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed)

    def split(block):
        x = {"token_ids": block[:-1], "padding_mask": tf.ones_like(block[:-1])}
        return x, block[1:]

    ds = ds.map(split, num_parallel_calls=tf.data.AUTOTUNE)
    return prefetched(ds.batch(batch_size, drop_remainder=drop_remainder))
