"""The original Google BERT TensorFlow checkpoints (bert_model.ckpt + bert_config.json).

Variable names are those of google-research/bert `modeling.py` and `run_pretraining.py`:
`bert/embeddings/*`, `bert/encoder/layer_N/...`, `bert/pooler/dense/*`, `cls/predictions/*`,
`cls/seq_relationship/*`. Dense kernels are stored (in, out), the Keras layout.
"""

import os

from zoo import files
from zoo.convert.core import ConversionError, load_weights, permuted, read_json, same
from zoo.models import BertBackbone
from zoo.models.head_models import BertForPreTraining

# BertConfig defaults of google-research/bert modeling.py (vocab_size has none).
_DEFAULTS = dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, max_position_embeddings=512,
                 type_vocab_size=16)
# "gelu" is read as the exact erf form, as transformers' converter reads these configs;
# the current google-research/bert code computes the tanh approximation instead.
_ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}
_HEAD_KEYS = ("cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
              "cls/predictions/transform/LayerNorm/gamma",
              "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias",
              "cls/seq_relationship/output_weights", "cls/seq_relationship/output_bias")


def from_bert_checkpoint(ckpt_prefix, bert_config_json, with_head=False, progress=False):
    """Build a zoo BERT from an original Google BERT TensorFlow checkpoint.

    Optimizer slots (`*/adam_m`, `*/adam_v`) and `global_step`, present in checkpoints saved
    during pre-training, are skipped. `cls/*` tensors are the pre-training heads.

    Args:
        ckpt_prefix: the checkpoint prefix, e.g. `uncased_L-12_H-768_A-12/bert_model.ckpt`
            (the files are `<prefix>.index` and `<prefix>.data-*`).
        bert_config_json: the `bert_config.json` released with it.
        with_head: return a `BertForPreTraining` with the masked-LM and next-sentence
            heads found in the checkpoint instead of the bare backbone.
        progress: show a progress bar over the tensors.

    Examples:
        >>> import zoo.convert
        >>> model = zoo.convert.from_bert_checkpoint(  # doctest: +SKIP
        ...     "uncased_L-2_H-128_A-2/bert_model.ckpt", "uncased_L-2_H-128_A-2/bert_config.json")
        >>> model.hidden_dim  # doctest: +SKIP
        128
    """
    config = read_json(bert_config_json)
    if "vocab_size" not in config:
        raise ConversionError(f"{bert_config_json}: no vocab_size")
    c = {**_DEFAULTS, **config}
    if c["hidden_act"] not in _ACTIVATIONS:
        raise ConversionError(f"{bert_config_json}: hidden_act={c['hidden_act']!r} is not "
                              f"supported; expected one of {sorted(_ACTIVATIONS)}")
    source = CheckpointSource(ckpt_prefix)
    keys = set(source.keys())
    backbone = BertBackbone(
        vocabulary_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        num_heads=c["num_attention_heads"], hidden_dim=c["hidden_size"],
        intermediate_dim=c["intermediate_size"], dropout=c["hidden_dropout_prob"],
        attention_dropout=c["attention_probs_dropout_prob"],
        max_sequence_length=c["max_position_embeddings"], num_segments=c["type_vocab_size"],
        layer_norm_epsilon=1e-12,  # fixed in modeling.py's layer_norm
        activation=_ACTIVATIONS[c["hidden_act"]], pooler="bert/pooler/dense/kernel" in keys,
    )
    ports = _backbone_ports(backbone)
    model, skipped = backbone, list(_HEAD_KEYS)
    if with_head:
        masked_lm = "cls/predictions/output_bias" in keys
        next_sentence = "cls/seq_relationship/output_weights" in keys
        if not (masked_lm or next_sentence):
            raise ConversionError(f"{ckpt_prefix}: with_head=True but the checkpoint has no "
                                  "cls/predictions or cls/seq_relationship tensors")
        model = BertForPreTraining(backbone, masked_lm=masked_lm, next_sentence=next_sentence)
        ports += _head_ports(model)
        skipped = []
    named = [port.key for port in ports] + skipped
    skipped += ["global_step"] + [f"{key}/{slot}" for key in named for slot in ("adam_m", "adam_v")]
    load_weights(model, ports, source, skipped=skipped, progress=progress)
    return model


class CheckpointSource:
    """The variables of a TensorFlow checkpoint, read one at a time.

    Args:
        prefix: the checkpoint prefix (without `.index`).
    """

    def __init__(self, prefix):
        import tensorflow as tf

        self.name = str(prefix)
        if not files.exists(f"{prefix}.index"):
            raise ConversionError(f"{prefix}.index: file not found (expected a TensorFlow "
                                  "checkpoint prefix such as .../bert_model.ckpt)")
        try:
            # The reader itself, not tf.train.load_checkpoint: that one first asks whether the
            # prefix is a directory, which a filesystem listing by name prefix (ram://) answers
            # yes for `bert_model.ckpt` beside `bert_model.ckpt.index`.
            self._reader = tf.compat.v1.train.NewCheckpointReader(str(prefix))
        except (tf.errors.OpError, ValueError) as error:
            raise ConversionError(f"{prefix}: not a readable TensorFlow checkpoint "
                                  f"({error})") from error
        self._shapes = {key: tuple(shape) for key, shape in
                        self._reader.get_variable_to_shape_map().items()}

    def keys(self):
        return list(self._shapes)

    def shape(self, key):
        return self._shapes[key]

    def get(self, key):
        return self._reader.get_tensor(key)


def _dense(dense, name):
    return [same(dense.kernel, f"{name}/kernel"), same(dense.bias, f"{name}/bias")]


def _norm(norm, name):
    return [same(norm.gamma, f"{name}/gamma"), same(norm.beta, f"{name}/beta")]


def _backbone_ports(backbone):
    ports = [
        same(backbone.token_embedding.embeddings, "bert/embeddings/word_embeddings"),
        same(backbone.segment_embedding.embeddings, "bert/embeddings/token_type_embeddings"),
        same(backbone.position_embedding.embeddings, "bert/embeddings/position_embeddings"),
        *_norm(backbone.embeddings_norm, "bert/embeddings/LayerNorm"),
    ]
    for i, block in enumerate(backbone.blocks):
        layer = f"bert/encoder/layer_{i}/"
        ports += [
            *_dense(block.attention.query_dense, layer + "attention/self/query"),
            *_dense(block.attention.key_dense, layer + "attention/self/key"),
            *_dense(block.attention.value_dense, layer + "attention/self/value"),
            *_dense(block.attention.output_dense, layer + "attention/output/dense"),
            *_norm(block.attention_norm, layer + "attention/output/LayerNorm"),
            *_dense(block.ffn_intermediate, layer + "intermediate/dense"),
            *_dense(block.ffn_output, layer + "output/dense"),
            *_norm(block.ffn_norm, layer + "output/LayerNorm"),
        ]
    if backbone.pooler:
        ports += _dense(backbone.pooler_dense, "bert/pooler/dense")
    return ports


def _head_ports(model):
    ports = []
    if model.masked_lm:
        head = model.mlm_head
        ports += [*_dense(head.transform_dense, "cls/predictions/transform/dense"),
                  *_norm(head.transform_norm, "cls/predictions/transform/LayerNorm"),
                  same(head.output_bias, "cls/predictions/output_bias")]
    if model.next_sentence:
        # run_pretraining.py multiplies by output_weights transposed: stored (2, hidden).
        ports += [permuted(model.nsp_head.dense.kernel, "cls/seq_relationship/output_weights",
                           (1, 0)),
                  same(model.nsp_head.dense.bias, "cls/seq_relationship/output_bias")]
    return ports


def find(path):
    """(checkpoint prefix, bert_config.json) of an original Google BERT checkpoint: a folder
    holding bert_config.json and bert_model.ckpt.* (the first *.ckpt*.index), or a prefix
    beside bert_config.json; None when `path` is not one."""
    folder, prefix = (path, None) if files.isdir(path) else (os.path.dirname(path), path)
    config_json = os.path.join(folder, "bert_config.json")
    if prefix is None:
        index = files.glob(os.path.join(folder, "*.ckpt*.index"))
        prefix = index[0][:-len(".index")] if index else None
    if prefix and files.isfile(config_json):
        return prefix, config_json
    return None

