"""BERT: a bidirectional Transformer encoder.

Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding" (arXiv:1810.04805). Section 3: input = token + segment + position embeddings;
post-LayerNorm Transformer encoder; the [CLS] vector through a tanh dense layer is the pooled
output used for classification. Feed-forward width is 4H (section 3, footnote on model size).
"""

import keras
from keras import ops

from zoo.layers import (
    AttentionMask,
    LastTokenPooling,
    PositionEmbedding,
    RowDropout,
    TransformerBlock,
)
from zoo.layers.initializers import clone_initializer
from zoo.models.backbone import Backbone


@keras.saving.register_keras_serializable(package="zoo")
class BertBackbone(Backbone):
    """BERT encoder returning `sequence_output`, `pooled_output` (and optionally `hidden_states`).

    Inputs are a dict of (batch, seq) integer tensors `token_ids`, `segment_ids` and
    `padding_mask` (1 for real tokens, 0 for padding).

    Args:
        vocabulary_size: number of WordPiece tokens.
        num_layers: Transformer blocks (L in the paper).
        num_heads: attention heads (A).
        hidden_dim: hidden size (H).
        intermediate_dim: feed-forward width; defaults to 4 * hidden_dim as in the paper.
        dropout: dropout on embeddings and residual branches.
        attention_dropout: dropout on attention probabilities.
        max_sequence_length: number of learned positions.
        num_segments: number of segment (token type) ids.
        layer_norm_epsilon: LayerNorm epsilon (1e-12 in the original code).
        activation: feed-forward activation ("gelu" = exact erf form).
        return_hidden_states: also return `hidden_states`, (batch, num_layers + 1, seq, hidden):
            the embedding output then every layer's output (feature-based use, Table 7).
        pooler: add the tanh dense layer on [CLS]. Checkpoints trained without next-sentence
            prediction have none (transformers' BertForMaskedLM); without it `pooled_output` is
            the [CLS] vector itself, as in `ViTBackbone`.
        causal: attend only to earlier positions (a left-to-right encoder): the "LTR & No NSP"
            ablation of BERT Table 5, trained as a left-to-right language model. Its
            `pooled_output` reads the last real token (the final [SEP]) instead of [CLS], which
            under the causal mask sees only itself: the only position that sees the whole
            input, as GPT-1's classifier reads its last token (BERT does not say which it read).

    Examples:
        >>> import numpy as np, zoo
        >>> model = zoo.models.create("bert_tiny")
        >>> ids = np.array([[101, 7592, 102, 0]])
        >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0})
        >>> out["sequence_output"].shape, out["pooled_output"].shape
        (TensorShape([1, 4, 128]), TensorShape([1, 128]))
    """

    config_keys = (
        "vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
        "attention_dropout", "max_sequence_length", "num_segments", "layer_norm_epsilon",
        "activation", "return_hidden_states", "pooler", "causal",
    )

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim=None,
                 dropout=0.1, attention_dropout=0.1, max_sequence_length=512, num_segments=2,
                 layer_norm_epsilon=1e-12, activation="gelu", return_hidden_states=False,
                 pooler=True, causal=False, dtype=None, **kwargs):
        intermediate_dim = intermediate_dim or 4 * hidden_dim
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        # === Layers ===
        token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=clone_initializer(init),
            dtype=dtype, name="token_embedding",
        )
        segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=clone_initializer(init), dtype=dtype,
            name="segment_embedding",
        )
        position_embedding = PositionEmbedding(
            max_sequence_length, initializer=init, dtype=dtype, name="position_embedding"
        )
        embeddings_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_norm"
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
        pooler_dense = keras.layers.Dense(
            hidden_dim, activation="tanh", kernel_initializer=clone_initializer(init),
            dtype=dtype, name="pooler",
        ) if pooler else None

        # === Functional Model ===
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input((None,), dtype="int32", name="segment_ids")
        padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
        tokens = token_embedding(token_ids)  # (batch, seq, hidden)
        x = tokens + segment_embedding(segment_ids) + position_embedding(tokens)
        x = embeddings_dropout(embeddings_norm(x))
        mask = AttentionMask(causal=causal, name="attention_mask")(padding_mask)  # (b, 1, 1|s, s)
        hidden_states = [x]
        for block in blocks:
            x = block(x, attention_mask=mask)
            hidden_states.append(x)
        if causal:  # [CLS] sees only itself; the whole input reaches the last real token
            cls = LastTokenPooling(name="last_token")(x, padding_mask)  # as GPT-1 reads it
        else:
            cls = x[:, 0, :]  # (batch, hidden)
        outputs = {"sequence_output": x, "pooled_output": pooler_dense(cls) if pooler else cls}
        if return_hidden_states:
            outputs["hidden_states"] = ops.stack(hidden_states, axis=1)
        super().__init__(
            inputs={"token_ids": token_ids, "segment_ids": segment_ids,
                    "padding_mask": padding_mask},
            outputs=outputs, dtype=dtype, **kwargs,
        )

        # === Config ===
        self._set_config(locals())
        self.token_embedding = token_embedding
        self.segment_embedding = segment_embedding
        self.position_embedding = position_embedding
        self.embeddings_norm = embeddings_norm
        self.blocks = blocks
        self.pooler_dense = pooler_dense

    def call_with_cache(self, token_ids, positions, key_mask, cache, index, write=None):
        """The causal encoder on new tokens with a key/value cache (generation; no dropout).

        As `GPTBackbone.call_with_cache`; segment 0 for every token. Only for `causal=True`:
        a bidirectional encoder's earlier positions change with every new token.
        """
        if not self.causal:
            raise ValueError(f"{self.name}: generation with a cache needs a causal encoder "
                             "(BertBackbone(causal=True))")
        tokens = self.token_embedding(token_ids)
        segments = self.segment_embedding(ops.zeros_like(token_ids))
        x = self.embeddings_norm(tokens + segments + self._positions(positions, tokens.dtype))
        return self._blocks_with_cache(x, key_mask, cache, index, write)
