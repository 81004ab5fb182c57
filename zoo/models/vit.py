"""ViT: the Vision Transformer.

Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words: Transformers for Image Recognition at
Scale" (arXiv:2010.11929). Section 3.1: split the image into fixed-size patches, embed each
linearly, prepend a learned [class] token, add learned 1-D position embeddings, run a
pre-LayerNorm Transformer encoder and read the class token after a final LayerNorm (eq. 4).
Table 1 gives the Base/Large/Huge sizes; Tiny and Small are from DeiT (Touvron et al. 2021).
"""

import keras
import numpy as np

from zoo.layers import PatchEmbedding, RowDropout, TransformerBlock
from zoo.layers.initializers import clone_initializer
from zoo.models.backbone import Backbone


@keras.saving.register_keras_serializable(package="zoo")
class ViTBackbone(Backbone):
    """ViT encoder returning `sequence_output` and `pooled_output`.

    Input `images` is (batch, image_size, image_size, num_channels) float, already normalised.
    `pooled_output` is the class token after the final LayerNorm; with `pooler=True` it goes
    through a further tanh dense layer (the "pre-logits" layer of pre-training, kept by
    transformers' ViTModel as its pooler).

    Args:
        image_size: input side in pixels.
        patch_size: patch side in pixels.
        num_layers: Transformer blocks.
        num_heads: attention heads.
        hidden_dim: hidden size (D in the paper).
        intermediate_dim: MLP width; defaults to 4 * hidden_dim.
        num_channels: image channels.
        dropout: dropout after embeddings and residual branches.
        attention_dropout: dropout on attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon (1e-6 in the original code).
        activation: MLP activation ("gelu" = exact erf form).
        pooler: add the tanh dense pre-logits layer on the class token.

    Examples:
        >>> import numpy as np, zoo
        >>> model = zoo.models.create("vit_tiny16", image_size=32)
        >>> out = model({"images": np.zeros((1, 32, 32, 3), "float32")})
        >>> out["sequence_output"].shape
        TensorShape([1, 5, 192])
    """

    config_keys = (
        "image_size", "patch_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
        "num_channels", "dropout", "attention_dropout", "layer_norm_epsilon", "activation",
        "pooler",
    )

    def __init__(self, image_size, patch_size, num_layers, num_heads, hidden_dim,
                 intermediate_dim=None, num_channels=3, dropout=0.0, attention_dropout=0.0,
                 layer_norm_epsilon=1e-6, activation="gelu", pooler=True, dtype=None, **kwargs):
        intermediate_dim = intermediate_dim or 4 * hidden_dim
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        # === Layers ===
        patch_embedding = PatchEmbedding(
            image_size, patch_size, hidden_dim, kernel_initializer=init, dtype=dtype,
            name="patch_embedding",
        )
        embeddings_dropout = RowDropout(dropout, dtype=dtype, name="embeddings_dropout")
        blocks = [
            TransformerBlock(
                num_heads, intermediate_dim, activation=activation, dropout=dropout,
                attention_dropout=attention_dropout, layer_norm_epsilon=layer_norm_epsilon,
                normalize_first=True, kernel_initializer=init, dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]
        final_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="final_norm"
        )
        pooler_dense = keras.layers.Dense(
            hidden_dim, activation="tanh", kernel_initializer=clone_initializer(init),
            dtype=dtype, name="pooler",
        ) if pooler else None

        # === Functional Model ===
        images = keras.Input((image_size, image_size, num_channels), name="images")
        x = embeddings_dropout(patch_embedding(images))  # (batch, 1 + patches, hidden)
        for block in blocks:
            x = block(x)
        x = final_norm(x)
        cls = x[:, 0, :]  # (batch, hidden)
        outputs = {
            "sequence_output": x,
            "pooled_output": pooler_dense(cls) if pooler else cls,
        }
        super().__init__(inputs={"images": images}, outputs=outputs, dtype=dtype, **kwargs)

        # === Config ===
        self._set_config(locals())
        self.patch_embedding = patch_embedding
        self.blocks = blocks
        self.final_norm = final_norm
        self.pooler_dense = pooler_dense

    def with_image_size(self, image_size):
        """A copy of this model for another input resolution, position embeddings resized.

        As in ViT section 3.2 ("Fine-tuning and higher resolution"), the pre-trained position
        embeddings of the patch grid are interpolated in 2-D to the new grid; the class-token
        position is kept as is. The method is bicubic resizing of the (grid, grid, hidden)
        table with half-pixel centres (`keras.ops.image.resize`, TF-compatible bicubic,
        a = -0.5, no antialiasing). All other weights are copied unchanged.
        """
        config = self.get_config()
        config.update(image_size=image_size)
        config.pop("name")
        new = type(self).from_config(config)
        for source, target in zip(self.weights, new.weights):
            value = keras.ops.convert_to_numpy(source)
            if source.path.endswith("patch_embedding/position_embedding"):
                value = resize_position_embeddings(value, new.patch_embedding.num_patches)
            target.assign(value)
        return new


def resize_position_embeddings(table, num_patches):
    """Resize a (1, 1 + n, hidden) ViT position table to (1, 1 + num_patches, hidden)."""
    old_grid, new_grid = int(round((table.shape[1] - 1) ** 0.5)), int(round(num_patches ** 0.5))
    if old_grid ** 2 != table.shape[1] - 1 or new_grid ** 2 != num_patches:
        raise ValueError(
            f"position table of {table.shape[1] - 1} patches or target of {num_patches} "
            "patches is not a square grid"
        )
    if old_grid == new_grid:
        return table
    grid = table[0, 1:].reshape(1, old_grid, old_grid, -1)
    grid = keras.ops.image.resize(grid, (new_grid, new_grid), interpolation="bicubic",
                                  data_format="channels_last")
    grid = keras.ops.convert_to_numpy(grid).reshape(1, num_patches, -1)
    return np.concatenate([table[:, :1], grid.astype(table.dtype)], axis=1)
