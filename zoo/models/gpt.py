"""GPT-1: a Transformer decoder language model.

Radford et al. 2018, "Improving Language Understanding by Generative Pre-Training".
Section 4.1 (model specifications): 12-layer decoder-only Transformer with masked (causal)
self-attention, 768 hidden, 12 heads, 3072 feed-forward, learned position embeddings
(512 positions), GELU in its tanh form (`gelu` in OpenAI's finetune-transformer-lm code and
`gelu_new` behind transformers' `afn="gelu"`), post-LayerNorm blocks as in the original
Transformer, and no final LayerNorm. The LM head is the transposed token embedding
(`TiedEmbedding`).
"""

import keras

from zoo.layers import AttentionMask, PositionEmbedding, RowDropout, TiedEmbedding, TransformerBlock
from zoo.layers.initializers import clone_initializer
from zoo.models.backbone import Backbone


@keras.saving.register_keras_serializable(package="zoo")
class GPTBackbone(Backbone):
    """GPT-1 decoder returning `sequence_output` (batch, seq, hidden).

    Inputs are a dict of (batch, seq) integer tensors `token_ids` and `padding_mask`. Attention
    is causal: position t sees positions <= t. `logits(sequence_output)` applies the tied LM head.

    Args:
        vocabulary_size: number of BPE tokens (40478 in the released model).
        num_layers: decoder blocks.
        num_heads: attention heads.
        hidden_dim: hidden size.
        intermediate_dim: feed-forward width; defaults to 4 * hidden_dim.
        dropout: dropout on embeddings and residual branches (0.1 in the paper).
        attention_dropout: dropout on attention probabilities (0.1 in the paper).
        max_sequence_length: number of learned positions.
        layer_norm_epsilon: LayerNorm epsilon (1e-5 in the original code).
        activation: "gelu_approximate" (the tanh form of OpenAI's code and of transformers'
            OpenAIGPTModel) or "gelu" (the exact erf form).

    Examples:
        >>> import numpy as np, zoo
        >>> model = zoo.models.create("gpt1", num_layers=2, hidden_dim=64, num_heads=2)
        >>> ids = np.array([[40, 250, 3]])
        >>> out = model({"token_ids": ids, "padding_mask": ids > 0})
        >>> model.logits(out["sequence_output"]).shape
        TensorShape([1, 3, 40478])
    """

    config_keys = (
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
        "attention_dropout", "max_sequence_length", "layer_norm_epsilon", "activation",
    )

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim=None,
                 dropout=0.1, attention_dropout=0.1, max_sequence_length=512,
                 layer_norm_epsilon=1e-5, activation="gelu_approximate", dtype=None, **kwargs):
        intermediate_dim = intermediate_dim or 4 * hidden_dim
        init = keras.initializers.RandomNormal(stddev=0.02)  # section 4.1: N(0, 0.02)

        # === Layers ===
        token_embedding = TiedEmbedding(
            vocabulary_size, hidden_dim, embeddings_initializer=clone_initializer(init),
            dtype=dtype, name="token_embedding",
        )
        position_embedding = PositionEmbedding(
            max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        embeddings_dropout = RowDropout(dropout, dtype=dtype, name="embeddings_dropout")
        blocks = [
            TransformerBlock(
                num_heads, intermediate_dim, activation=activation, dropout=dropout,
                attention_dropout=attention_dropout, layer_norm_epsilon=layer_norm_epsilon,
                normalize_first=False, kernel_initializer=init, dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]

        # === Functional Model ===
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
        tokens = token_embedding(token_ids)  # (batch, seq, hidden)
        x = embeddings_dropout(tokens + position_embedding(tokens))
        mask = AttentionMask(causal=True, name="attention_mask")(padding_mask)  # (b, 1, s, s)
        for block in blocks:
            x = block(x, attention_mask=mask)
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x}, dtype=dtype, **kwargs,
        )

        # === Config ===
        self._set_config(locals())
        self.token_embedding = token_embedding
        self.position_embedding = position_embedding
        self.blocks = blocks

    def call_with_cache(self, token_ids, positions, key_mask, cache, index, write=None):
        """The decoder on new tokens with a key/value cache (generation; no dropout).

        token_ids, positions: (batch, seq) new tokens and their absolute positions, written
        to cache slots [index, index + seq); key_mask: (batch, length) which slots hold real
        tokens; cache: `zoo.generation.CachedLM.empty_cache`'s tuple; write: how the cache is
        written (`MultiHeadSelfAttention.call_cached`). Returns (sequence_output, cache).
        """
        tokens = self.token_embedding(token_ids)
        x = tokens + self._positions(positions, tokens.dtype)
        return self._blocks_with_cache(x, key_mask, cache, index, write)

    def logits(self, sequence_output):
        """LM logits (batch, seq, vocabulary_size) from the tied token embedding."""
        return self.token_embedding(sequence_output, reverse=True)
