"""Pretrain docs/generate.md's IMDB GPT on a GPU with JAX, where TensorFlow is not installed.

    python -m zoo_benchmarks.lm_on_gpu --data imdb_blocks.npz --out OUT [--steps 2880]

The blocks are the ones `zoo train --experiment gpt1/pretrain_imdb` reads (its shards'
train and dev 128-token blocks and their next-token labels, saved as NumPy by
`zoo_tasks.runs.load_task(...).dataset/eval_dataset`), so the model, the objective (GPT-1
section 3.1) and the held-out blocks are the config's; what differs is the machine (JAX on a
GPU), Keras' own AdamW and more steps than 2 CPU cores give in an hour. It writes the
weights (`weights_K.npz`, `model.get_weights()` order, in files under 16 MB) and
`history.json` (the training loss, the held-out loss and perplexity = exp(mean token
cross-entropy) after each epoch, seconds, the device).
"""

import argparse
import json
import math
import pathlib
import time

import keras
import numpy as np

import zoo

SIZE = dict(vocabulary_size=8000, num_layers=4, hidden_dim=256, num_heads=4,
            max_sequence_length=128)  # zoo/configs/experiments/gpt1/pretrain_imdb.yaml


def build():
    """The config's GPT-1 language model (`CausalLM`), untrained."""
    return zoo.models.CausalLM(zoo.models.create("gpt1", **SIZE))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m zoo_benchmarks.lm_on_gpu")
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--warmup-steps", type=int, default=300)
    args = parser.parse_args(argv)
    data = np.load(args.data)
    train_x, train_y = data["train_x"].astype("int32"), data["train_y"].astype("int32")
    dev_x, dev_y = data["dev_x"].astype("int32"), data["dev_y"].astype("int32")
    keras.utils.set_random_seed(0)
    model = build()
    steps = args.epochs * (len(train_x) // args.batch_size)
    schedule = keras.optimizers.schedules.CosineDecay(
        0.0, steps - args.warmup_steps, warmup_target=args.learning_rate,
        warmup_steps=args.warmup_steps)
    model.compile(optimizer=keras.optimizers.AdamW(schedule, weight_decay=0.01, clipnorm=1.0),
                  loss={"lm": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    started = time.perf_counter()
    history = model.fit(
        {"token_ids": train_x, "padding_mask": np.ones_like(train_x)}, {"lm": train_y},
        validation_data=({"token_ids": dev_x, "padding_mask": np.ones_like(dev_x)},
                         {"lm": dev_y}),
        batch_size=args.batch_size, epochs=args.epochs, verbose=2)
    seconds = time.perf_counter() - started
    out = pathlib.Path(args.out)
    weights = model.get_weights()
    chunk, part, size = [], 0, 0
    for i, w in enumerate(weights):
        chunk.append(w)
        size += w.nbytes
        if size > 12e6 or i == len(weights) - 1:
            np.savez(out / f"weights_{part}.npz", *chunk)
            chunk, part, size = [], part + 1, 0
    import jax  # the device's name (this runs on JAX)

    record = {"steps": steps, "batch_size": args.batch_size, "seconds": seconds,
              "device": str(jax.devices()[0].device_kind), "size": SIZE,
              "learning_rate": args.learning_rate, "warmup_steps": args.warmup_steps,
              "loss": history.history["loss"], "val_loss": history.history["val_loss"],
              "val_perplexity": [math.exp(v) for v in history.history["val_loss"]],
              "weight_files": part}
    (out / "history.json").write_text(json.dumps(record, indent=1))
    print(json.dumps({k: record[k] for k in ("steps", "seconds", "device", "val_perplexity")}))


def load(folder):
    """The model `main` trained, from its weight files in `folder`."""
    model = build()
    folder = pathlib.Path(folder)
    count = json.loads((folder / "history.json").read_text())["weight_files"]
    weights = []
    for part in range(count):
        with np.load(folder / f"weights_{part}.npz") as f:
            weights += [f[f"arr_{i}"] for i in range(len(f.files))]
    model.set_weights(weights)
    return model


if __name__ == "__main__":
    main()
