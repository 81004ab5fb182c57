"""Local keras-hub presets (config.json + model.weights.h5) of BertBackbone and ViTBackbone.

keras-hub builds its own model from the folder; the weight map then copies its variables,
named by their Keras paths, into ours. keras-hub keeps attention kernels per head,
(hidden, heads, head_dim) and (heads, head_dim, hidden); ours are (hidden, hidden).
"""

import os
import pathlib
import tempfile

from zoo import files
from zoo.convert.core import ArraySource, ConversionError, load_weights, read_json, reshaped, zeros
from zoo.models.bert import BertBackbone
from zoo.models.vit import ViTBackbone


def from_keras_hub(preset_dir, progress=False):
    """Build a zoo backbone from a local keras-hub preset folder.

    Supports `keras_hub.models.BertBackbone` and `keras_hub.models.ViTBackbone` presets as
    written by `save_to_preset`. keras-hub's BERT uses the tanh GELU, so the zoo model gets
    `activation="gelu_approximate"`; its ViT has no pooler, so `pooler=False`. Biases that a
    keras-hub ViT leaves out (`use_mha_bias=False`, ...) become zeros.

    Args:
        preset_dir: the preset folder (config.json, metadata.json, model.weights.h5).
        progress: show a progress bar over the tensors.

    Examples:
        >>> import os, tempfile, keras_hub, zoo.convert
        >>> hub = keras_hub.models.BertBackbone(vocabulary_size=100, num_layers=1, num_heads=2,
        ...                                     hidden_dim=16, intermediate_dim=32)
        >>> path = os.path.join(tempfile.mkdtemp(), "preset")
        >>> hub.save_to_preset(path)
        >>> type(zoo.convert.from_keras_hub(path)).__name__
        'BertBackbone'
    """
    if files.is_remote(preset_dir):  # keras-hub and h5py read a local folder
        with tempfile.TemporaryDirectory(prefix="zoo_preset.") as local:
            files.copytree(preset_dir, local)
            return from_keras_hub(local, progress=progress)
    preset_dir = pathlib.Path(preset_dir)
    config = read_json(preset_dir / "config.json")
    class_name = config.get("registered_name") or config.get("class_name")
    if class_name not in _CONVERTERS:
        raise ConversionError(f"{preset_dir / 'config.json'}: {class_name!r} is not supported; "
                              f"expected one of {sorted(_CONVERTERS)}")
    if not (preset_dir / "model.weights.h5").exists():
        raise ConversionError(f"{preset_dir / 'model.weights.h5'}: file not found")
    import keras_hub

    try:
        # A local folder whose config.json was read above: from_preset never reaches a hub.
        hub = keras_hub.models.Backbone.from_preset(str(preset_dir))
    except Exception as error:  # keras-hub raises many types for a damaged preset
        raise ConversionError(f"{preset_dir}: keras-hub cannot load this preset: "
                              f"{error}") from error
    model, ports = _CONVERTERS[class_name](hub, preset_dir / "config.json")
    # Variables, not arrays: shapes are read without copying; values are copied one at a time.
    source = ArraySource(str(preset_dir), {v.path: v for v in hub.weights})
    load_weights(model, ports, source, progress=progress)
    return model


def _port(target, source):
    """`source` (a keras-hub variable) holds `target`'s values, maybe in another shape."""
    return reshaped(target, source.path, source.shape)


def _dense(target, source):
    """A Dense/EinsumDense of keras-hub into a zoo Dense; no source bias gives zero bias."""
    bias = _port(target.bias, source.bias) if source.bias is not None else zeros(target.bias)
    return [_port(target.kernel, source.kernel), bias]


def _norm(target, source):
    return [_port(target.gamma, source.gamma), _port(target.beta, source.beta)]


def _attention(target, mha):
    return [*_dense(target.query_dense, mha.query_dense),
            *_dense(target.key_dense, mha.key_dense),
            *_dense(target.value_dense, mha.value_dense),
            *_dense(target.output_dense, mha.output_dense)]


def _bert(hub, where):
    model = BertBackbone(
        vocabulary_size=hub.vocabulary_size, num_layers=hub.num_layers, num_heads=hub.num_heads,
        hidden_dim=hub.hidden_dim, intermediate_dim=hub.intermediate_dim, dropout=hub.dropout,
        attention_dropout=hub.dropout,  # keras-hub's encoder uses one rate for both
        max_sequence_length=hub.max_sequence_length, num_segments=hub.num_segments,
        layer_norm_epsilon=1e-12,  # fixed in keras-hub's BertBackbone
        activation="gelu_approximate",
    )
    ports = [
        _port(model.token_embedding.embeddings, hub.token_embedding.embeddings),
        _port(model.segment_embedding.embeddings, hub.segment_embedding.embeddings),
        _port(model.position_embedding.embeddings, hub.position_embedding.position_embeddings),
        *_norm(model.embeddings_norm, hub.embeddings_layer_norm),
    ]
    for block, layer in zip(model.blocks, hub.transformer_layers):
        ports += [
            *_attention(block.attention, layer._self_attention_layer),
            *_norm(block.attention_norm, layer._self_attention_layer_norm),
            *_dense(block.ffn_intermediate, layer._feedforward_intermediate_dense),
            *_dense(block.ffn_output, layer._feedforward_output_dense),
            *_norm(block.ffn_norm, layer._feedforward_layer_norm),
        ]
    ports += _dense(model.pooler_dense, hub.pooled_dense)
    return model, ports


def _vit(hub, where):
    # Conv2D kernels are (kh, kw, in, out) in either data format; ours takes NHWC images.
    if hub.data_format == "channels_first":
        channels, height, width = hub.image_shape
    else:
        height, width, channels = hub.image_shape
    patch = (hub.patch_size,) * 2 if isinstance(hub.patch_size, int) else tuple(hub.patch_size)
    if height != width or patch[0] != patch[1]:
        raise ConversionError(f"{where}: image_shape={hub.image_shape}, "
                              f"patch_size={hub.patch_size}: ViTBackbone takes square ones")
    if not hub.use_class_token:
        raise ConversionError(f"{where}: use_class_token=False is not supported")
    embedding = hub.get_layer("vit_patching_and_embedding")
    encoder = hub.get_layer("vit_encoder")
    model = ViTBackbone(
        image_size=height, patch_size=patch[0],
        num_layers=hub.num_layers, num_heads=hub.num_heads, hidden_dim=hub.hidden_dim,
        intermediate_dim=hub.mlp_dim, num_channels=channels, dropout=hub.dropout_rate,
        attention_dropout=hub.attention_dropout, layer_norm_epsilon=hub.layer_norm_epsilon,
        activation="gelu", pooler=False,
    )
    patches = model.patch_embedding
    ports = [
        _port(patches.class_token, embedding.class_token),
        _port(patches.position_embedding, embedding.position_embedding.embeddings),
        *_dense(patches.projection, embedding.patch_embedding),
    ]
    for block, layer in zip(model.blocks, encoder.encoder_layers):
        ports += [
            *_norm(block.attention_norm, layer.layer_norm_1),
            *_attention(block.attention, layer.mha),
            *_norm(block.ffn_norm, layer.layer_norm_2),
            *_dense(block.ffn_intermediate, layer.mlp.dense_1),
            *_dense(block.ffn_output, layer.mlp.dense_2),
        ]
    ports += _norm(model.final_norm, encoder.layer_norm)
    return model, ports


_CONVERTERS = {"keras_hub>BertBackbone": _bert, "keras_hub>ViTBackbone": _vit}


def is_keras_hub(folder):
    """Whether a folder is a keras-hub preset (metadata.json, and a config.json that keras-hub
    registered)."""
    config = os.path.join(folder, "config.json")
    return (files.isfile(os.path.join(folder, "metadata.json")) and files.isfile(config)
            and str(read_json(config).get("registered_name", "")).startswith("keras_hub>"))

