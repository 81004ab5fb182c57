"""Hugging Face checkpoints with their heads, fine-tuned ones included, read into zoo's models.

`from_huggingface(path, with_head=True)` reads what `architectures` in config.json names:

    BertForSequenceClassification  -> BertClassifier (num_labels outputs; 1: a regression)
    BertForTokenClassification     -> BertTokenClassifier
    BertForQuestionAnswering       -> BertSpanQA (qa_outputs: start and end)
    BertForMultipleChoice          -> BertMultipleChoice (one score a choice)
    BertForMaskedLM, BertForPreTraining, OpenAIGPTLMHeadModel, ViTForImageClassification:
                                      zoo.convert.huggingface's readers, as before

and `load_into(model, path)` sets a model that a task built (`BertClassifier`, `BertMaskedLM`,
`CausalLM` on GPT-1, `ViTClassifier`, `BertTextEmbedder`, ...) from a checkpoint of the same
head, every tensor and every variable checked as `zoo.convert.core.load_weights` checks them.
The head weight maps here are the ones `zoo.convert.hf_export` writes, read the other way.
"""

import os

from zoo.convert import huggingface
from zoo.convert.core import (
    ConversionError,
    SafetensorsSource,
    dense_ports,
    layer_norm_ports,
    load_weights,
    read_json,
    same,
)
from zoo.models import BertBackbone, GPTBackbone, ViTBackbone
from zoo.models.head_models import (
    BertClassifier,
    BertForPreTraining,
    BertMaskedLM,
    BertMultipleChoice,
    BertSpanQA,
    BertTextEmbedder,
    BertTokenClassifier,
    CausalLM,
    GPTLMHeadModel,
    ViTClassifier,
)

# transformers' fine-tuned BERT heads -> the zoo head model of the same function.
FINE_TUNED = {"BertForSequenceClassification": BertClassifier,
              "BertForTokenClassification": BertTokenClassifier,
              "BertForQuestionAnswering": BertSpanQA,
              "BertForMultipleChoice": BertMultipleChoice}
# What a task head reads from a checkpoint: its weights, under these architectures' names.
_HEAD_TENSOR = {BertClassifier: "classifier", BertTokenClassifier: "classifier",
                BertMultipleChoice: "classifier", BertSpanQA: "qa_outputs"}
# Each checkpoint head -> the zoo models whose head it sets (`load_into`), fine-tuned or not.
HEADS = {**{name: (cls,) for name, cls in FINE_TUNED.items()},
         "BertForMaskedLM": (BertMaskedLM, BertForPreTraining),
         "BertForPreTraining": (BertMaskedLM, BertForPreTraining),
         "ViTForImageClassification": (ViTClassifier,)}
NUM_CHOICES = 4  # a BertForMultipleChoice read alone: SWAG's and RACE's four endings


def architecture(config):
    """The first of config.json's `architectures`, or None."""
    names = config.get("architectures") or [None]
    return names[0]


def num_labels(config):
    """transformers' `num_labels`: the size of `id2label`, else `num_labels`, else 2."""
    if config.get("id2label"):
        return len(config["id2label"])
    return int(config.get("num_labels", 2))


def head_dropout(config):
    """The dropout before a fine-tuned BERT head: `classifier_dropout`, else the hidden one."""
    value = config.get("classifier_dropout")
    return float(config.get("hidden_dropout_prob", 0.1) if value is None else value)


def from_huggingface(path, with_head=False, progress=False, num_choices=NUM_CHOICES):
    """`zoo.convert.huggingface.from_huggingface`, and with `with_head` the fine-tuned heads of
    `FINE_TUNED` too (see the module docstring).

    Args:
        path: a Hugging Face folder (config.json + safetensors), or a name `zoo.hub` resolves.
        with_head: the model with the checkpoint's head, not the bare backbone.
        progress: show a progress bar over the tensors.
        num_choices: a `BertForMultipleChoice`'s choices a question (the zoo model's inputs
            have a fixed count; transformers' take any).
    """
    folder = huggingface.local_folder(path, progress)
    config = read_json(os.path.join(folder, "config.json"))
    head = FINE_TUNED.get(architecture(config)) if with_head else None
    if head is None:
        return huggingface.from_huggingface(folder, with_head=with_head, progress=progress)
    pooler = head in (BertClassifier, BertMultipleChoice)
    backbone = huggingface.from_huggingface(folder, progress=progress)
    if backbone.pooler != pooler:
        backbone = type(backbone).from_config({**backbone.get_config(), "pooler": pooler})
    dropout = head_dropout(config)
    if head is BertSpanQA:
        model = BertSpanQA(backbone)
    elif head is BertMultipleChoice:
        model = BertMultipleChoice(backbone, num_choices, dropout=dropout)
    else:
        model = head(backbone, num_labels(config), dropout=dropout)
    load_into(model, folder, progress=progress)
    return model


def load_into(model, path, progress=False, name=None):
    """Set every weight of `model`, a zoo head model, from the Hugging Face folder `path` of
    a checkpoint with that head (or, for heads with no weights of their own, its backbone).

    The weight map is the model's whole: a tensor the model has no place for, a variable no
    tensor sets, or a shape that differs is a `ConversionError` naming the folder and the
    tensors, before any weight is set. A pooler the model does not read (span QA, token
    classification) is skipped. `name`: how errors name the checkpoint (default: the folder).
    """
    folder = huggingface.local_folder(path, progress=False)
    config_path = os.path.join(folder, "config.json")
    config = read_json(config_path)
    with huggingface.local_copies(huggingface.safetensors_files(folder)) as local:
        source = SafetensorsSource(local, name=name or folder)
        ports, skipped, duplicates = _ports(model, set(source.keys()), config,
                                            name or config_path)
        load_weights(model, ports, source, skipped=skipped, duplicates=duplicates,
                     progress=progress)


def _ports(model, keys, config, where):
    """(ports, skipped keys, tied duplicates) of `model` read from a checkpoint's `keys`."""
    backbone = getattr(model, "backbone", model)
    if isinstance(backbone, GPTBackbone):
        if not isinstance(model, (CausalLM, GPTLMHeadModel, GPTBackbone)):
            raise ConversionError(f"{where}: a GPT-1 checkpoint sets a language model's "
                                  f"weights, not a {type(model).__name__}'s")
        prefix = "transformer." if "transformer.tokens_embed.weight" in keys else ""
        masks = [f"{prefix}h.{i}.attn.{name}" for i in range(backbone.num_layers)
                 for name in ("bias", "masked_bias")]
        return (huggingface.gpt_ports(backbone, prefix), [f"{prefix}position_ids", *masks],
                [("lm_head.weight", f"{prefix}tokens_embed.weight")])
    if isinstance(backbone, ViTBackbone):
        prefix = "vit." if "vit.embeddings.cls_token" in keys else ""
        ports = huggingface.vit_ports(backbone, prefix, qkv_bias=config.get("qkv_bias", True))
        if isinstance(model, ViTClassifier):
            return ports + dense_ports(model.classifier.dense, "classifier"), [], []
        return ports, ["classifier.weight", "classifier.bias"], []
    if not isinstance(backbone, BertBackbone) or backbone.causal:
        raise ConversionError(f"{where}: no Hugging Face checkpoint holds a "
                              f"{type(model).__name__}")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in keys else ""
    ports = huggingface.bert_ports(backbone, prefix)
    skipped = [f"{prefix}embeddings.position_ids"]
    if not backbone.pooler:
        skipped += [f"{prefix}pooler.dense.weight", f"{prefix}pooler.dense.bias"]
    duplicates = []
    head = _HEAD_TENSOR.get(type(model))
    if head is not None:
        _check_head(model, config, where)
        layer = model.span if isinstance(model, BertSpanQA) else model.classifier.dense
        ports += dense_ports(layer, head)
    elif isinstance(model, (BertMaskedLM, BertForPreTraining)):
        if "cls.predictions.bias" not in keys:
            raise ConversionError(f"{where}: no masked-LM head (cls.predictions.*) for a "
                                  f"{type(model).__name__}; the checkpoint is a "
                                  f"{architecture(config)}")
        transform = model.mlm_head
        ports += [*dense_ports(transform.transform_dense, "cls.predictions.transform.dense"),
                  *layer_norm_ports(transform.transform_norm,
                                    "cls.predictions.transform.LayerNorm"),
                  same(transform.output_bias, "cls.predictions.bias")]
        duplicates = [("cls.predictions.decoder.weight",
                       f"{prefix}embeddings.word_embeddings.weight"),
                      ("cls.predictions.decoder.bias", "cls.predictions.bias")]
        if model.next_sentence:
            ports += dense_ports(model.nsp_head.dense, "cls.seq_relationship")
        else:
            skipped += ["cls.seq_relationship.weight", "cls.seq_relationship.bias"]
    elif isinstance(model, (BertTextEmbedder, BertBackbone)):
        skipped += [key for key in keys if key.startswith(("cls.", "classifier.", "qa_outputs."))]
    else:
        raise ConversionError(f"{where}: a {type(model).__name__} has no Hugging Face "
                              "checkpoint to read")
    return ports, skipped, duplicates


def _check_head(model, config, where):
    """The checkpoint's architecture is the head's, in one line naming both otherwise."""
    found = architecture(config)
    expected = next(name for name, cls in FINE_TUNED.items() if cls is type(model))
    if found != expected:
        raise ConversionError(f"{where}: the checkpoint is a {found}, not a {expected} "
                              f"(what a {type(model).__name__} reads)")
