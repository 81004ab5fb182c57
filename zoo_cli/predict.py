"""`zoo predict`: run an exported SavedModel, or a checkpoint by name, on a JSON-lines file of
raw inputs.

  zoo predict --saved-model exports/mrpc/1 --input requests.jsonl
  zoo predict --model hf://ORG/sentiment --input reviews.jsonl     # no run, no export
  zoo predict --saved-model exports/squad/1 --input questions.jsonl --output answers.jsonl
  zoo predict --saved-model exports/mrpc/1 --input ids.jsonl --signature serving_ids

Each input line is one JSON object of the signature's inputs, e.g.
{"sentence1": "The cat sat.", "sentence2": "A cat was sitting."}; binary inputs (image_bytes)
are written as {"b64": "<base64>"}. These objects are exactly the `instances` of a TF
Serving REST request (POST /v1/models/NAME:predict {"instances": [...]}), so a file tested
here can be sent to the server as is. Each output line is the JSON object of the signature's
outputs for that input, in input order. Lines are batched (--batch-size); consecutive lines
whose inputs differ in shape (a `choices` list of another length) go to separate batches. Only
TensorFlow and tensorflow-text are used: what a TF Serving server runs. --model (any checkpoint
`zoo export --model` takes, with --task and --set as there) runs the signatures its export would
hold, traced in this process: the same answers, no SavedModel written.
"""

import base64
import json
import os
import sys

from zoo_cli.arguments import (
    add_command,
    add_model,
    add_model_options,
    check_model_options,
    load_model,
)


def register(subparsers):
    parser = add_command(subparsers, "predict", "run an exported SavedModel on JSON lines",
                         __doc__, run)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--saved-model", help="an export version directory (BASE/N), or BASE "
                        "for its highest version")
    add_model(source, help="a checkpoint by name or folder, with its head (`zoo export "
              "--model`'s)")
    add_model_options(parser)
    parser.add_argument("--input", required=True, help="JSON lines, one object of signature "
                        "inputs per line ('-' for stdin)")
    parser.add_argument("--output", default=None,
                        help="write the JSON lines here (atomically) instead of stdout")
    parser.add_argument("--signature", default="serving_default")
    parser.add_argument("--batch-size", type=int, default=32)


def resolve_version(path):
    """`path` itself if it holds a saved_model.pb, else its highest numeric version."""
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files

    if files.isfile(os.path.join(path, "saved_model.pb")):
        return path
    versions = sorted((int(n) for n in files.listdir(path) if n.isdigit()), reverse=True) \
        if files.isdir(path) else []
    if not versions:
        raise FileNotFoundError(f"--saved-model {path}: no saved_model.pb and no version "
                                "directory")
    return os.path.join(path, str(versions[0]))


def read_requests(path):
    """(line number, object) of each non-blank line; a bad line is an error naming it."""
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files

    file = sys.stdin if path == "-" else files.open(path, encoding="utf-8")
    with file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}, line {number}: not JSON ({error})") from None
            if not isinstance(request, dict):
                raise ValueError(f"{path}, line {number}: expected a JSON object of inputs, "
                                 f"found {type(request).__name__}")
            yield number, request


def _decode(value):
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _shape(value):
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        value = value[0] if value else None
    return tuple(shape)


def _jsonable(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


class Predictor:
    """A loaded signature: `predictor(batch)` for a list of input dicts -> list of outputs."""

    def __init__(self, saved_model, signature="serving_default", model=None):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops the graph uses)

        if model is not None:  # a `zoo_tasks.LoadedRun`: its signatures, traced here
            self.path, self.function = model.path, model.signature(signature)
            self.specs = self.function.specs
            return
        self.path = resolve_version(saved_model)
        self.model = tf.saved_model.load(self.path)
        if signature not in self.model.signatures:
            raise KeyError(f"--signature {signature}: {self.path} has "
                           f"{', '.join(sorted(self.model.signatures))}")
        self.function = self.model.signatures[signature]
        self.specs = self.function.structured_input_signature[1]

    def check(self, where, request):
        """The request's inputs in signature order; a missing or unknown key is an error."""
        missing = sorted(set(self.specs) - set(request))
        unknown = sorted(set(request) - set(self.specs))
        if missing or unknown:
            raise KeyError(f"{where}: " + "; ".join(
                ([f"missing input(s) {', '.join(missing)}"] if missing else [])
                + ([f"unknown input(s) {', '.join(unknown)}"] if unknown else []))
                + f" (the signature takes {', '.join(sorted(self.specs))})")
        return {key: _decode(request[key]) for key in self.specs}

    def __call__(self, batch, where="batch"):
        import numpy as np
        import tensorflow as tf

        tensors = {}
        for key, spec in self.specs.items():
            values = [request[key] for request in batch]
            try:
                tensors[key] = tf.constant(np.array(values, dtype=object if spec.dtype ==
                                                    tf.string else spec.dtype.as_numpy_dtype))
            except (ValueError, TypeError) as error:
                raise ValueError(f"{where}: input {key}: {error}") from None
        outputs = self.function(**tensors)
        outputs = {key: value.numpy().tolist() for key, value in outputs.items()}
        return [{key: _jsonable(value[i]) for key, value in outputs.items()}
                for i in range(len(batch))]


def predict_lines(predictor, requests, batch_size, write, total=None):
    """Feed (line, request) pairs through `predictor` in batches; `write` gets each result."""
    from zoo.progress import bar as progress_bar  # lazy: `zoo --help` imports this module

    batch, shapes, first = [], None, None
    count = 0
    with progress_bar(total=total, unit="line", desc="predict", disable=None) as bar:
        def flush():
            nonlocal batch
            if batch:
                for result in predictor(batch, where=f"lines {first}-{line}"):
                    write(result)
                bar.update(len(batch))
            batch = []

        line = None
        for number, request in requests:
            inputs = predictor.check(f"line {number}", request)
            key = {name: _shape(value) for name, value in inputs.items()}
            if batch and (key != shapes or len(batch) >= batch_size):
                flush()
            if not batch:
                first, shapes = number, key
            line = number
            batch.append(inputs)
            count += 1
        flush()
    return count


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files
    from zoo.files import write_text  # lazy: as above
    from zoo.storage import storage_operation  # lazy: as above

    check_model_options(args)
    model = None if args.model is None else load_model(args)
    predictor = Predictor(args.saved_model, args.signature, model=model)
    total = None
    if args.input != "-":
        with files.open(args.input, encoding="utf-8") as file:
            total = sum(1 for line in file if line.strip())
    lines = []
    write = (lambda result: lines.append(json.dumps(result, ensure_ascii=False))) \
        if args.output else (lambda result: print(json.dumps(result, ensure_ascii=False),
                                                  flush=True))
    count = predict_lines(predictor, read_requests(args.input), args.batch_size, write, total)
    if args.output:
        with storage_operation("writing the predictions", args.output):  # full, read-only
            write_text(args.output, "".join(line + "\n" for line in lines))
        print(f"{count} predictions written to {args.output}", file=sys.stderr)
    return 0
