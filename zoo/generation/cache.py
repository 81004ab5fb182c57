"""`CachedLM`: a left-to-right language model's forward pass with a key/value cache.

Generation runs the model once over the prompts (the prefill), then one position a step; each
step's keys and values are kept in a buffer preallocated for the whole generation, so a step
costs one position instead of the whole prefix. keras.ops only: it runs eagerly, inside
`tf.function` / `tf.while_loop` (the export) and under `jax.jit`.
"""

import keras
from keras import ops

from zoo.layers.attention import slice_write
from zoo.models.bert import BertBackbone
from zoo.models.gpt import GPTBackbone


def strided_write(cache, new, index, axis):
    """`slice_write` with TensorFlow's own `TensorStridedSliceUpdate` (TensorFlow only).

    Why not `keras.ops.slice_update` there: on TensorFlow it is `XlaDynamicUpdateSlice`, an
    op with no TensorFlow kernel, which plain TensorFlow runs through XLA's compile-on-demand
    and the stock TF Serving model server (XLA JIT off) cannot run at all; the native op is
    also faster in a graph. Under XLA the begin must be a constant, so XLA keeps
    `slice_write`.
    """
    import tensorflow as tf  # the TensorFlow backend's own op (see above)

    rank = len(cache.shape)
    begin = tf.tensor_scatter_nd_update(tf.zeros([rank], tf.int32), [[axis]],
                                        tf.reshape(tf.cast(index, tf.int32), [1]))
    return tf.raw_ops.TensorStridedSliceUpdate(
        input=cache, begin=begin, end=begin + tf.shape(new, out_type=tf.int32),
        strides=tf.ones([rank], tf.int32), value=new)


class CachedLM:
    """The cached forward pass of a GPT-1 or causal BERT language model.

    Args:
        model: a `GPTBackbone`, a causal `BertBackbone`, or a head model around one
            (`CausalLM`, `GPTLMHeadModel`). A causal BERT needs its masked-LM head to give
            logits, so it comes as a `CausalLM`.
        xla: the forward pass is compiled by XLA (`tf.function(jit_compile=True)`); on
            TensorFlow outside XLA the cache is written with TensorFlow's native op
            (`strided_write`), so that a SavedModel holds no XLA-only op.

    Examples:
        >>> import numpy as np, zoo
        >>> from zoo.generation import CachedLM
        >>> lm = CachedLM(zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                                 vocabulary_size=50))
        >>> cache = lm.empty_cache(batch=1, length=8)
        >>> ids = np.array([[5, 6, 7]], "int32")
        >>> mask = np.arange(8)[None] < 3
        >>> logits, cache = lm.forward(ids, np.arange(3)[None], mask, cache, 0)
        >>> tuple(logits.shape), len(cache)
        ((1, 3, 50), 2)
    """

    def __init__(self, model, xla=False):
        backbone = getattr(model, "backbone", model)
        if not isinstance(backbone, (GPTBackbone, BertBackbone)):
            raise ValueError(f"{model.name}: generation needs a GPT-1 or causal BERT language "
                             f"model, not a {type(backbone).__name__}")
        if isinstance(backbone, BertBackbone):
            if not backbone.causal:
                raise ValueError(f"{model.name}: a bidirectional BERT cannot generate left to "
                                 "right; use a causal encoder (BertBackbone(causal=True))")
            head = getattr(model, "mlm_head", None)
            if head is None:
                raise ValueError(f"{model.name}: a causal BERT generates through its masked-LM "
                                 "head; pass the CausalLM, not the backbone")
        else:
            head = backbone.logits
        self.model = model
        tensorflow = keras.backend.backend() == "tensorflow"
        self._write = strided_write if tensorflow and not xla else slice_write
        self.backbone = backbone
        self._head = head
        self.num_layers = len(backbone.blocks)
        self.num_heads = backbone.num_heads
        self.head_dim = backbone.hidden_dim // backbone.num_heads
        self.max_positions = int(backbone.max_sequence_length)
        self.vocabulary_size = int(backbone.vocabulary_size)
        self.dtype = keras.dtype_policies.get(backbone.dtype_policy).compute_dtype

    @property
    def variables(self):
        """The variables `forward` reads (for stateless calls under jax.jit)."""
        return self.model.variables

    def empty_cache(self, batch, length):
        """Zeroed keys and values for `length` slots: a tuple of 2 * num_layers tensors.

        Keys are (batch, heads, head_dim, length), stored transposed for the attention
        logits; values (batch, heads, length, head_dim).
        """
        h, d = self.num_heads, self.head_dim
        cache = []
        for _ in range(self.num_layers):
            cache += [ops.zeros((batch, h, d, length), self.dtype),
                      ops.zeros((batch, h, length, d), self.dtype)]
        return tuple(cache)

    def forward(self, token_ids, positions, key_mask, cache, index, last_only=False):
        """Logits of new tokens, and the cache with their keys and values written in.

        Args:
            token_ids: (batch, seq) int, the new tokens, written to slots [index, index + seq).
            positions: (batch, seq) int, their absolute positions (per row: left padding in
                the buffer does not count).
            key_mask: (batch, length) bool, the slots that hold real tokens once these are in.
            cache: `empty_cache`'s tuple, or the one a previous call returned.
            index: scalar int, the first slot written.
            last_only: return the logits of the last new position only, (batch, 1, vocab).

        Returns:
            (logits (batch, seq or 1, vocabulary) float32, updated cache)
        """
        token_ids = ops.cast(token_ids, "int32")
        sequence, cache = self.backbone.call_with_cache(
            token_ids, positions, key_mask, cache, index, self._write)
        if last_only:
            sequence = sequence[:, -1:, :]
        return ops.cast(self._head(sequence), "float32"), cache

    def reorder(self, cache, indices):
        """The cache with its batch rows taken in `indices` order (beam search)."""
        return tuple(ops.take(part, indices, axis=0) for part in cache)
