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

import keras
import numpy as np

from zoo import files, lora
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

    model = lora.merged(model)  # LoRA: the merged kernels (PEFT's merge_and_unload)
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


# === LoRA adapters alone (PEFT's folder) ===

# The heads with PEFT adapters -> PEFT's task_type (which decides the PeftModel class that
# loads them). BERT's only: transformers 5 builds ViT with other module names than its
# checkpoint's tensor names (vit.layers.N.attention.q_proj for ...attention.attention.query),
# and PEFT's target_modules name modules; GPT-1's c_attn fuses query, key and value.
_PEFT_TASK_TYPES = {BertClassifier: "SEQ_CLS", BertSpanQA: "QUESTION_ANS",
                    BertTokenClassifier: "TOKEN_CLS", BertMultipleChoice: None}


def to_peft(model, path, base_model_name_or_path=None):
    """Write the LoRA adapters of a model trained with `train.lora_rank` as a PEFT folder.

    `adapter_model.safetensors` holds each adapted layer's `lora_A.weight` (r, in) and
    `lora_B.weight` (out, r) under transformers' module names, and, as PEFT's
    `modules_to_save`, the rest of what trained: the head and the LayerNorms, whole.
    `adapter_config.json` gives the rank, alpha, target modules and task type, so that
    `PeftModel.from_pretrained(base, path)` on transformers' model of the starting checkpoint
    (`to_huggingface` of the model before fine-tuning, or its hub name) computes the model.
    For BERT's fine-tuning heads (`BertClassifier`, `BertSpanQA`, `BertTokenClassifier`,
    `BertMultipleChoice`). `path` must not exist.
    """
    from safetensors.numpy import save_file

    adapted = lora.lora_layers(model)
    if not adapted:
        raise ConversionError(f"{model.name}: no LoRA layers (train.lora_rank) to write")
    if type(model) not in _PEFT_TASK_TYPES:
        raise ConversionError(f"{model.name}: PEFT adapters are written for BERT's heads "
                              f"({', '.join(c.__name__ for c in _PEFT_TASK_TYPES)}), not a "
                              f"{type(model).__name__}; its merged model is what --to hf writes")
    plain = lora.merged(model, reuse=True)
    _, ports = _writer(plain)(plain)
    pairs = dict(zip(map(id, model._flatten_layers()), plain._flatten_layers()))
    port_of = {id(v): port for port in ports for v in port.variables}

    def port(variable, where):
        found = port_of.get(id(variable))
        if found is None or found.key is None or len(found.variables) != 1:
            raise ConversionError(f"{model.name}: {where} has no tensor of its own in "
                                  "transformers' model; no PEFT adapters for it")
        return found

    tensors, targets, ranks, alphas = {}, [], set(), set()
    for layer in adapted:
        found = port(pairs[id(layer)].kernel, layer.path)
        if not found.key.endswith(".weight") or found.to_source([np.zeros((2, 3))]).shape \
                != (3, 2):
            raise ConversionError(f"{model.name}: {layer.path} is not a torch Linear in "
                                  f"transformers' model ({found.key}); no PEFT adapters for it")
        module = found.key[:-len(".weight")]
        targets.append(module)
        a, b = (_numpy(v) for v in (layer.lora_kernel_a, layer.lora_kernel_b))
        tensors[f"base_model.model.{module}.lora_A.weight"] = np.ascontiguousarray(a.T)
        tensors[f"base_model.model.{module}.lora_B.weight"] = np.ascontiguousarray(b.T)
        ranks.add(layer.lora_rank)
        alphas.add(layer.lora_alpha)
    saved = set()
    lora_variables = {id(v) for layer in adapted for v in (layer.lora_kernel_a,
                                                           layer.lora_kernel_b)}
    for layer in model._flatten_layers():
        for variable in layer._trainable_variables:
            if not variable.trainable or id(variable) in lora_variables:
                continue
            found = port(_twin_variable(layer, pairs[id(layer)], variable), variable.path)
            tensors[f"base_model.model.{found.key}"] = np.ascontiguousarray(
                found.to_source([_numpy(variable)]))
            saved.add(found.key.rsplit(".", 2)[-2])  # the module's own name: LayerNorm, ...
    config = dict(peft_type="LORA", task_type=_PEFT_TASK_TYPES[type(model)],
                  r=ranks.pop(), lora_alpha=alphas.pop(), target_modules=sorted(targets),
                  lora_dropout=0.0, bias="none", fan_in_fan_out=False,
                  modules_to_save=sorted(saved) or None, init_lora_weights=True,
                  inference_mode=True, base_model_name_or_path=base_model_name_or_path)
    with atomic_output(path) as staged:
        staged.mkdir()
        with files.open(staged / "adapter_config.json", "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2, sort_keys=True)
        save_file(tensors, str(staged / "adapter_model.safetensors"),
                  metadata={"format": "pt"})


def _numpy(variable):
    return keras.ops.convert_to_numpy(variable)


def _twin_variable(layer, twin, variable):
    """The variable of `twin` (the same layer in the merged model) in `variable`'s place."""
    for mine, theirs in zip(layer._trainable_variables + layer._non_trainable_variables,
                            twin._trainable_variables + twin._non_trainable_variables):
        if mine is variable:
            return theirs
    raise ConversionError(f"{variable.path}: not found in the merged model")
