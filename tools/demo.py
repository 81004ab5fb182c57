"""`zoo demo`: build every preset, run one forward pass, print a table.

The main job of `make demo` until training lands: it shows every model builds with the
published parameter count and runs on this machine.
"""

import time

import numpy as np


def register(subparsers):
    parser = subparsers.add_parser(
        "demo", help="build every preset, run a forward pass, print a table",
        description=__doc__,
    )
    parser.add_argument("--presets", nargs="*", default=None,
                        help="preset names (default: all of them)")
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--sequence-length", type=int, default=128,
                        help="tokens per text input")
    parser.set_defaults(func=run)


def run(args):
    import keras
    from tqdm import tqdm

    import zoo

    names = args.presets or zoo.models.names()
    rows = []
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}; "
          f"batch {args.batch_size}, sequence length {args.sequence_length}")
    for name in tqdm(names, desc="presets", unit="model"):
        start = time.perf_counter()
        model = zoo.models.create(name)
        built = time.perf_counter() - start
        inputs = example_inputs(model, args.batch_size, args.sequence_length, np.random.default_rng(0))
        model(inputs)  # first call traces; time the second
        start = time.perf_counter()
        outputs = model(inputs)
        forward = time.perf_counter() - start
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in outputs.items())
        rows.append((name, f"{model.count_params():,}", shapes, f"{built:.1f}", f"{forward:.2f}"))
        del model
        keras.backend.clear_session()
    header = ("preset", "parameters", "outputs", "build s", "forward s")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths)] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)))
    return 0


def example_inputs(model, batch_size, sequence_length, rng):
    """Random inputs of the right names, dtypes and shapes for any zoo backbone."""
    if "images" in model.input:
        size, channels = model.image_size, model.num_channels
        return {"images": rng.standard_normal((batch_size, size, size, channels), "float32")}
    ids = rng.integers(1, model.vocabulary_size, (batch_size, sequence_length)).astype("int32")
    inputs = {"token_ids": ids, "padding_mask": np.ones_like(ids)}
    if "segment_ids" in model.input:
        inputs["segment_ids"] = np.zeros_like(ids)
    return inputs
