"""BERT pretraining steps on one GPU: zoo on JAX against transformers on torch (issue #42).

    KERAS_BACKEND=jax python -m zoo_benchmarks.gpu --preset bert_base --batch 256

The same model size, batch and recipe as `zoo benchmark pretrain` (masked LM + NSP at 128
tokens, 20 masked positions a sequence, AdamW with BERT's decay exclusions, clipping to global
norm 1, dropout 0.1), in mixed bfloat16 on both sides: zoo's `BertMaskedLM` under Keras's
`mixed_bfloat16` policy (float32 weights, bfloat16 compute), `train_on_batch` jit-compiled by
XLA; transformers' `BertForPreTraining` under `torch.autocast(bfloat16)` (float32 weights),
eager and `torch.compile`, with its own loss (the vocabulary projection at every position) and
with zoo_benchmarks.transformers_recipe's (the masked positions only, as zoo and BERT's
run_pretraining.py). Each library runs in a process of its own (JAX and torch each take the
GPU's memory their own way); the weights are random (a speed check: the loss is printed as a
sanity check only). Prints a Markdown table: sequences/s, tokens/s, ms per step, and zoo's
speed against each transformers mode. Needs no TensorFlow: zoo's models run on JAX alone.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from zoo_benchmarks import transformers_recipe as recipe
from zoo_benchmarks.common import child_environment
from zoo_benchmarks.contenders import pretraining_batch


def _data(batch, length, vocabulary_size):
    import numpy as np

    rng = np.random.default_rng(0)
    data = {"token_ids": rng.integers(1000, vocabulary_size, (batch, length)).astype("int32"),
            "segment_ids": (np.arange(length) >= length // 2).astype("int32")[None].repeat(
                batch, 0),
            "padding_mask": np.ones((batch, length), "int32")}
    return pretraining_batch(data)


def _timed(step, warmup, steps):
    """(seconds per step, last loss): `warmup` untimed steps (compilation), then `steps`."""
    for _ in range(warmup):
        loss = step()
    start = time.perf_counter()
    for _ in range(steps):
        loss = step()  # each returns a float: the device has finished the step
    return (time.perf_counter() - start) / steps, loss


def run_zoo(args):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras
    import numpy as np

    if keras.backend.backend() == "jax" and args.variant == "threefry_gpu_kernel":
        import jax

        # Dropout's random bits: JAX lowers its generator (threefry, the one Keras's seeds
        # fit) to XLA arithmetic; this flag lowers it to a CUDA kernel instead. A user's
        # choice (JAX_THREEFRY_GPU_KERNEL_LOWERING=1), timed both ways: on an H200 XLA's own
        # lowering was the faster (docs/benchmarks.md).
        jax.config.update("jax_threefry_gpu_kernel_lowering", True)
    # lazy: after the backend and JAX's flags are set (Keras reads them on import)
    import zoo
    from zoo.optimization import build_optimizer  # lazy: as above

    keras.mixed_precision.set_global_policy(args.policy)
    x, y, weights = _data(args.batch, args.length, 30522)
    # "no_attention_dropout" is a diagnostic, not a contender: what dropout on the attention
    # probabilities costs zoo's step (transformers keeps its 0.1).
    backbone = zoo.models.create(args.preset, max_sequence_length=512, **(
        {"attention_dropout": 0.0} if args.variant == "no_attention_dropout" else {}))
    model = zoo.models.BertMaskedLM(backbone)
    sparse = keras.losses.SparseCategoricalCrossentropy
    model.compile(optimizer=build_optimizer(1e-4, 10_000, 100, model=model),
                  loss={"mlm": sparse(from_logits=True, reduction="mean_with_sample_weight"),
                        "nsp": sparse(from_logits=True)},
                  jit_compile=True)

    def step():
        return float(np.ravel(model.train_on_batch(x, y, sample_weight=weights))[0])

    seconds, loss = _timed(step, args.warmup, args.steps)
    mode = "jit" if args.variant == "default" else f"jit, {args.variant}"
    return [{"library": "zoo", "backend": keras.backend.backend(), "mode": mode,
             "policy": args.policy, "seconds": seconds, "loss": loss}]


def run_transformers(args):
    """Yields a row a mode as it is timed."""
    import torch
    import transformers

    # lazy: imports zoo, hence Keras, which the parent process never loads
    from zoo.models.presets import PRESETS

    size = PRESETS[args.preset][1]
    config = transformers.BertConfig(
        vocab_size=size["vocabulary_size"], hidden_size=size["hidden_dim"],
        num_hidden_layers=size["num_layers"], num_attention_heads=size["num_heads"],
        intermediate_size=4 * size["hidden_dim"], hidden_act="gelu")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    batch = {key: torch.from_numpy(value).to(device) for key, value in
             recipe.pretraining_batch(*_data(args.batch, args.length, 30522)).items()}
    for mode in args.torch_modes:
        # torch.compile of the masked-positions loss would break its graph at the boolean
        # selection (a shape known only at run time): compiled, transformers' own loss only.
        for loss_name in (("all positions",) if mode == "compile" else
                          ("all positions", "masked positions")):
            torch.manual_seed(0)
            model = transformers.BertForPreTraining(config).to(device)
            model.train()
            train = argparse.Namespace(optimizer="adamw", learning_rate=1e-4, weight_decay=0.01,
                                       adam_epsilon=1e-6, schedule="linear")  # zoo's defaults
            optimizer, _ = recipe.optimizer(model, train, 10_000, 100)
            module = torch.compile(model) if mode == "compile" else model

            def compute(module=module, masked=loss_name == "masked positions"):
                return recipe.training_loss(module, batch) if masked else module(**batch).loss

            def step(compute=compute, model=model, optimizer=optimizer):
                with torch.autocast(device, dtype=torch.bfloat16):
                    loss = compute()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                return float(loss.detach())

            seconds, loss = _timed(step, args.warmup, args.steps)
            yield {"library": "transformers", "backend": "torch", "mode": mode,
                   "loss_over": loss_name, "policy": "autocast bfloat16", "seconds": seconds,
                   "loss": loss}
            del model, module, optimizer, compute
            if device == "cuda":
                torch.cuda.empty_cache()


def device_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=30)
        return out.stdout.strip() or "no GPU"
    except (OSError, subprocess.SubprocessError):
        return "no GPU (nvidia-smi not found)"


def report(args, rows):
    tokens = args.batch * args.length
    lines = [f"Command: `python -m zoo_benchmarks.gpu --preset {args.preset} --batch "
             f"{args.batch} --steps {args.steps}`; device: {device_name()}; batch {args.batch} x "
             f"{args.length} tokens, mean of {args.steps} steps after {args.warmup} untimed.", "",
             "| library | backend | mode | loss over | precision | sequences/s | tokens/s | "
             "ms per step | loss |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        lines.append(f"| {row['library']} | {row['backend']} | {row['mode']} | "
                     f"{row.get('loss_over', 'masked positions')} | {row['policy']} | "
                     f"{args.batch / row['seconds']:,.1f} | {tokens / row['seconds']:,.0f} | "
                     f"{1000 * row['seconds']:.1f} | {row['loss']:.3f} |")
    lines.append("")
    for ours in (row for row in rows if row["library"] == "zoo"):
        for row in rows:
            if row["library"] == "transformers":
                lines.append(f"zoo {ours['mode']} / transformers {row['mode']} "
                             f"({row['loss_over']}): {row['seconds'] / ours['seconds']:.2f}x")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m zoo_benchmarks.gpu",
        description="BERT pretraining steps on one GPU: zoo on JAX (mixed_bfloat16, XLA) "
                    "against transformers' BertForPreTraining (bf16 autocast, eager and "
                    "torch.compile).")
    parser.add_argument("--preset", default="bert_base")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--policy", default="mixed_bfloat16")
    parser.add_argument("--torch-modes", nargs="+", default=["eager", "compile"],
                        choices=["eager", "compile"])
    parser.add_argument("--zoo-variants", nargs="+", default=["default", "threefry_gpu_kernel"],
                        choices=["default", "threefry_gpu_kernel", "no_attention_dropout"],
                        help="zoo as it is, with JAX's threefry_gpu_kernel_lowering, and "
                             "without attention dropout (a diagnostic)")
    parser.add_argument("--only", choices=["zoo", "transformers"], help=argparse.SUPPRESS)
    parser.add_argument("--variant", default="default", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.only:
        for row in run_zoo(args) if args.only == "zoo" else run_transformers(args):
            print("ROW " + json.dumps(row), flush=True)
        return 0
    rows = []
    argv_ = sys.argv[1:] if argv is None else argv
    for only, extra in [*(("zoo", ["--variant", v]) for v in args.zoo_variants),
                        ("transformers", [])]:
        # The torch process imports zoo (its presets) on Keras's torch backend: no JAX there
        # to take the GPU's memory.
        env = child_environment(KERAS_BACKEND=(os.environ.get("KERAS_BACKEND", "jax")
                                               if only == "zoo" else "torch"))
        # Each row is printed as it comes (a killed run keeps the rows it finished).
        with subprocess.Popen([sys.executable, "-m", "zoo_benchmarks.gpu", *argv_,
                               "--only", only, *extra], env=env, stdout=subprocess.PIPE,
                              text=True) as child:
            for line in child.stdout:
                if line.startswith("ROW "):
                    rows.append(json.loads(line[4:]))
                    print(line.rstrip(), file=sys.stderr, flush=True)
        if child.returncode:
            print(f"{only} failed (exit {child.returncode})", file=sys.stderr, flush=True)
    print(report(args, rows))
    return 0 if {row["library"] for row in rows} == {"zoo", "transformers"} else 1

if __name__ == "__main__":
    sys.exit(main())
