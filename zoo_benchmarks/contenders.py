"""Inside a worker process: the timed callables ("mode policy batch" -> fn) of one library.

zoo and keras-hub on the worker's Keras backend, transformers (eager torch; it also writes the
ONNX files) and ONNX Runtime, all on the weights and inputs of `weights.prepare_weights`.
"""

import contextlib
import os
import sys
import types

from zoo_benchmarks import transformers_recipe
from zoo_benchmarks.common import FAMILIES


def keras_contenders(spec, library):
    """name -> callable for zoo or keras-hub on the current Keras backend."""
    import json

    import keras
    import numpy as np

    folder = os.path.join(spec["root"], spec["family"])
    backend = keras.backend.backend()

    def build(policy, training):
        if library == "zoo":
            # lazy: loads TensorFlow; the torch worker imports this module
            import zoo

            with open(os.path.join(folder, "zoo_config.json"), encoding="utf-8") as file:
                saved = json.load(file)
            # "bfloat16": what zoo serves under mixed_bfloat16 (`zoo export`), the same
            # computation with the dense and embedding weights stored in bfloat16.
            config = dict(saved["config"], dtype="float32" if policy == "bfloat16" else policy)
            if not training:
                config.update(dropout=0.0, attention_dropout=0.0)
            elif spec["family"] == "bert":
                # The fine-tuning step compares equal work: keras-hub's BertBackbone has only
                # the tanh GELU, so zoo runs it too (what `zoo.convert.from_keras_hub` gives
                # for keras-hub's checkpoints). zoo's default erf GELU costs little more: a
                # small share of a step in an XLA profile of this benchmark.
                config.update(activation="gelu_approximate")
            backbone = getattr(zoo.models, saved["class_name"]).from_config(config)
            backbone.load_weights(os.path.join(folder, "zoo.weights.h5"))
            if training:
                return zoo.models.BertClassifier(backbone, 2, dropout=0.1)
            if policy == "bfloat16":
                # lazy: as above
                from zoo import export

                return export.with_bfloat16_weights(backbone)
            return backbone
        import keras_hub

        # The local preset `prepare_weights` wrote: from_preset never reaches a hub.
        backbone = keras_hub.models.Backbone.from_preset(
            os.path.join(folder, "keras_hub"), dtype=policy,
            **({} if training else {"dropout": 0.0} if spec["family"] == "bert" else {}))
        if training:
            return keras_hub.models.BertTextClassifier(backbone, num_classes=2,
                                                       preprocessor=None, dropout=0.1)
        return backbone

    modes = spec.get("modes") or (["graph", "xla"] if backend == "tensorflow" else ["jit"])
    fns = {}
    for batch in spec["batches"]:
        data = dict(np.load(os.path.join(folder, f"inputs_{batch}.npz")))
        labels = data.pop("labels")
        x = data["images"] if spec["family"] == "vit" else data
        if spec["kind"] == "pretrain":
            fns.update(_zoo_pretraining(folder, data, batch, modes))
            continue
        for policy in spec["policies"]:
            if spec["kind"] == "train":
                for mode in modes:
                    model = build(policy, training=True)
                    # The same optimizer and loss for both, and no metric: a keras-hub Task
                    # compiles itself with an accuracy metric when built, which only an
                    # explicit empty list replaces (`metrics=None` keeps it).
                    model.compile(
                        optimizer=keras.optimizers.AdamW(2e-5, weight_decay=0.01),
                        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        metrics=[], jit_compile=mode != "graph")
                    y = {"logits": labels} if library == "zoo" else labels
                    fns[f"{mode} {policy} {batch}"] = (
                        lambda m=model, x=x, y=y: float(np.ravel(m.train_on_batch(x, y))[0]))
                continue
            model = build(policy, training=False)
            if backend == "tensorflow":
                import tensorflow as tf

                for mode in modes:
                    call = tf.function(lambda x, m=model: m(x, training=False),
                                       jit_compile=mode == "xla")
                    fns[f"{mode} {policy} {batch}"] = lambda c=call, x=x: _first_output(c(x))
            else:
                fns[f"jit {policy} {batch}"] = (
                    lambda m=model, x=x: _first_output(m.predict_on_batch(x)))
    return fns


MASK_TOKEN_ID = 103  # "[MASK]" in BERT's uncased vocabulary (the ids here are random ones)
PREDICTIONS = 20  # masked positions per sequence at 128 tokens, as run_pretraining.py's


def pretraining_batch(data):
    """A masked-LM + NSP batch from the benchmark's inputs, the same in every worker:
    PREDICTIONS positions per sequence (never [CLS], position 0) masked with MASK_TOKEN_ID,
    their original ids as targets, random next-sentence labels. The keys of
    `zoo.data.pretraining_dataset`'s (x, y, sample_weight)."""
    import numpy as np

    rng = np.random.default_rng(1)
    ids = data["token_ids"]
    batch, length = ids.shape
    count = min(PREDICTIONS, length - 1)
    positions = np.sort(np.stack([rng.choice(np.arange(1, length), count, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    targets = np.take_along_axis(ids, positions, axis=1)
    masked = ids.copy()
    np.put_along_axis(masked, positions, MASK_TOKEN_ID, axis=1)
    x = dict(data, token_ids=masked, mask_positions=positions)
    y = {"mlm": targets, "nsp": rng.integers(0, 2, (batch,)).astype("int32")}
    return x, y, {"mlm": np.ones(targets.shape, "float32"), "nsp": np.ones(batch, "float32")}


def _zoo_pretraining(folder, data, batch, modes):
    """zoo's BERT pretraining step (`BertMaskedLM`, the masked LM task's losses, zoo's AdamW
    with BERT's recipe) per mode: "mode float32 batch" -> step returning the loss."""
    import json

    import keras
    import numpy as np

    # lazy: loads TensorFlow; the torch worker imports this module
    import zoo

    # lazy: as above
    from zoo.optimization import build_optimizer

    x, y, weights = pretraining_batch(data)
    with open(os.path.join(folder, "zoo_config.json"), encoding="utf-8") as file:
        saved = json.load(file)
    fns = {}
    for mode in modes:
        backbone = getattr(zoo.models, saved["class_name"]).from_config(saved["config"])
        backbone.load_weights(os.path.join(folder, "zoo.weights.h5"))
        model = zoo.models.BertMaskedLM(backbone)
        sparse = keras.losses.SparseCategoricalCrossentropy
        model.compile(
            optimizer=build_optimizer(1e-4, 10_000, 100, model=model),
            loss={"mlm": sparse(from_logits=True, reduction="mean_with_sample_weight"),
                  "nsp": sparse(from_logits=True)},
            jit_compile=mode != "graph")
        fns[f"{mode} float32 {batch}"] = (
            lambda m=model: float(np.ravel(m.train_on_batch(x, y, sample_weight=weights))[0]))
    return fns


def _first_output(outputs):
    """The sequence output as numpy, from a dict, list or tensor of any library."""
    import numpy as np

    if isinstance(outputs, dict):
        key = next(k for k in ("sequence_output", "last_hidden_state") if k in outputs)
        outputs = outputs[key]
    elif isinstance(outputs, (list, tuple)):
        outputs = outputs[0]
    if hasattr(outputs, "detach"):
        outputs = outputs.detach()
    return np.asarray(outputs, dtype="float32")


def _torch_inputs(family, data):
    import torch

    if family == "vit":
        return {"pixel_values": torch.from_numpy(data["images"].transpose(0, 3, 1, 2).copy())}
    inputs = {"input_ids": torch.from_numpy(data["token_ids"].astype("int64")),
              "attention_mask": torch.from_numpy(data["padding_mask"].astype("int64"))}
    if family == "bert":
        inputs["token_type_ids"] = torch.from_numpy(data["segment_ids"].astype("int64"))
    return inputs


def transformers_contenders(spec):
    """Eager torch (transformers' default) for forward and training; also writes the ONNX files."""
    import numpy as np
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    folder = os.path.join(spec["root"], spec["family"])
    hf = os.path.join(folder, "hf")
    fns = {}
    for batch in spec["batches"]:
        data = dict(np.load(os.path.join(folder, f"inputs_{batch}.npz")))
        labels = torch.from_numpy(data.pop("labels").astype("int64"))
        inputs = _torch_inputs(spec["family"], data)
        if spec["kind"] in ("train", "pretrain"):
            for mode in spec.get("modes") or ["eager"]:
                fns[f"{mode} float32 {batch}"] = _torch_training_step(
                    spec["kind"], hf, data, inputs, labels, mode, spec.get("tiny", False))
            continue
        kwargs = {"add_pooling_layer": False} if spec["family"] != "gpt1" else {}
        model = getattr(transformers, FAMILIES[spec["family"]][2]).from_pretrained(hf, **kwargs)
        model.eval()

        def forward(model=model, inputs=inputs):
            with torch.inference_mode():
                return _first_output(model(**inputs).last_hidden_state)

        fns[f"eager float32 {batch}"] = forward
        onnx_path = os.path.join(folder, f"model_{batch}.onnx")
        if not os.path.exists(onnx_path):
            import warnings

            with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
                warnings.simplefilter("ignore")
                torch.onnx.export(model, (), onnx_path, kwargs=inputs, dynamo=True,
                                  input_names=list(inputs), output_names=["last_hidden_state"])
    return fns


def _torch_training_step(kind, hf, data, inputs, labels, mode, tiny=False):
    """One transformers training step as a callable returning the loss: "train" is the
    fine-tuning step of `finetune`, "pretrain" BERT's (`BertForPreTraining` on
    `pretraining_batch`, AdamW with BERT's recipe as zoo_benchmarks.transformers_recipe builds it);
    mode "eager", or "compile" (`torch.compile` of the model, inductor's default mode)."""
    import torch
    import transformers

    if kind == "train":
        # The tanh GELU, as keras-hub and zoo in the fine-tuning step (see keras_contenders).
        model = transformers.BertForSequenceClassification.from_pretrained(
            hf, num_labels=2, hidden_act="gelu_pytorch_tanh")
        optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01,
                                      eps=1e-7)  # Keras's default, as the others
        kwargs = dict(inputs, labels=labels)
    else:
        model = transformers.BertForPreTraining.from_pretrained(hf)
        train = types.SimpleNamespace(optimizer="adamw", learning_rate=1e-4, weight_decay=0.01,
                                      adam_epsilon=1e-6, schedule="linear")  # zoo's defaults
        optimizer, _ = transformers_recipe.optimizer(model, train, 10_000, 100)
        kwargs = {key: torch.from_numpy(value) for key, value in
                  transformers_recipe.pretraining_batch(*pretraining_batch(data)).items()}
    model.train()
    forward = model
    if mode == "compile":
        # --tiny checks the contender, not inductor's code generation (30 s on 2 cores for
        # two layers): dynamo traces the step and runs it eagerly.
        forward = torch.compile(model, backend="eager" if tiny else "inductor")

    def step():
        loss = forward(**kwargs).loss
        loss.backward()
        if kind == "pretrain":  # BERT's clipping (zoo's pretraining step clips too)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        return float(loss)

    return step


def onnxruntime_contenders(spec):
    import numpy as np
    import onnxruntime

    folder = os.path.join(spec["root"], spec["family"])
    fns = {}
    for batch in spec["batches"]:
        data = dict(np.load(os.path.join(folder, f"inputs_{batch}.npz")))
        data.pop("labels")
        inputs = {k: v.numpy() for k, v in _torch_inputs(spec["family"], data).items()}
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(os.path.join(folder, f"model_{batch}.onnx"),
                                               options, providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        feed = {k: v for k, v in inputs.items() if k in names}
        fns[f"session float32 {batch}"] = (
            lambda s=session, f=feed: np.asarray(s.run(["last_hidden_state"], f)[0]))
    return fns
