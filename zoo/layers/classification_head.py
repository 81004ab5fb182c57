"""A dense classification head with dropout before it: BERT's next-sentence and
classification heads, ViT's classifier."""

import keras

from zoo.layers.dropout import Dropout
from zoo.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="zoo")
class ClassificationHead(keras.layers.Layer):
    """Dropout then a dense layer to `num_classes` logits, on a pooled (batch, hidden) vector.

    BERT's next-sentence head (`cls/seq_relationship`, 2 classes) and ViT's classifier
    (section 3.1: a single linear layer at fine-tuning time) are both this layer.

    Args:
        num_classes: number of output logits.
        dropout: dropout rate on the input (training only).
        kernel_initializer: initializer of the dense kernel.
    """

    def __init__(self, num_classes, dropout=0.0, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        # Per position on (batch, seq, hidden) inputs too (token tagging after a masked
        # BiLSTM): the padding mask passes through unchanged.
        self.supports_masking = True
        self.num_classes = num_classes
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        self.dropout_layer = Dropout(self.dropout, dtype=self.dtype_policy)
        self.dense = keras.layers.Dense(
            self.num_classes, kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy, name="dense",
        )
        self.dense.build(input_shape)

    def call(self, x, training=None):  # x: (batch, hidden)
        return self.dense(self.dropout_layer(x, training=training))  # (batch, num_classes)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.num_classes,)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_classes=self.num_classes,
            dropout=self.dropout,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
