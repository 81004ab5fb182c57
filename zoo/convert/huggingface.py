"""Hugging Face checkpoints (config.json + safetensors) <-> zoo models, for BERT, GPT-1 and ViT.

Each family has one explicit weight map per direction-independent naming (`bert_ports`, ...)
used both to read and to write, and a config translation each way (`WRITERS`; the folder
itself, fine-tuned heads, labels and tokenizer are written by `zoo.convert.hf_export`).
transformers itself is never imported: config.json is read as JSON and tensors through
`safetensors.numpy`.
"""

import contextlib
import os
import pathlib
import tempfile
import warnings

from zoo import files, hub
from zoo.convert.core import (
    ConversionError,
    SafetensorsSource,
    dense_ports,
    layer_norm_ports,
    load_weights,
    permuted,
    read_json,
    same,
    split,
)
from zoo.models.bert import BertBackbone
from zoo.models.gpt import GPTBackbone
from zoo.models.head_models import BertForPreTraining, CausalLM, GPTLMHeadModel, ViTClassifier
from zoo.models.vit import ViTBackbone

# transformers' ACT2FN names used by BERT and ViT configs -> zoo activation names.
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_approximate",
                "gelu_pytorch_tanh": "gelu_approximate", "relu": "relu"}
_ACTIVATIONS_BACK = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu"}
# OpenAIGPT has its own table (ACT_FNS in modeling_openai.py): its "gelu" is the tanh form.
_GPT_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}
_GPT_ACTIVATIONS_BACK = {"gelu_approximate": "gelu", "relu": "relu"}

# Defaults of transformers' config classes, for config.json files that leave keys out.
_BERT_DEFAULTS = dict(
    vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
    intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
    layer_norm_eps=1e-12, tie_word_embeddings=True, is_decoder=False,
    add_cross_attention=False, position_embedding_type="absolute",
)
_GPT_DEFAULTS = dict(
    vocab_size=40478, n_positions=512, n_embd=768, n_layer=12, n_head=12, afn="gelu",
    resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1, layer_norm_epsilon=1e-5,
    tie_word_embeddings=True,
)
_VIT_DEFAULTS = dict(
    hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
    hidden_act="gelu", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    layer_norm_eps=1e-12, image_size=224, patch_size=16, num_channels=3, qkv_bias=True,
    pooler_output_size=None, pooler_act="tanh",
)

_BIN_ONLY = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5",
             "flax_model.msgpack")


def from_huggingface(path, with_head=False, progress=False):
    """Build a zoo model from a Hugging Face checkpoint folder (config.json + safetensors).

    Reads model_type `bert`, `openai-gpt` and `vit`. Heads are recognised by their tensors:
    BERT `cls.predictions.*` (masked LM) and `cls.seq_relationship.*` (next sentence), ViT
    `classifier.*`; GPT-1's LM head is the tied token embedding and needs no tensor. A BERT
    or ViT checkpoint without `pooler.*` gives a backbone with `pooler=False`. Without
    `with_head`, head tensors are skipped; any other unknown tensor is an error.

    Args:
        path: the folder written by `save_pretrained` (model.safetensors, or shards with
            model.safetensors.index.json). pytorch_model.bin is refused, never unpickled. Or a
            name: `hf://ORG/NAME[@REVISION]` or a pretrained preset, downloaded by `zoo.hub`.
        with_head: return the backbone with its task head (`BertForPreTraining`,
            `GPTLMHeadModel` or `ViTClassifier`) instead of the bare backbone.
        progress: show a progress bar over the tensors.

    Examples:
        >>> import os, tempfile, zoo.convert
        >>> path = os.path.join(tempfile.mkdtemp(), "bert")
        >>> zoo.convert.to_huggingface(zoo.models.create("bert_tiny", num_layers=1), path)
        >>> zoo.convert.from_huggingface(path).num_layers
        1
    """
    path = local_folder(path, progress)
    config_path = os.path.join(path, "config.json")
    config = read_json(config_path)
    reader = _reader(config, config_path)
    with local_copies(safetensors_files(path)) as local:
        source = SafetensorsSource(local, name=path)
        model, ports, skipped, duplicates = reader(config, set(source.keys()), with_head,
                                                   config_path)
        load_weights(model, ports, source, skipped=skipped, duplicates=duplicates,
                     progress=progress)
    return model


def local_folder(path, progress=False):
    """The folder of `path`: a name (`hf://...`, a pretrained preset) resolved by `zoo.hub`."""
    return _folder(hub.resolve(path, progress=progress) if hub.is_hub(path) else path)


def _folder(path):
    """A folder path as a string: normalised as pathlib does locally, as given remotely."""
    path = os.fspath(path)
    return path.rstrip("/") if files.is_remote(path) else str(pathlib.Path(path))


@contextlib.contextmanager
def local_copies(paths):
    """The files themselves if local; remote ones copied to a temporary folder for the
    block (safetensors reads local files only)."""
    if not any(files.is_remote(p) for p in paths):
        yield paths
        return
    with tempfile.TemporaryDirectory(prefix="zoo_hf.") as local:
        copies = []
        for path in paths:
            copies.append(os.path.join(local, os.path.basename(path)))
            files.copy(path, copies[-1])
        yield copies


def _reader(config, where):
    model_type = config.get("model_type")
    if model_type not in _READERS:
        raise ConversionError(f"{where}: model_type {model_type!r} is not supported; "
                              f"expected one of {sorted(_READERS)}")
    return _READERS[model_type]


def safetensors_files(path):
    if not files.isdir(path):
        raise ConversionError(f"{path}: not a folder")
    single = os.path.join(path, "model.safetensors")
    index = os.path.join(path, "model.safetensors.index.json")
    if files.exists(single):
        return [single]
    if files.exists(index):
        shards = sorted(set(read_json(index).get("weight_map", {}).values()))
        absent = [name for name in shards if not files.exists(os.path.join(path, name))]
        if absent or not shards:
            raise ConversionError(f"{index}: shard file(s) missing: {', '.join(absent) or '-'}")
        return [os.path.join(path, name) for name in shards]
    others = [name for name in _BIN_ONLY if files.exists(os.path.join(path, name))]
    if others:
        raise ConversionError(
            f"{os.path.join(path, others[0])}: only {', '.join(others)} found and zoo reads "
            "safetensors only (a pickle can run code when loaded). Convert it once where you "
            "trust the file, with transformers installed:\n"
            "  python -c \"import sys, transformers as t; p, q = sys.argv[1:]; "
            "c = t.AutoConfig.from_pretrained(p); "
            "getattr(t, c.architectures[0]).from_pretrained(p).save_pretrained(q)\" "
            f"{path} {path}-safetensors"
        )
    raise ConversionError(f"{path}: no model.safetensors or model.safetensors.index.json")


def _require(config, where, **expected):
    for key, value in expected.items():
        if config[key] != value:
            raise ConversionError(f"{where}: {key}={config[key]!r} is not supported "
                                  f"(only {value!r})")


def _lookup(table, key, value, where):
    if value not in table:
        raise ConversionError(f"{where}: {key}={value!r} is not supported; "
                              f"expected one of {sorted(table)}")
    return table[value]


def _square(value, key, where):
    if isinstance(value, (list, tuple)):
        if len(set(value)) != 1:
            raise ConversionError(f"{where}: {key}={value} is not square; ViTBackbone "
                                  "takes square images and patches")
        value = value[0]
    return value


# === BERT ===

def bert_ports(backbone, prefix):
    e = f"{prefix}embeddings."
    ports = [
        same(backbone.token_embedding.embeddings, e + "word_embeddings.weight"),
        same(backbone.position_embedding.embeddings, e + "position_embeddings.weight"),
        same(backbone.segment_embedding.embeddings, e + "token_type_embeddings.weight"),
        *layer_norm_ports(backbone.embeddings_norm, e + "LayerNorm"),
    ]
    for i, block in enumerate(backbone.blocks):
        layer = f"{prefix}encoder.layer.{i}."
        ports += [
            *dense_ports(block.attention.query_dense, layer + "attention.self.query"),
            *dense_ports(block.attention.key_dense, layer + "attention.self.key"),
            *dense_ports(block.attention.value_dense, layer + "attention.self.value"),
            *dense_ports(block.attention.output_dense, layer + "attention.output.dense"),
            *layer_norm_ports(block.attention_norm, layer + "attention.output.LayerNorm"),
            *dense_ports(block.ffn_intermediate, layer + "intermediate.dense"),
            *dense_ports(block.ffn_output, layer + "output.dense"),
            *layer_norm_ports(block.ffn_norm, layer + "output.LayerNorm"),
        ]
    if backbone.pooler:
        ports += dense_ports(backbone.pooler_dense, f"{prefix}pooler.dense")
    return ports


def bert_head_ports(model):
    ports = []
    if model.masked_lm:
        head = model.mlm_head
        ports += [*dense_ports(head.transform_dense, "cls.predictions.transform.dense"),
                  *layer_norm_ports(head.transform_norm, "cls.predictions.transform.LayerNorm"),
                  same(head.output_bias, "cls.predictions.bias")]
    if model.next_sentence:
        ports += dense_ports(model.nsp_head.dense, "cls.seq_relationship")
    return ports


# Head tensors of BertForPreTraining / BertForMaskedLM / BertForNextSentencePrediction, and of
# the fine-tuned heads: a backbone read without its head skips them.
_BERT_HEAD_KEYS = tuple(
    f"cls.{name}" for name in (
        "predictions.bias", "predictions.transform.dense.weight",
        "predictions.transform.dense.bias", "predictions.transform.LayerNorm.weight",
        "predictions.transform.LayerNorm.bias", "predictions.transform.LayerNorm.gamma",
        "predictions.transform.LayerNorm.beta", "predictions.decoder.weight",
        "predictions.decoder.bias", "seq_relationship.weight", "seq_relationship.bias",
    )
) + tuple(f"{head}.{name}" for head in ("classifier", "qa_outputs") for name in ("weight", "bias"))
# (the last: the fine-tuned heads of BertForSequenceClassification, ...ForTokenClassification,
# ...ForMultipleChoice and ...ForQuestionAnswering, read by zoo.convert.hf_heads)


def _bert_from_hf(config, keys, with_head, where):
    c = {**_BERT_DEFAULTS, **config}
    _require(c, where, is_decoder=False, add_cross_attention=False,
             position_embedding_type="absolute")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in keys else ""
    backbone = BertBackbone(
        vocabulary_size=c["vocab_size"], num_layers=c["num_hidden_layers"],
        num_heads=c["num_attention_heads"], hidden_dim=c["hidden_size"],
        intermediate_dim=c["intermediate_size"], dropout=c["hidden_dropout_prob"],
        attention_dropout=c["attention_probs_dropout_prob"],
        max_sequence_length=c["max_position_embeddings"], num_segments=c["type_vocab_size"],
        layer_norm_epsilon=c["layer_norm_eps"],
        activation=_lookup(_ACTIVATIONS, "hidden_act", c["hidden_act"], where),
        pooler=f"{prefix}pooler.dense.weight" in keys,
    )
    ports = bert_ports(backbone, prefix)
    # Checkpoints written before transformers 4.31 also hold this buffer.
    skipped = [f"{prefix}embeddings.position_ids"]
    if not with_head:
        return backbone, ports, skipped + list(_BERT_HEAD_KEYS), ()
    masked_lm, next_sentence = "cls.predictions.bias" in keys, "cls.seq_relationship.weight" in keys
    if not (masked_lm or next_sentence):
        raise ConversionError(f"{where}: with_head=True but the checkpoint has no "
                              "cls.predictions.* or cls.seq_relationship.* tensors")
    if masked_lm and not c["tie_word_embeddings"]:
        raise ConversionError(f"{where}: tie_word_embeddings=False (an MLM decoder separate "
                              "from the word embeddings) is not supported")
    model = BertForPreTraining(backbone, masked_lm=masked_lm, next_sentence=next_sentence)
    duplicates = [("cls.predictions.decoder.weight", f"{prefix}embeddings.word_embeddings.weight"),
                  ("cls.predictions.decoder.bias", "cls.predictions.bias")] if masked_lm else []
    return model, ports + bert_head_ports(model), skipped, duplicates


def _bert_to_hf(model):
    backbone = model.backbone if isinstance(model, BertForPreTraining) else model
    check_bidirectional(model, backbone)
    if isinstance(model, BertForPreTraining):
        architecture = {(True, True): "BertForPreTraining", (True, False): "BertForMaskedLM",
                        (False, True): "BertForNextSentencePrediction"}[
                            (model.masked_lm, model.next_sentence)]
        if architecture == "BertForMaskedLM" and backbone.pooler:
            raise ConversionError(f"{model.name}: transformers' BertForMaskedLM has no pooler "
                                  "but the backbone has one; use pooler=False or add the "
                                  "next-sentence head")
        ports = bert_ports(backbone, "bert.") + bert_head_ports(model)
    else:
        architecture = "BertModel"
        if not backbone.pooler:
            raise ConversionError(f"{model.name}: transformers' BertModel always has a pooler "
                                  "but this backbone has pooler=False")
        ports = bert_ports(backbone, "")
    return bert_config(backbone, architecture, model.name), ports


def check_bidirectional(model, backbone):
    """transformers' BertModel reads both ways; a causal BERT encoder has no equivalent."""
    if backbone.causal:
        raise ConversionError(f"{model.name}: a causal (left-to-right) BERT encoder has no "
                              "transformers BertModel equivalent in this exporter")


def bert_config(backbone, architecture, name):
    """transformers' config.json for `backbone` under `architecture`."""
    return dict(
        architectures=[architecture], model_type="bert", vocab_size=backbone.vocabulary_size,
        hidden_size=backbone.hidden_dim, num_hidden_layers=backbone.num_layers,
        num_attention_heads=backbone.num_heads, intermediate_size=backbone.intermediate_dim,
        hidden_act=_lookup(_ACTIVATIONS_BACK, "activation", backbone.activation, name),
        hidden_dropout_prob=backbone.dropout,
        attention_probs_dropout_prob=backbone.attention_dropout,
        max_position_embeddings=backbone.max_sequence_length,
        type_vocab_size=backbone.num_segments, layer_norm_eps=backbone.layer_norm_epsilon,
        tie_word_embeddings=True,
    )


# === GPT-1 ===

def gpt_ports(backbone, prefix):
    ports = [
        same(backbone.token_embedding.embeddings, f"{prefix}tokens_embed.weight"),
        same(backbone.position_embedding.embeddings, f"{prefix}positions_embed.weight"),
    ]
    # transformers' Conv1D keeps weights as (in, out), the Keras kernel layout.
    for i, block in enumerate(backbone.blocks):
        layer, attention = f"{prefix}h.{i}.", block.attention
        qkv = (attention.query_dense, attention.key_dense, attention.value_dense)
        ports += [
            split([d.kernel for d in qkv], layer + "attn.c_attn.weight"),
            split([d.bias for d in qkv], layer + "attn.c_attn.bias"),
            *dense_ports(attention.output_dense, layer + "attn.c_proj", kernel_axes=(0, 1)),
            *layer_norm_ports(block.attention_norm, layer + "ln_1"),
            *dense_ports(block.ffn_intermediate, layer + "mlp.c_fc", kernel_axes=(0, 1)),
            *dense_ports(block.ffn_output, layer + "mlp.c_proj", kernel_axes=(0, 1)),
            *layer_norm_ports(block.ffn_norm, layer + "ln_2"),
        ]
    return ports


def _gpt_from_hf(config, keys, with_head, where):
    c = {**_GPT_DEFAULTS, **config}
    if c["embd_pdrop"] != c["resid_pdrop"]:
        # Dropout only acts in training, so the weights convert exactly; say what changed.
        warnings.warn(f"{where}: embd_pdrop={c['embd_pdrop']} differs from "
                      f"resid_pdrop={c['resid_pdrop']}; GPTBackbone has one `dropout` for "
                      f"both and uses {c['resid_pdrop']}", stacklevel=3)
    prefix = "transformer." if "transformer.tokens_embed.weight" in keys else ""
    backbone = GPTBackbone(
        vocabulary_size=c["vocab_size"], num_layers=c["n_layer"], num_heads=c["n_head"],
        hidden_dim=c["n_embd"], intermediate_dim=4 * c["n_embd"],  # fixed 4x in OpenAIGPT
        # One rate for embeddings and residuals in GPTBackbone; both are 0.1 in GPT-1.
        dropout=c["resid_pdrop"], attention_dropout=c["attn_pdrop"],
        max_sequence_length=c["n_positions"], layer_norm_epsilon=c["layer_norm_epsilon"],
        activation=_lookup(_GPT_ACTIVATIONS, "afn", c["afn"], where),
    )
    ports = gpt_ports(backbone, prefix)
    # Buffers (position ids, causal masks) that older transformers versions saved.
    masks = [f"{prefix}h.{i}.attn.{name}" for i in range(c["n_layer"])
             for name in ("bias", "masked_bias")]
    skipped = [f"{prefix}position_ids", *masks]
    if not with_head:
        return backbone, ports, skipped + ["lm_head.weight"], ()
    if not c["tie_word_embeddings"]:
        raise ConversionError(f"{where}: tie_word_embeddings=False (an LM head separate from "
                              "the token embeddings) is not supported")
    duplicates = [("lm_head.weight", f"{prefix}tokens_embed.weight")]
    return GPTLMHeadModel(backbone), ports, skipped, duplicates


def _gpt_to_hf(model):
    head = isinstance(model, (GPTLMHeadModel, CausalLM))
    backbone = model.backbone if head else model
    config = dict(
        architectures=["OpenAIGPTLMHeadModel" if head else "OpenAIGPTModel"],
        model_type="openai-gpt", vocab_size=backbone.vocabulary_size,
        n_positions=backbone.max_sequence_length, n_embd=backbone.hidden_dim,
        n_layer=backbone.num_layers, n_head=backbone.num_heads,
        afn=_lookup(_GPT_ACTIVATIONS_BACK, "activation", backbone.activation, model.name),
        resid_pdrop=backbone.dropout, embd_pdrop=backbone.dropout,
        attn_pdrop=backbone.attention_dropout, layer_norm_epsilon=backbone.layer_norm_epsilon,
        tie_word_embeddings=True,
    )
    if backbone.intermediate_dim != 4 * backbone.hidden_dim:
        raise ConversionError(f"{model.name}: intermediate_dim={backbone.intermediate_dim}, "
                              f"but OpenAIGPT fixes it to 4 * hidden = {4 * backbone.hidden_dim}")
    return config, gpt_ports(backbone, "transformer." if head else "")


# === ViT ===

def vit_ports(backbone, prefix, qkv_bias=True):
    e, patches = f"{prefix}embeddings.", backbone.patch_embedding
    ports = [
        same(patches.class_token, e + "cls_token"),
        same(patches.position_embedding, e + "position_embeddings"),
        # torch Conv2d weight (out, in, kh, kw) -> Keras Conv2D kernel (kh, kw, in, out).
        permuted(patches.projection.kernel, e + "patch_embeddings.projection.weight",
                 (2, 3, 1, 0)),
        same(patches.projection.bias, e + "patch_embeddings.projection.bias"),
    ]
    for i, block in enumerate(backbone.blocks):
        layer, attention = f"{prefix}encoder.layer.{i}.", block.attention
        ports += [
            *dense_ports(attention.query_dense, layer + "attention.attention.query", bias=qkv_bias),
            *dense_ports(attention.key_dense, layer + "attention.attention.key", bias=qkv_bias),
            *dense_ports(attention.value_dense, layer + "attention.attention.value", bias=qkv_bias),
            *dense_ports(attention.output_dense, layer + "attention.output.dense"),
            *layer_norm_ports(block.attention_norm, layer + "layernorm_before"),
            *dense_ports(block.ffn_intermediate, layer + "intermediate.dense"),
            *dense_ports(block.ffn_output, layer + "output.dense"),
            *layer_norm_ports(block.ffn_norm, layer + "layernorm_after"),
        ]
    ports += layer_norm_ports(backbone.final_norm, f"{prefix}layernorm")
    if backbone.pooler:
        ports += dense_ports(backbone.pooler_dense, f"{prefix}pooler.dense")
    return ports


def _vit_from_hf(config, keys, with_head, where):
    c = {**_VIT_DEFAULTS, **config}
    prefix = "vit." if "vit.embeddings.cls_token" in keys else ""
    pooler = f"{prefix}pooler.dense.weight" in keys
    if pooler:
        _require(c, where, pooler_act="tanh")
        if c["pooler_output_size"] not in (None, c["hidden_size"]):
            raise ConversionError(f"{where}: pooler_output_size={c['pooler_output_size']} "
                                  f"differs from hidden_size={c['hidden_size']}; not supported")
    backbone = ViTBackbone(
        image_size=_square(c["image_size"], "image_size", where),
        patch_size=_square(c["patch_size"], "patch_size", where),
        num_layers=c["num_hidden_layers"], num_heads=c["num_attention_heads"],
        hidden_dim=c["hidden_size"], intermediate_dim=c["intermediate_size"],
        num_channels=c["num_channels"], dropout=c["hidden_dropout_prob"],
        attention_dropout=c["attention_probs_dropout_prob"],
        layer_norm_epsilon=c["layer_norm_eps"],
        activation=_lookup(_ACTIVATIONS, "hidden_act", c["hidden_act"], where), pooler=pooler,
    )
    ports = vit_ports(backbone, prefix, qkv_bias=c["qkv_bias"])
    if not with_head:
        return backbone, ports, ["classifier.weight", "classifier.bias"], ()
    if "classifier.weight" not in keys:
        raise ConversionError(f"{where}: with_head=True but the checkpoint has no "
                              "classifier.weight")
    num_classes = len(c["id2label"]) if "id2label" in c else c.get("num_labels", 2)
    model = ViTClassifier(backbone, num_classes)
    return model, ports + dense_ports(model.classifier.dense, "classifier"), (), ()


def _vit_to_hf(model):
    head = isinstance(model, ViTClassifier)
    backbone = model.backbone if head else model
    if head == backbone.pooler:
        raise ConversionError(
            f"{model.name}: transformers' " + (
                "ViTForImageClassification has no pooler but the backbone has one; build it "
                "with pooler=False" if head else
                "ViTModel always has a pooler but this backbone has pooler=False")
        )
    config = dict(
        architectures=["ViTForImageClassification" if head else "ViTModel"], model_type="vit",
        hidden_size=backbone.hidden_dim, num_hidden_layers=backbone.num_layers,
        num_attention_heads=backbone.num_heads, intermediate_size=backbone.intermediate_dim,
        hidden_act=_lookup(_ACTIVATIONS_BACK, "activation", backbone.activation, model.name),
        hidden_dropout_prob=backbone.dropout,
        attention_probs_dropout_prob=backbone.attention_dropout,
        layer_norm_eps=backbone.layer_norm_epsilon, image_size=backbone.image_size,
        patch_size=backbone.patch_size, num_channels=backbone.num_channels, qkv_bias=True,
    )
    ports = vit_ports(backbone, "vit." if head else "")
    if head:
        labels = {str(i): f"LABEL_{i}" for i in range(model.num_classes)}
        config.update(id2label=labels, label2id={v: int(k) for k, v in labels.items()})
        ports += dense_ports(model.classifier.dense, "classifier")
    return config, ports


# The same model types as zoo.hub.MODEL_TYPES, which checks a repo before its download.
_READERS = {"bert": _bert_from_hf, "openai-gpt": _gpt_from_hf, "vit": _vit_from_hf}
WRITERS = {BertBackbone: _bert_to_hf, BertForPreTraining: _bert_to_hf,
           GPTBackbone: _gpt_to_hf, GPTLMHeadModel: _gpt_to_hf,
           CausalLM: _gpt_to_hf,
           ViTBackbone: _vit_to_hf, ViTClassifier: _vit_to_hf}
