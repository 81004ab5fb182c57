"""The weights and inputs every library of `models` and `finetune` loads, written once.

`prepare_in_subprocess` runs `prepare_weights` in a TensorFlow-backend subprocess (`prepare`),
whatever backend the parent has.
"""

import os
import sys

from zoo_benchmarks.common import FAMILIES, child_environment


def prepare_weights(root, families, batches, length, tiny=False):
    """One set of random weights per family, written for every library; same inputs for all.

    keras-hub's backbones are created first (with their own initializers) and written as a
    local preset; zoo reads that preset through `zoo.convert.from_keras_hub` and writes its own
    weights and a transformers checkpoint (`to_huggingface`), which torch and ONNX Runtime load.
    keras-hub's BERT uses the tanh GELU; zoo's and transformers' BERT the exact (erf) GELU of
    the paper: each library runs its own default, so their outputs differ by about 1e-3.
    """
    import json

    import keras
    import keras_hub
    import numpy as np

    # lazy: loads Keras; the parent only starts the TensorFlow-backend process that runs this
    import zoo
    from zoo.convert import from_keras_hub, to_huggingface  # lazy: as above

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    # --tiny: two small layers, for the benchmark's own test; the figures then mean nothing.
    size = (dict(num_layers=2, num_heads=2, hidden_dim=64, intermediate_dim=256) if tiny else
            dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072))
    image = 32 if tiny else 224
    for family in families:
        folder = os.path.join(root, family)
        os.makedirs(folder)
        preset, hub_class, _ = FAMILIES[family]
        if family == "bert":
            hub = keras_hub.models.BertBackbone(
                vocabulary_size=30522, dropout=0.1, max_sequence_length=512, num_segments=2,
                **size)
        elif family == "vit":
            hub = keras_hub.models.ViTBackbone(
                image_shape=(image, image, 3), patch_size=8 if tiny else 16,
                num_layers=size["num_layers"], num_heads=size["num_heads"],
                hidden_dim=size["hidden_dim"], mlp_dim=size["intermediate_dim"],
                dropout_rate=0.0, attention_dropout=0.0, layer_norm_epsilon=1e-12)
        if hub_class:
            hub.save_to_preset(os.path.join(folder, "keras_hub"))
            converted = from_keras_hub(os.path.join(folder, "keras_hub"))
            config = converted.get_config()
            if family == "bert":
                config["activation"] = "gelu"  # zoo's default; keras-hub keeps its tanh GELU
            else:
                # transformers' ViTModel checkpoints always hold a pooler (random here, and
                # left out when timing: `add_pooling_layer=False`, zoo's pooled output unused).
                config["pooler"] = True
            model = type(converted).from_config(config)
            for layer in converted.layers:
                model.get_layer(layer.name).set_weights(layer.get_weights())
        else:
            model = zoo.models.create(preset, **size)
        with open(os.path.join(folder, "zoo_config.json"), "w", encoding="utf-8") as file:
            json.dump({"class_name": type(model).__name__, "config": model.get_config()}, file)
        model.save_weights(os.path.join(folder, "zoo.weights.h5"))
        to_huggingface(model, os.path.join(folder, "hf"))
        for batch in batches:
            if family == "vit":
                inputs = {"images": rng.normal(size=(batch, image, image, 3)).astype("float32")}
            else:
                ids = rng.integers(1, model.vocabulary_size, (batch, length)).astype("int32")
                inputs = {"token_ids": ids, "padding_mask": np.ones_like(ids)}
                if family == "bert":
                    inputs["segment_ids"] = (np.arange(length) >= length // 2).astype(
                        "int32")[None].repeat(batch, 0)
            inputs["labels"] = rng.integers(0, 2, (batch,)).astype("int32")
            np.savez(os.path.join(folder, f"inputs_{batch}.npz"), **inputs)


def prepare():
    """Worker entry: write the weights and inputs of `prepare_weights` (TensorFlow backend)."""
    import json

    prepare_weights(*json.loads(sys.argv[1]))


def prepare_in_subprocess(root, families, batches, length, tiny):
    import json
    import subprocess

    env = child_environment(TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    proc = subprocess.run(
        [sys.executable, "-c", "import zoo_benchmarks.weights as w; w.prepare()",
         json.dumps([root, families, batches, length, tiny])],
        capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"preparing the benchmark weights failed:\n{proc.stderr[-4000:]}")
