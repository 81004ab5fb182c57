"""The tokenizer layer base: input/output shapes and vocabulary look-ups shared by all."""

import keras
import tensorflow as tf


class Tokenizer(keras.layers.Layer):
    """Base class: a Keras layer mapping strings to ragged int32 ids with TF ops only.

    Subclasses implement `_tokenize(texts, with_offsets)` for a 1-D string tensor, returning
    `(ids, starts, ends)` as flat-ish pieces (see `_assemble`), and `_detokenize(ids)` for a
    2-D ragged id tensor.
    """

    def __init__(self, vocabulary, **kwargs):
        super().__init__(**kwargs)
        # Strings in, ragged out: keep Keras from converting inputs to backend tensors (the same
        # two switches keras-hub's preprocessing layers set).
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        self.vocabulary = list(vocabulary)
        self._token_to_id = {token: i for i, token in enumerate(self.vocabulary)}

    # --- Vocabulary ---

    def get_vocabulary(self):
        """All tokens, the index of each being its id."""
        return list(self.vocabulary)

    def vocabulary_size(self):
        """Number of ids (the embedding size a model needs)."""
        return len(self.vocabulary)

    def token_to_id(self, token):
        """Id of one token string; KeyError names the token if it is not in the vocabulary."""
        if token not in self._token_to_id:
            raise KeyError(f"{type(self).__name__}: token {token!r} is not in the vocabulary "
                           f"({len(self.vocabulary)} tokens)")
        return self._token_to_id[token]

    def id_to_token(self, id):
        """Token string of one id."""
        if not 0 <= int(id) < len(self.vocabulary):
            raise IndexError(f"{type(self).__name__}: id {id} is outside the vocabulary "
                             f"[0, {len(self.vocabulary)})")
        return self.vocabulary[int(id)]

    def _special_id(self, token, argument, source="vocabulary"):
        if token not in self._token_to_id:
            raise ValueError(f"{type(self).__name__}: {argument}={token!r} is not in the "
                             f"{source} ({len(self.vocabulary)} tokens)")
        return self._token_to_id[token]

    # --- Tokenization ---

    def call(self, inputs):
        return self.tokenize(inputs)

    def tokenize(self, inputs):
        """Token ids without special tokens: (batch, None) ragged int32 for a batch of strings.

        A scalar string gives a 1-D int32 tensor; a dense (batch, n) tensor gives
        (batch, n, None); a ragged string tensor gives ids nested one level deeper.
        """
        return self._apply(inputs, with_offsets=False)

    def tokenize_with_offsets(self, inputs):
        """`(ids, starts, ends)`: ids as `tokenize`, plus each token's span in the input text.

        Offsets are int64 indices of Unicode characters (code points) into the original string,
        `text[start:end]` in Python terms — the unit SQuAD answers and transformers'
        `offset_mapping` use. Characters the normalizer deletes (accents, control characters)
        at the edge of a token are outside its span.
        """
        return self._apply(inputs, with_offsets=True)

    def _apply(self, inputs, with_offsets):
        with tf.device("cpu"):
            if isinstance(inputs, (list, tuple)):
                inputs = tf.ragged.constant(inputs)  # a plain Tensor for a flat list
            elif isinstance(inputs, (str, bytes)):
                inputs = tf.constant(inputs)
            if isinstance(inputs, tf.RaggedTensor):
                outputs = self._apply(inputs.flat_values, with_offsets)
                rewrap = lambda t: inputs.with_flat_values(t)  # noqa: E731
                return tuple(map(rewrap, outputs)) if with_offsets else rewrap(outputs)
            inputs = tf.convert_to_tensor(inputs)
            if inputs.dtype != tf.string:
                raise TypeError(f"{type(self).__name__} expects strings, got dtype {inputs.dtype}")
            rank = inputs.shape.rank
            if rank is None:
                raise ValueError(f"{type(self).__name__}: input rank must be known")
            flat = tf.reshape(inputs, [-1])
            if tf.executing_eagerly():
                outputs = self._traced(with_offsets)(flat)
            else:
                outputs = self._tokenize(flat, with_offsets)
            outputs = outputs if with_offsets else (outputs,)
            if rank == 0:
                outputs = tuple(t.values for t in outputs)
            elif rank > 1:
                outputs = tuple(_unflatten(t, tf.shape(inputs, out_type=tf.int64))
                                for t in outputs)
            return outputs if with_offsets else outputs[0]

    def detokenize(self, ids):
        """Text of token ids: (batch,) strings for (batch, None) ids, a scalar for 1-D ids.

        Dense ids are used as given: drop padding and special tokens first.
        """
        with tf.device("cpu"):
            if isinstance(ids, (list, tuple)):
                ids = tf.ragged.constant(ids)
            if not isinstance(ids, tf.RaggedTensor):
                ids = tf.convert_to_tensor(ids)
                if ids.shape.rank == 1:
                    return self.detokenize(ids[tf.newaxis])[0]
                ids = tf.RaggedTensor.from_tensor(ids)
            if ids.shape.rank != 2:
                raise ValueError(f"{type(self).__name__}.detokenize expects (batch, None) ids, "
                                 f"got rank {ids.shape.rank}")
            return self._detokenize(tf.cast(ids, tf.int32))

    def _traced(self, with_offsets):
        """`_tokenize` as a tf.function for eager calls: one trace per kind, not op-by-op."""
        # A cache, not layer state: kept out of Keras/SavedModel tracking on purpose.
        cache = self.__dict__.setdefault("_traced_functions", {})
        if with_offsets not in cache:
            cache[with_offsets] = tf.function(
                lambda texts: self._tokenize(texts, with_offsets),
                input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False)  # TF ops only; see zoo_tasks.data_order.traced_encoder
        return cache[with_offsets]

    def _tokenize(self, texts, with_offsets):
        raise NotImplementedError

    def _detokenize(self, ids):
        raise NotImplementedError


def assemble(words, piece_splits, ids, piece_first, piece_last):
    """Per-text ragged ids (and character offsets) from per-word pieces.

    Args:
        words: `basic.Words` of the batch.
        piece_splits: (W + 1,) int64 row splits of pieces per word.
        ids: (P,) int32 token ids.
        piece_first, piece_last: (P,) int64 index into `words.chars` of each piece's first and
            last normalized character, or None when offsets are not wanted.
    """
    splits = tf.gather(piece_splits, words.text_splits)
    ragged = lambda values: tf.RaggedTensor.from_row_splits(values, splits, validate=False)  # noqa
    if piece_first is None:
        return ragged(ids)
    starts = tf.gather(words.sources, piece_first)
    ends = tf.gather(words.sources, piece_last) + 1
    return ragged(ids), ragged(starts), ragged(ends)


def _unflatten(ragged, shape):
    """(prod(shape), None) ragged -> (*shape, None)."""
    for size in reversed(tf.unstack(shape[1:])):
        ragged = tf.RaggedTensor.from_uniform_row_length(ragged, size)
    return ragged
