"""Embedding layers: learned positions, patches with a class token, tied input/output tokens."""

import keras
from keras import ops

from zoo.layers.initializers import clone_initializer


@keras.saving.register_keras_serializable(package="zoo")
class PositionEmbedding(keras.layers.Layer):
    """Learned absolute position embeddings (BERT section 3, GPT-1 section 4.1).

    Returns the first `seq` rows of a (max_length, hidden) table, broadcast to the input's
    (batch, seq, hidden) shape.

    Args:
        max_length: number of positions in the table.
        initializer: initializer of the table.
    """

    def __init__(self, max_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.max_length, input_shape[-1]),
            initializer=clone_initializer(self.initializer),
        )

    def call(self, x):
        shape = ops.shape(x)
        table = ops.cast(self.embeddings, x.dtype)[: shape[1]]  # (seq, hidden)
        return ops.broadcast_to(table[None], shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            max_length=self.max_length,
            initializer=keras.initializers.serialize(self.initializer),
        )
        return config


@keras.saving.register_keras_serializable(package="zoo")
class TiedEmbedding(keras.layers.Embedding):
    """Token embedding whose transpose is also the LM output projection.

    `layer(ids)` embeds; `layer(hidden, reverse=True)` returns logits over the vocabulary with
    the same matrix (Press & Wolf 2017; GPT-1 and BERT's MLM decoder share it this way).
    """

    def call(self, inputs, reverse=False):
        if reverse:
            kernel = ops.cast(self.embeddings, self.compute_dtype)
            return ops.matmul(inputs, ops.transpose(kernel))  # (..., vocab)
        return super().call(inputs)

    def compute_output_shape(self, input_shape, reverse=False):
        if reverse:
            return tuple(input_shape[:-1]) + (self.input_dim,)
        return super().compute_output_shape(input_shape)

    def compute_output_spec(self, inputs, reverse=False):
        shape = self.compute_output_shape(inputs.shape, reverse=reverse)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)


@keras.saving.register_keras_serializable(package="zoo")
class PatchEmbedding(keras.layers.Layer):
    """ViT input: non-overlapping patches, linear projection, class token, learned positions.

    A stride-`patch_size` convolution is the linear projection of flattened patches (ViT
    section 3.1, eq. 1); a learned [class] token is prepended and a learned position
    embedding of (1 + num_patches, hidden) is added.

    Args:
        image_size: side of the square input image in pixels.
        patch_size: side of a square patch in pixels; must divide `image_size`.
        hidden_dim: width of the patch embedding.
        kernel_initializer: initializer of the projection kernel.
    """

    def __init__(self, image_size, patch_size, hidden_dim,
                 kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if image_size % patch_size:
            raise ValueError(f"image_size={image_size} is not a multiple of "
                             f"patch_size={patch_size}")
        self.image_size = image_size
        self.patch_size = patch_size
        self.hidden_dim = hidden_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.num_patches = (image_size // patch_size) ** 2

    def build(self, input_shape):
        self.projection = keras.layers.Conv2D(
            self.hidden_dim,
            self.patch_size,
            strides=self.patch_size,
            padding="valid",
            kernel_initializer=clone_initializer(self.kernel_initializer),
            dtype=self.dtype_policy,
            name="projection",
        )
        self.projection.build(input_shape)
        self.class_token = self.add_weight(
            name="class_token", shape=(1, 1, self.hidden_dim), initializer="zeros"
        )
        self.position_embedding = self.add_weight(
            name="position_embedding",
            shape=(1, self.num_patches + 1, self.hidden_dim),
            initializer=keras.initializers.RandomNormal(stddev=0.02),
        )

    def call(self, images):
        patches = self.projection(images)  # (b, h/p, w/p, hidden)
        batch = ops.shape(patches)[0]
        patches = ops.reshape(patches, (batch, self.num_patches, self.hidden_dim))
        cls = ops.broadcast_to(ops.cast(self.class_token, patches.dtype),
                               (batch, 1, self.hidden_dim))
        tokens = ops.concatenate([cls, patches], axis=1)  # (b, 1 + patches, hidden)
        return tokens + ops.cast(self.position_embedding, patches.dtype)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_patches + 1, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            image_size=self.image_size,
            patch_size=self.patch_size,
            hidden_dim=self.hidden_dim,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
