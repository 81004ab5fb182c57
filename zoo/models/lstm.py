"""An LSTM language model with GPT-1's interface: GPT-1 Table 5's "LSTM w/ aux LM" row.

Radford et al. 2018, section 5 ("Ablation studies"): "we compare the Transformer to a single
layer 2048 unit LSTM using the same framework", that is the same pre-training on the same
corpus, the same task input transformations and the same auxiliary LM objective. The paper
says no more of the model; what it leaves open is chosen here and documented:
- the token embedding is as wide as the LSTM and tied to the output (as GPT-1's W_e), so
  `logits(sequence_output)` is the transposed embedding and the model plugs into every GPT-1
  head (`GPTLMHeadModel`, `GPTClassifier`) unchanged;
- no position embedding (the recurrence orders the tokens); `max_sequence_length` is kept as
  the longest sequence the tasks pack and generation keeps in view, as GPT-1's 512 positions;
- dropout on the embeddings and on each layer's output, at GPT-1's rate.
The model is left to right by construction: position t reads tokens 0 .. t only.
"""

import keras
from keras import ops

from zoo.layers import RowDropout, TiedEmbedding
from zoo.layers.initializers import clone_initializer
from zoo.models.backbone import Backbone


@keras.saving.register_keras_serializable(package="zoo")
class UnmaskedLSTM(keras.layers.LSTM):
    """`keras.layers.LSTM` whose output carries no Keras mask.

    Keras would attach the padding mask to the sequence output and hand it to every head
    layer after it (warning at those that do not take one, and masking losses by it). The
    backbone's outputs carry no mask, as GPTBackbone's: the heads read `padding_mask`.
    """

    def compute_mask(self, inputs, mask=None):
        return None


@keras.saving.register_keras_serializable(package="zoo")
class LSTMBackbone(Backbone):
    """An LSTM language model returning `sequence_output` (batch, seq, hidden_dim).

    Inputs are a dict of (batch, seq) integer tensors `token_ids` and `padding_mask`, as for
    `GPTBackbone`; padded positions (right padding) do not change the real positions' outputs.

    Args:
        vocabulary_size: number of BPE tokens (40478 in GPT-1's vocabulary).
        hidden_dim: units of each LSTM layer, and the width of the tied token embedding.
        num_layers: stacked LSTM layers (1 in the paper).
        dropout: dropout on the embeddings and on each LSTM layer's output.
        max_sequence_length: the longest sequence the tasks may pack (no position table).

    Examples:
        >>> import numpy as np, zoo
        >>> model = zoo.models.create("gpt1_lstm", hidden_dim=32)
        >>> ids = np.array([[40, 250, 3]])
        >>> out = model({"token_ids": ids, "padding_mask": ids > 0})
        >>> out["sequence_output"].shape, model.logits(out["sequence_output"]).shape
        (TensorShape([1, 3, 32]), TensorShape([1, 3, 40478]))
    """

    config_keys = ("vocabulary_size", "hidden_dim", "num_layers", "dropout",
                   "max_sequence_length")

    def __init__(self, vocabulary_size, hidden_dim, num_layers=1, dropout=0.1,
                 max_sequence_length=512, dtype=None, **kwargs):
        init = keras.initializers.RandomNormal(stddev=0.02)  # GPT-1's embedding initializer

        # === Layers ===
        token_embedding = TiedEmbedding(
            vocabulary_size, hidden_dim, embeddings_initializer=clone_initializer(init),
            dtype=dtype, name="token_embedding",
        )
        embeddings_dropout = RowDropout(dropout, dtype=dtype, name="embeddings_dropout")
        layers = [UnmaskedLSTM(hidden_dim, return_sequences=True, dtype=dtype,
                               name=f"lstm_layer_{i}") for i in range(num_layers)]
        dropouts = [RowDropout(dropout, dtype=dtype, name=f"lstm_dropout_{i}")
                    for i in range(num_layers)]

        # === Functional Model ===
        token_ids = keras.Input((None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input((None,), dtype="int32", name="padding_mask")
        x = embeddings_dropout(token_embedding(token_ids))  # (batch, seq, hidden)
        mask = ops.cast(padding_mask, "bool")
        for layer, layer_dropout in zip(layers, dropouts):
            x = layer_dropout(layer(x, mask=mask))
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x}, dtype=dtype, **kwargs,
        )

        # === Config ===
        self._set_config(locals())
        self.token_embedding = token_embedding
        self.lstm_layers = layers

    def logits(self, sequence_output):
        """LM logits (batch, seq, vocabulary_size) from the tied token embedding."""
        return self.token_embedding(sequence_output, reverse=True)
