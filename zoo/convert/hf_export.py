"""zoo models -> Hugging Face folders: weights, config, labels, tokenizer, image processor.

`to_huggingface` writes what transformers' `from_pretrained`, `AutoTokenizer` and `pipeline`
load. The backbones and pre-training heads use the weight maps of `zoo.convert.huggingface`
(one map per family, read and written alike); the fine-tuning heads of the tasks are here:

    BertClassifier       -> BertForSequenceClassification (num_classes=1: problem_type
                            "regression", STS-B)
    BertSpanQA           -> BertForQuestionAnswering (qa_outputs; no pooler)
    BertTokenClassifier  -> BertForTokenClassification (no pooler)
    BertMultipleChoice   -> BertForMultipleChoice (one score per choice)

Each head is a dropout then one dense layer on the same vector transformers reads (the pooled
[CLS] vector, or every position), so the logits are the same function of the same weights.
A BERT that transformers builds without a pooler (span QA, token classification) gets no
pooler tensors: that head never reads the pooler, so nothing it computes is lost. Heads no
transformers model computes (`REFUSED`) are refused with the reason.
"""

import json

from zoo import files
from zoo.convert.core import ConversionError, Port, atomic_output, dense_ports, export_weights
from zoo.convert.huggingface import WRITERS, bert_config, bert_ports, check_bidirectional
from zoo.models import LSTMBackbone, ViTBackbone
from zoo.models.head_models import (
    BertClassifier,
    BertFeatureTagger,
    BertMaskedLM,
    BertMultipleChoice,
    BertSpanQA,
    BertTokenClassifier,
    CausalLM,
    GPTClassifier,
)
from zoo.tokenizers.saving import save_huggingface

# Heads with no transformers model that computes them, and why.
REFUSED = {
    GPTClassifier: (
        "GPT-1's fine-tuning head (section 3.3) reads the extract token's state of the task's "
        "input transformation (delimiter-packed pairs, both orders summed for similarity, one "
        "score per choice) through a linear layer with a bias; transformers' "
        "OpenAIGPTForSequenceClassification reads the last non-padding token of one sequence "
        "through a bias-free layer and OpenAIGPTDoubleHeadsModel takes caller-built "
        "mc_token_ids, so neither computes this model"),
    BertFeatureTagger: (
        "feature-based NER (BERT section 5.4, Table 7) runs a BiLSTM over a fixed combination "
        "of hidden states; no transformers model has that head"),
}


def to_huggingface(model, path, progress=False, labels=None, tokenizer=None,
                   multi_label=False):
    """Write a zoo model as a Hugging Face checkpoint folder: config.json + model.safetensors.

    transformers loads the folder with `from_pretrained` into BertModel, BertForPreTraining,
    BertForMaskedLM, BertForNextSentencePrediction, OpenAIGPTModel, OpenAIGPTLMHeadModel,
    ViTModel or ViTForImageClassification, or for fine-tuned heads (see above)
    BertForSequenceClassification, BertForQuestionAnswering, BertForTokenClassification or
    BertForMultipleChoice, with no missing or unexpected weights. Tied output embeddings are
    written once, as transformers does. A ViT folder also gets preprocessor_config.json
    (ViTImageProcessor: resize, scale to [0, 1], mean and std 0.5, as
    `zoo.data.image_classification`). The folder appears only when complete; `path` must not
    exist.

    Args:
        model: a zoo backbone or head model (`BertForPreTraining`, `BertMaskedLM`,
            `GPTLMHeadModel`, `CausalLM` on GPT-1, `ViTClassifier`,
            `BertClassifier`, `BertSpanQA`, `BertTokenClassifier`, `BertMultipleChoice`).
        path: the folder to create.
        progress: show a progress bar over the tensors.
        labels: names of the classifier's outputs in order (class names, NER tags), written
            as `id2label` / `label2id`; default LABEL_0, LABEL_1, ...
        tokenizer: a zoo tokenizer to write beside the weights
            (`zoo.tokenizers.saving.save_huggingface`), so `AutoTokenizer` and `pipeline`
            load the folder.
        multi_label: a classifier with a sigmoid a label (your own data's data.multi_label):
            `problem_type` "multi_label_classification", so that transformers trains it
            with binary cross-entropy and `pipeline` gives each label's sigmoid.

    Examples:
        >>> import os, tempfile, zoo.convert
        >>> model = zoo.models.create("bert_tiny", num_layers=1)
        >>> out = os.path.join(tempfile.mkdtemp(), "bert")
        >>> zoo.convert.to_huggingface(model, out)
        >>> sorted(os.listdir(out))
        ['config.json', 'model.safetensors']
    """
    from safetensors.numpy import save_file

    if isinstance(model, BertMaskedLM):
        model = model.to_checkpoint_model()
    config, ports = _writer(model)(model)
    if labels is not None:
        if "id2label" not in config or config.get("problem_type") == "regression":
            raise ConversionError(f"{model.name}: labels given, but a "
                                  f"{type(model).__name__} has no classes to name")
        config.update(labels_config(labels, len(config["id2label"]), model.name))
    if multi_label:
        if config.get("problem_type") != "single_label_classification":
            raise ConversionError(f"{model.name}: multi_label is for a classifier of several "
                                  f"labels, not a {type(model).__name__}")
        config["problem_type"] = "multi_label_classification"
    backbone = getattr(model, "backbone", model)
    if tokenizer is not None:
        if isinstance(backbone, ViTBackbone):
            raise ConversionError(f"{model.name}: a ViT takes images; no tokenizer to write")
        if tokenizer.vocabulary_size() != backbone.vocabulary_size:
            raise ConversionError(f"{model.name}: the tokenizer has "
                                  f"{tokenizer.vocabulary_size()} tokens, the model's "
                                  f"embedding {backbone.vocabulary_size}; not its tokenizer")
    tensors = export_weights(model, ports, progress=progress)
    with atomic_output(path) as staged:
        staged.mkdir()
        with files.open(staged / "config.json", "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        save_file(tensors, str(staged / "model.safetensors"), metadata={"format": "pt"})
        if tokenizer is not None:
            # A masked LM's "[MASK]" marks the blank (fill-mask), as in zoo's MLM export.
            masked_lm = getattr(model, "masked_lm", False)
            save_huggingface(tokenizer, str(staged), backbone.max_sequence_length,
                             split_special_tokens=not masked_lm)
        if isinstance(backbone, ViTBackbone):
            _write_image_processor(backbone, staged)


def _write_image_processor(backbone, folder):
    """transformers' ViTImageProcessor settings for what `zoo.data.image_classification` does
    to an image."""
    # lazy: zoo.data loads TensorFlow; `import zoo` does not need it (models on JAX or torch)
    from zoo.data.image_classification import VIT_MEAN, VIT_STD

    size = backbone.image_size
    config = dict(image_processor_type="ViTImageProcessor", do_resize=True,
                  size={"height": size, "width": size}, resample=2,  # PIL bilinear
                  do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                  image_mean=list(VIT_MEAN), image_std=list(VIT_STD))
    with files.open(folder / "preprocessor_config.json", "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def _writer(model):
    """The config-and-weight-map writer for `model`, or a ConversionError saying why it has
    no transformers form."""
    if type(model) in REFUSED:
        raise ConversionError(f"{model.name}: a {type(model).__name__} cannot be written as a "
                              f"Hugging Face checkpoint: {REFUSED[type(model)]}")
    if isinstance(model, CausalLM) and model.mlm_head is not None:
        raise ConversionError(f"{model.name}: a left-to-right BERT (BERT Table 5, LTR & No NSP) "
                              "has no transformers model; BertLMHeadModel is a decoder with "
                              "another head layout")
    if getattr(getattr(model, "backbone", None), "causal", False):
        raise ConversionError(f"{model.name}: its BERT is left-to-right (model.backbone.causal, "
                              "BERT Table 5); transformers' BERT heads attend both ways, so "
                              "they would compute another function")
    if isinstance(model, LSTMBackbone) or isinstance(getattr(model, "backbone", None),
                                                     LSTMBackbone):
        raise ConversionError(f"{model.name}: an LSTM language model (GPT-1 Table 5, 'LSTM w/ "
                              "aux LM'); transformers has no such model")
    if getattr(model, "bilstm", None) is not None:
        raise ConversionError(f"{model.name}: a BiLSTM under its head (model.bilstm, BERT "
                              "Table 5 'LTR & No NSP + BiLSTM'); no transformers model has one")
    writer = _HEAD_WRITERS.get(type(model)) or WRITERS.get(type(model))
    if writer is None:
        names = [cls.__name__ for cls in (*WRITERS, *_HEAD_WRITERS, BertMaskedLM)]
        raise ConversionError(f"{model.name}: a {type(model).__name__} cannot be written as a "
                              f"Hugging Face checkpoint; expected one of {sorted(names)}")
    return writer


def labels_config(labels, count, where):
    """id2label / label2id for `count` outputs named `labels` (transformers' own layout)."""
    labels = [str(name) for name in labels]
    if len(labels) != count:
        raise ConversionError(f"{where}: {len(labels)} label names for {count} outputs")
    if len(set(labels)) != len(labels):
        raise ConversionError(f"{where}: label names repeat: {labels}")
    return dict(id2label={str(i): name for i, name in enumerate(labels)},
                label2id={name: i for i, name in enumerate(labels)})


def _unused(variables):
    """Variables the target architecture leaves out because the head never reads them."""
    return Port(None, tuple(variables), lambda a: [a], lambda arrays: arrays[0], unused=True)


def _backbone(model, prefix, pooler):
    backbone = model.backbone
    check_bidirectional(model, backbone)
    ports = bert_ports(backbone, prefix)
    if backbone.pooler and not pooler:
        keys = {f"{prefix}pooler.dense.weight", f"{prefix}pooler.dense.bias"}
        ports = [p for p in ports if p.key not in keys]
        ports.append(_unused([backbone.pooler_dense.kernel, backbone.pooler_dense.bias]))
    return backbone, ports


def _sequence_classification(model):
    backbone, ports = _backbone(model, "bert.", pooler=True)
    config = bert_config(backbone, "BertForSequenceClassification", model.name)
    count = model.num_classes
    config.update(labels_config([f"LABEL_{i}" for i in range(count)], count, model.name),
                  classifier_dropout=model.dropout,
                  problem_type="regression" if count == 1 else "single_label_classification")
    return config, ports + dense_ports(model.classifier.dense, "classifier")


def _question_answering(model):
    backbone, ports = _backbone(model, "bert.", pooler=False)
    # transformers' default num_labels, 2, sizes qa_outputs (start and end).
    config = bert_config(backbone, "BertForQuestionAnswering", model.name)
    return config, ports + dense_ports(model.span, "qa_outputs")


def _token_classification(model):
    backbone, ports = _backbone(model, "bert.", pooler=False)
    config = bert_config(backbone, "BertForTokenClassification", model.name)
    count = model.num_tags
    config.update(labels_config([f"LABEL_{i}" for i in range(count)], count, model.name),
                  classifier_dropout=model.dropout)
    return config, ports + dense_ports(model.classifier.dense, "classifier")


def _multiple_choice(model):
    backbone, ports = _backbone(model, "bert.", pooler=True)
    config = bert_config(backbone, "BertForMultipleChoice", model.name)
    config.update(classifier_dropout=model.dropout)
    return config, ports + dense_ports(model.classifier.dense, "classifier")


_HEAD_WRITERS = {BertClassifier: _sequence_classification, BertSpanQA: _question_answering,
                 BertTokenClassifier: _token_classification,
                 BertMultipleChoice: _multiple_choice}
