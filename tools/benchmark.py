"""`zoo benchmark`: side-by-side speed against keras-hub, transformers and ONNX Runtime.

  zoo benchmark models      BERT-base, GPT-1 and ViT-B/16 forward (batch 8 and batch-1 latency):
                            zoo vs keras-hub on TensorFlow and JAX, transformers (torch) and
                            ONNX Runtime, same weights, each library in its own process
  zoo benchmark finetune    one BERT-base fine-tuning step (forward, backward, AdamW), same set
  zoo benchmark bucketing   fine-tuning examples/s with dynamic padding vs pad-to-128 (GLUE mix)
  zoo benchmark serving     raw text -> label (texts/s): zoo's exported SavedModel (float32 and
                            bfloat16) vs transformers' text-classification pipeline, same weights
  zoo benchmark tokenizers  WordPiece (tokens/s), zoo in tf.data vs transformers' BertTokenizerFast
  zoo benchmark all         all of the above; writes docs/benchmarks.md (--out) with the machine,
                            the versions, every command, and each ratio against its target

Ratios > 1 mean zoo is faster. Each run prints markdown tables.
"""

import argparse
import contextlib
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

_BACKENDS = ("tensorflow", "jax")


def register(subparsers):
    parser = subparsers.add_parser(
        "benchmark", help="compare speed with keras-hub / transformers / ONNX Runtime",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    parsers = {}
    for name, help_text in (
            ("models", "forward throughput and batch-1 latency of the three families"),
            ("finetune", "one BERT-base fine-tuning step per library and backend"),
            ("bucketing", "fine-tuning examples/s: data.pad_to_multiple_of vs pad-to-length"),
            ("serving", "exported SavedModel (raw text in, label out) vs transformers' pipeline"),
            ("tokenizers", "WordPiece throughput in tf.data vs transformers' fast tokenizer"),
            ("all", "every benchmark above; writes docs/benchmarks.md")):
        parsers[name] = targets.add_parser(name, help=help_text)
        parsers[name].set_defaults(func=run, target=name)
    for name in ("models", "all"):
        parsers[name].add_argument("--families", nargs="+", default=list(FAMILIES),
                                   choices=list(FAMILIES))
        parsers[name].add_argument("--batches", nargs="+", type=int, default=[8, 1],
                                   help="batch sizes; the smallest is the latency row")
        parsers[name].add_argument("--bf16", action=argparse.BooleanOptionalAction,
                                   default=True, help="also time bfloat16 on Keras: "
                                   "mixed_bfloat16, and zoo with bfloat16 weights")
    for name in ("models", "finetune", "all"):
        parsers[name].add_argument("--tiny", action="store_true",
                                   help="two-layer models instead of the paper's sizes: checks "
                                        "the benchmark itself; the figures mean nothing")
        parsers[name].add_argument("--backends", nargs="+", default=list(_BACKENDS),
                                   choices=_BACKENDS, help="Keras backends for zoo and keras-hub")
    for name, parser in parsers.items():
        parser.add_argument("--repeats", type=int, default=5,
                            help="timed calls or passes per contender (the median is reported)")
        if name != "models":
            parser.add_argument("--batch-size", type=int, default=None,
                                help="default: 8 (finetune, serving), 32 (bucketing), "
                                     "256 (tokenizers)")
    for name in ("models", "finetune", "bucketing", "serving", "all"):
        parsers[name].add_argument("--sequence-length", type=int, default=128)
    for name in ("bucketing", "serving"):
        parsers[name].add_argument("--preset", default="bert_base")
    parsers["bucketing"].add_argument("--tasks", nargs="+", default=["glue/mrpc", "glue/sst2"])
    parsers["bucketing"].add_argument("--steps", type=int, default=4,
                                      help="timed steps per setting")
    parsers["bucketing"].add_argument("--multiple", type=int, default=16)
    parsers["serving"].add_argument("--texts", type=int, default=256,
                                    help="texts per timed pass")
    tokenizers = parsers["tokenizers"]
    tokenizers.add_argument("--corpus", nargs="+",
                            help="plain-text files, one text per line (default: the English "
                                 "reference text CPython ships in pydoc_data.topics)")
    tokenizers.add_argument("--vocab", help="directory with vocab.txt (default: train a "
                                            "--vocab-size WordPiece vocabulary on the corpus)")
    # 1000 on the default corpus splits words into 1.22 pieces on average, close to BERT's
    # vocabulary on English text; a larger one there keeps every word whole.
    tokenizers.add_argument("--vocab-size", type=int, default=1000)
    tokenizers.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True)
    parsers["all"].add_argument("--out", default=os.path.join("docs", "benchmarks.md"),
                                help="the markdown file to write (atomically)")
# === Models: forward and fine-tuning step, each library in its own worker process ===
#
# Each contender (a library on a backend) runs in its own interpreter, as a server would:
# in one process, TensorFlow's spinning thread pools slowed torch 3x (see run_serving). The
# parent starts the workers, then asks them in turn for one timed call each, so a drift in
# machine load falls on all of them alike; between two calls it sleeps briefly so that the
# previous worker's thread pools stop spinning. All workers load the same weights and inputs,
# and the outputs are compared before anything is timed.

FAMILIES = {
    # family: (zoo preset, keras-hub backbone or None, transformers class)
    "bert": ("bert_base", "BertBackbone", "BertModel"),
    "gpt1": ("gpt1", None, "OpenAIGPTModel"),  # keras-hub has no GPT-1
    "vit": ("vit_base16", "ViTBackbone", "ViTModel"),
}
LIBRARIES = ("zoo", "keras-hub", "transformers", "onnxruntime")
_PAUSE = 0.2  # seconds between two timed calls of different workers


def _prepare_weights(root, families, batches, length, tiny=False):
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

    import zoo
    from zoo.convert import from_keras_hub, to_huggingface

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


def _keras_contenders(spec, library):
    """name -> callable for zoo or keras-hub on the current Keras backend."""
    import json

    import keras
    import numpy as np

    folder = os.path.join(spec["root"], spec["family"])
    backend = keras.backend.backend()

    def build(policy, training):
        if library == "zoo":
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
                # for keras-hub's checkpoints). zoo's default erf GELU costs 15 ms more a step
                # (46 vs 31 ms for the 12 GELUs, forward and backward; XLA profile, BERT-base,
                # batch 8 x 128): under 1 % of a step.
                config.update(activation="gelu_approximate")
            backbone = getattr(zoo.models, saved["class_name"]).from_config(config)
            backbone.load_weights(os.path.join(folder, "zoo.weights.h5"))
            if training:
                return zoo.models.BertClassifier(backbone, 2, dropout=0.1)
            if policy == "bfloat16":
                from zoo import export

                return export.with_bfloat16_weights(backbone)
            return backbone
        import keras_hub

        # The local preset `_prepare_weights` wrote: from_preset never reaches a hub.
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


def _transformers_contenders(spec):
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
        if spec["kind"] == "train":
            # The tanh GELU, as keras-hub and zoo in the fine-tuning step (see _keras_contenders).
            model = transformers.BertForSequenceClassification.from_pretrained(
                hf, num_labels=2, hidden_act="gelu_pytorch_tanh")
            model.train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5, weight_decay=0.01,
                                          eps=1e-7)  # Keras's default, as the others

            def step(model=model, optimizer=optimizer, inputs=inputs, labels=labels):
                loss = model(**inputs, labels=labels).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return float(loss)

            fns[f"eager float32 {batch}"] = step
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


def _onnxruntime_contenders(spec):
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


def worker():
    """A benchmark worker: builds its contenders, then times one call per request on stdin."""
    import json

    spec = json.loads(sys.argv[1])
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the replies
    library = spec["library"]
    if library in ("zoo", "keras-hub"):
        fns = _keras_contenders(spec, library)
    elif library == "transformers":
        fns = _transformers_contenders(spec)
    else:
        fns = _onnxruntime_contenders(spec)
    last = {}
    for name, fn in fns.items():  # the first calls trace or compile: not timed
        last[name] = fn()
        fn()
    replies.write(json.dumps({"ready": list(fns)}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        fn = fns[request["name"]]
        if request["op"] == "time":
            start = time.perf_counter()
            last[request["name"]] = fn()
            replies.write(json.dumps({"seconds": time.perf_counter() - start}) + "\n")
        else:  # "output": a corner of the sequence output, or the loss
            value = last[request["name"]]
            if not isinstance(value, float):
                value = [value[0, :4, :8].tolist(), value[-1, -4:, -8:].tolist()]
            replies.write(json.dumps({"output": value}) + "\n")


class _Worker:
    """One worker process: `(library, backend)`; its contenders are named "mode policy batch"."""

    def __init__(self, library, backend, spec):
        import json
        import subprocess

        self.label = library if backend is None else f"{library} {backend}"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        if backend:
            env["KERAS_BACKEND"] = backend
        spec = dict(spec, library=library)
        self.log = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            [sys.executable, "-c", "import tools.benchmark as b; b.worker()", json.dumps(spec)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.names = self._reply()["ready"]

    def _reply(self):
        import json

        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self.log.seek(0)
            killed = " (killed: out of memory?)" if self.process.returncode == -9 else ""
            raise RuntimeError(f"benchmark worker {self.label} exited with "
                               f"{self.process.returncode}{killed}:\n{self.log.read()[-4000:]}")
        return json.loads(line)

    def ask(self, op, name):
        import json

        try:
            self.process.stdin.write(json.dumps({"op": op, "name": name}) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # the worker died: _reply reports its log
        return self._reply()

    def close(self):
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except Exception:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _groups(family, kind, backends, bf16):
    """Lists of (library, backend, policies, modes) workers that are timed in alternation.

    Forward models are small: every contender of a family runs at once. A training worker
    holds a model, its gradients and two AdamW slots (about 3.5 GB for BERT-base on
    TensorFlow), so fine-tuning alternates zoo and keras-hub one backend and mode at a time.
    """
    keras_libraries = ["zoo"] + (["keras-hub"] if FAMILIES[family][1] else [])
    if kind == "train":
        groups = [[(library, backend, ["float32"], [mode]) for library in keras_libraries]
                  for backend in backends
                  for mode in (["graph", "xla"] if backend == "tensorflow" else ["jit"])]
        return groups + [[("transformers", None, ["float32"], ["eager"])]]
    policies = ["float32"] + (["mixed_bfloat16"] if bf16 else [])
    group = [(library, backend, policies + (["bfloat16"] if bf16 and library == "zoo" else []),
              None) for backend in backends for library in keras_libraries]
    return [group + [("transformers", None, ["float32"], None),
                     ("onnxruntime", None, ["float32"], None)]]


def _time_family(root, family, kind, batches, length, backends, bf16, repeats, progress):
    """{(worker label, contender name): (median seconds, check)}.

    The check is, for a forward pass, the largest absolute difference from transformers'
    output; for a training step, the last loss.
    """
    import numpy as np

    results = {}
    for group in _groups(family, kind, backends, bf16):
        workers = []
        try:
            for library, backend, policies, modes in group:
                progress(f"  starting {library}{' ' + backend if backend else ''} "
                         f"{' '.join(modes or [])} ({family}, {kind})")
                workers.append(_Worker(library, backend, dict(
                    root=root, family=family, kind=kind, batches=batches, length=length,
                    policies=policies, modes=modes)))
            for batch in batches:
                calls = [(w, n) for w in workers for n in w.names if n.endswith(f" {batch}")]
                times = {key: [] for key in calls}
                for _ in range(repeats):
                    for w, name in calls:
                        time.sleep(_PAUSE)
                        times[(w, name)].append(w.ask("time", name)["seconds"])
                outputs = {(w, n): w.ask("output", n)["output"] for w, n in calls}
                reference = next((v for (w, n), v in outputs.items()
                                  if w.label == "transformers"), None)
                for (w, name), seconds in times.items():
                    value = outputs[(w, name)]
                    if kind == "forward":
                        value = float(np.max(np.abs(np.asarray(value) - np.asarray(reference))))
                    results[(w.label, name)] = (statistics.median(seconds), value)
        finally:
            for w in workers:
                w.close()
    return results

def _split(name):
    mode, policy, batch = name.split()
    return mode, policy, int(batch)


def _best(results, label, batch, policy="float32"):
    """The fastest (seconds, contender name) of one worker at one batch size and policy."""
    found = [(seconds, name) for (lab, name), (seconds, _) in results.items()
             if lab == label and _split(name)[2] == batch and _split(name)[1] == policy]
    return min(found) if found else (None, None)


def _target(ratio, goal=None, lower_is_better=False):
    if ratio is None:
        return "n/a"
    if goal is None:
        return f"{ratio:.2f} (no target)"
    met = ratio <= goal if lower_is_better else ratio >= goal
    return f"{ratio:.3f} ({'met' if met else 'missed'}: target {'≤' if lower_is_better else '≥'} {goal})"


def section_models(args, progress=print):
    """Forward throughput and batch-1 latency of BERT-base, GPT-1 and ViT-B/16, all libraries."""
    lines = [
        "## Models: forward pass, zoo vs keras-hub, transformers and ONNX Runtime", "",
        f"Command: `zoo benchmark models --repeats {args.repeats}` (random weights, the same in "
        "every library: keras-hub's backbone is created, saved as a preset, converted to zoo "
        "and written as a transformers checkpoint, which torch and ONNX Runtime load; the same "
        f"inputs; dropout off; BERT and GPT-1 take {args.sequence_length} tokens per sequence, "
        "ViT 224x224 images, i.e. 197 tokens). Each library runs in its own process; the "
        "parent asks each in turn for one timed call and reports the median of "
        f"{args.repeats}; the first two calls of each trace or compile and are not timed. "
        "TensorFlow runs `tf.function` without and with XLA (`jit_compile=True`), JAX "
        "`predict_on_batch` (jit); transformers runs eager torch under `inference_mode`; "
        "ONNX Runtime runs transformers' model exported by `torch.onnx.export(dynamo=True)` "
        "at `ORT_ENABLE_ALL`. Max diff: the largest absolute difference from transformers' "
        "output on two corners of the sequence output (keras-hub's BERT uses the tanh GELU, "
        "the others the exact one). dtype: `mixed_bfloat16` is the Keras policy (float32 "
        "weights, cast to bfloat16 at every call; bfloat16 compute); `bfloat16` is zoo's "
        "`export.with_bfloat16_weights`, what `zoo export` serves: the same computation, bit "
        "for bit, with the dense and embedding weights stored in bfloat16 (LayerNorm keeps "
        "float32 weights and computes in float32 in both).", ""]
    summary = []
    for family in args.families:
        results = _time_family(args.root, family, "forward", args.batches, args.sequence_length,
                               args.backends, args.bf16, args.repeats, progress)
        lines += [f"### {FAMILIES[family][0]}{' (--tiny: 2 layers, width 64)' * args.tiny}", "",
                  "| library | backend | mode | dtype | batch | seq/s | ms per call | max diff |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for (label, name), (seconds, diff) in sorted(
                results.items(), key=lambda kv: (_split(kv[0][1])[2] != args.batches[0],
                                                 _split(kv[0][1])[2], kv[1][0])):
            library, _, backend = label.partition(" ")
            mode, policy, batch = _split(name)
            lines.append(f"| {library} | {backend or 'torch' if library == 'transformers' else backend or '-'} "
                         f"| {mode} | {policy} | {batch} | {batch / seconds:.2f} "
                         f"| {1000 * seconds:.1f} | {diff:.1e} |")
        lines.append("")
        big, one = max(args.batches), min(args.batches)
        ours = {b: {bk: _best(results, f"zoo {bk}", b) for bk in args.backends}
                for b in args.batches}
        zoo_best = {b: min(v for v in ours[b].values() if v[0]) for b in args.batches}
        torch_time = _best(results, "transformers", big)[0]
        ort_time = _best(results, "onnxruntime", one)[0]
        for backend in args.backends:
            hub = _best(results, f"keras-hub {backend}", big)[0]
            if hub:
                summary.append((f"{family} forward vs keras-hub {backend}, batch {big}",
                                _target(hub / ours[big][backend][0], 1.05)))
        summary.append((f"{family} forward vs transformers (torch), batch {big}",
                        _target(torch_time / zoo_best[big][0], 1.3)))
        if ort_time:
            summary.append((f"{family} batch-{one} latency, zoo / ONNX Runtime",
                            _target(zoo_best[one][0] / ort_time, 1.0, lower_is_better=True)))
        if args.bf16 and "tensorflow" in args.backends:
            hub = _best(results, "keras-hub tensorflow", big)[0]
            bf16 = _best(results, "zoo tensorflow", big, "bfloat16")[0]
            mixed = _best(results, "zoo tensorflow", big, "mixed_bfloat16")[0]
            if hub and bf16:
                summary.append((f"{family} zoo bfloat16 forward vs keras-hub float32 "
                                f"(tensorflow), batch {big}", _target(hub / bf16, 1.6)))
            if mixed and bf16:
                summary.append((f"{family} zoo bfloat16 weights vs zoo mixed_bfloat16 forward "
                                f"(tensorflow), batch {big}", _target(mixed / bf16)))
    return lines, summary


def section_finetune(args, progress=print):
    """One BERT-base fine-tuning step (forward, backward, AdamW) per library and backend."""
    batch_size = args.batch_size or 8
    lines = [
        "## Fine-tuning step: BERT-base classifier, zoo vs keras-hub and transformers", "",
        f"Command: `zoo benchmark finetune --repeats {args.repeats}` (batch "
        f"{batch_size} x {args.sequence_length} tokens, the same weights and inputs as "
        "the forward benchmark, each library's own sequence classifier on the pooled output "
        "with dropout 0.1, AdamW lr 2e-5 and weight decay 0.01, no metric; all three compute "
        "the tanh GELU, the only one keras-hub's BERT has; Keras: `train_on_batch`, "
        "TensorFlow without and with XLA, JAX jit; transformers: "
        "`BertForSequenceClassification` with `torch.optim.AdamW`, eager). Loss: the last "
        "step's loss, a sanity check (the heads start from different random weights).", "",
        "| library | backend | mode | steps/s | examples/s | s per step | loss |",
        "| --- | --- | --- | --- | --- | --- | --- |"]
    results = _time_family(args.root, "bert", "train", [batch_size], args.sequence_length,
                           args.backends, False, args.repeats, progress)
    for (label, name), (seconds, loss) in sorted(results.items(), key=lambda kv: kv[1][0]):
        library, _, backend = label.partition(" ")
        mode, _, batch = _split(name)
        lines.append(f"| {library} | {backend or 'torch'} | {mode} | {1 / seconds:.3f} "
                     f"| {batch / seconds:.2f} | {seconds:.2f} | {loss:.3f} |")
    lines.append("")
    summary = []
    for backend in args.backends:
        ours = _best(results, f"zoo {backend}", batch_size)[0]
        hub = _best(results, f"keras-hub {backend}", batch_size)[0]
        summary.append((f"fine-tuning step vs keras-hub {backend}",
                        _target(hub / ours, 1.1 if backend == "tensorflow" else None)))
    ours = min(_best(results, f"zoo {b}", batch_size)[0] for b in args.backends)
    summary.append(("fine-tuning step vs transformers (torch)",
                    _target(_best(results, "transformers", batch_size)[0] / ours)))
    return lines, summary


# === Tokenizers, bucketing, serving ===

def _corpus_lines(files):
    if files:
        lines = []
        for path in files:
            with open(path, encoding="utf-8") as file:
                lines += [line.rstrip("\r\n") for line in file]
    else:
        import pydoc_data.topics

        lines = "\n".join(pydoc_data.topics.topics.values()).split("\n")
    return [line for line in lines if line.strip()]


def section_tokenizers(args, progress=print):
    """WordPiece in a tf.data pipeline vs transformers' BertTokenizerFast, same vocabulary."""
    import tensorflow as tf
    import transformers

    from zoo import tokenizers

    corpus_files = getattr(args, "corpus", None)
    vocab_size = getattr(args, "vocab_size", 1000)
    lowercase = getattr(args, "lowercase", True)
    batch_size = args.batch_size or 256
    lines = _corpus_lines(corpus_files)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = getattr(args, "vocab", None)
        if vocab is None:
            corpus = os.path.join(tmp, "corpus.txt")
            with open(corpus, "w", encoding="utf-8") as file:
                file.writelines(line + "\n" for line in lines)
            vocab = os.path.join(tmp, "vocab")
            tokenizers.train_vocabulary([corpus], size=vocab_size, kind="wordpiece",
                                        out=vocab, lowercase=lowercase)
        ours = tokenizers.from_huggingface(vocab, lowercase=lowercase)
        theirs = transformers.BertTokenizerFast.from_pretrained(
            vocab, do_lower_case=lowercase, split_special_tokens=True)
    batches = [lines[i:i + batch_size] for i in range(0, len(lines), batch_size)]
    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(batch_size).map(
        ours, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)

    def run_ours():
        return [ids for ids in dataset]

    def run_theirs():
        return [theirs(batch, add_special_tokens=False)["input_ids"] for batch in batches]

    our_ids = [row for ids in run_ours() for row in ids.to_list()]  # warm-up: traces the map
    their_ids = [row for ids in run_theirs() for row in ids]
    tokens = sum(map(len, their_ids))
    same = sum(a == b for a, b in zip(our_ids, their_ids))
    times = {"zoo": [], "transformers": []}
    for _ in range(args.repeats):  # alternated passes
        for name, fn in (("zoo", run_ours), ("transformers", run_theirs)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rates = {name: tokens / statistics.median(t) for name, t in times.items()}
    ratio = rates["zoo"] / rates["transformers"]
    corpus = ("the English reference text CPython ships in `pydoc_data.topics`"
              if not corpus_files else ", ".join(corpus_files))
    lines_out = [
        "## Tokenizers: WordPiece throughput vs transformers", "",
        f"Command: `zoo benchmark tokenizers --repeats {args.repeats}`. Corpus: {corpus} "
        f"({len(lines):,} non-blank lines). Vocabulary: trained on that corpus by "
        f"`zoo data vocab` (`--vocab-size {vocab_size}`, which splits words into about 1.2 "
        "pieces on average, about what BERT's vocabulary does on English). zoo runs "
        f"`WordPieceTokenizer` in a tf.data pipeline (`batch({batch_size}).map(tokenizer, "
        "num_parallel_calls=AUTOTUNE)`); transformers runs `BertTokenizerFast(batch, "
        "add_special_tokens=False)` with its Rust thread pool. One warm-up pass each, then "
        f"the median of {args.repeats} alternated passes.", "",
        "| vocabulary | tokens | identical ids | zoo tokens/s | transformers tokens/s | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {'uncased' if lowercase else 'cased'}, {ours.vocabulary_size()} tokens "
        f"| {tokens:,} | {same:,}/{len(lines):,} lines | {rates['zoo']:,.0f} "
        f"| {rates['transformers']:,.0f} | {ratio:.2f} |", ""]
    return lines_out, [("WordPiece tokens/s vs transformers' fast tokenizer", _target(ratio))]
# Each contender runs in its own fresh interpreter, as a server would: measured in one process,
# TensorFlow's spinning thread pools cut torch's throughput by 3x (18 -> 5.4 texts/s).
_SERVE_ZOO = """
import json, statistics, sys, time
import tensorflow as tf
import tensorflow_text  # noqa: F401
path, texts_path, batch_size, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
texts = json.load(open(texts_path))
serve = tf.saved_model.load(path).signatures["serving_default"]
batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
def one_pass():
    return [l.decode() for b in batches for l in serve(sentence1=tf.constant(b))["label"].numpy()]
labels = one_pass()
times = []
for _ in range(repeats):
    start = time.perf_counter(); one_pass(); times.append(time.perf_counter() - start)
print(json.dumps({"rate": len(texts) / statistics.median(times), "labels": labels}))
"""
_SERVE_TRANSFORMERS = """
import json, statistics, sys, time
import torch, transformers
transformers.logging.set_verbosity_error()
path, texts_path, batch_size, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
length = int(sys.argv[5])
texts = json.load(open(texts_path))
pipe = transformers.pipeline("text-classification", model=path, tokenizer=path, device=-1)
def one_pass():
    with torch.no_grad():
        out = pipe(texts, batch_size=batch_size, truncation=True, max_length=length)
    return [r["label"].rsplit("_", 1)[-1] for r in out]
labels = one_pass()
times = []
for _ in range(repeats):
    start = time.perf_counter(); one_pass(); times.append(time.perf_counter() - start)
print(json.dumps({"rate": len(texts) / statistics.median(times), "labels": labels}))
"""



def _preset(args):
    """--preset of bucketing and serving; under `all`, bert_base (bert_tiny with --tiny)."""
    return getattr(args, "preset", "bert_tiny" if getattr(args, "tiny", False) else "bert_base")


def section_serving(args, progress=print):
    """Raw text to label: zoo's SavedModel signature vs transformers' pipeline, same weights.

    Both sides start from the same strings and end at a label: zoo's `serving_default`
    (tokenizer, packing with dynamic padding, model, softmax, label names, all in the graph;
    loaded with tf.saved_model.load in a process importing only tensorflow and
    tensorflow_text, as a server runs it) and transformers' `pipeline("text-classification")`
    (BertTokenizerFast, padding to the batch's longest, BertForSequenceClassification on
    torch, in its own process). Weights are copied from the zoo model, and the labels of both
    are compared on every text. Each contender warms up with one pass, then the median of
    --repeats passes is reported.
    """
    import json
    import subprocess

    import numpy as np
    import torch
    import transformers

    import tasks
    from zoo import config as config_lib
    from zoo import export, tokenizers
    from zoo.convert import to_huggingface

    preset = _preset(args)
    batch_size = args.batch_size or 8
    texts = getattr(args, "texts", 256)
    transformers.logging.set_verbosity_error()  # the classifier is copied in below
    lines = [line for line in _corpus_lines(None) if len(line.split()) >= 3][:texts]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as file:
            file.writelines(line + "\n" for line in _corpus_lines(None))
        texts_path = os.path.join(tmp, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as file:
            json.dump(lines, file)
        vocab = os.path.join(tmp, "vocab")
        tokenizers.train_vocabulary([corpus], size=8000, kind="wordpiece", out=vocab)
        config = config_lib.resolve("bert/glue_sst2", [
            f"model.preset={preset}", f"model.vocabulary={vocab}", "model.dropout=0",
            f"data.sequence_length={args.sequence_length}"])
        task = tasks.create("glue/sst2", config, check_data=False)
        keras_model = task.build_model()
        commands = {}
        for policy in ("float32", "mixed_bfloat16"):
            # As `zoo export` serves mixed_bfloat16: dense and embedding weights in bfloat16.
            model = keras_model if policy == "float32" else export.with_bfloat16_weights(
                keras_model)
            archive, _ = export.build_archive(task, model, None)
            path = os.path.join(tmp, policy)
            archive.write_out(path, verbose=False)
            commands[f"zoo SavedModel, {policy}"] = ["-c", _SERVE_ZOO, path]

        hf_dir = os.path.join(tmp, "hf")
        to_huggingface(keras_model.backbone, hf_dir)
        hf_model = transformers.BertForSequenceClassification.from_pretrained(
            hf_dir, num_labels=2)
        kernel, bias = (np.asarray(w) for w in keras_model.classifier.dense.weights)
        with torch.no_grad():
            hf_model.classifier.weight.copy_(torch.from_numpy(kernel.T.copy()))
            hf_model.classifier.bias.copy_(torch.from_numpy(bias.copy()))
        served = os.path.join(tmp, "hf_classifier")
        hf_model.save_pretrained(served)
        transformers.BertTokenizerFast(os.path.join(vocab, "vocab.txt"),
                                       do_lower_case=True).save_pretrained(served)
        commands["transformers pipeline (torch, float32)"] = ["-c", _SERVE_TRANSFORMERS, served]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        for name, command in commands.items():
            progress(f"  {name}")
            extra = [str(args.sequence_length)] if name.startswith("transformers") else []
            proc = subprocess.run([sys.executable, *command, texts_path, str(batch_size),
                                   str(args.repeats), *extra], capture_output=True, text=True,
                                  env=env, cwd=tmp)
            if proc.returncode:
                raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])

    reference = results["transformers pipeline (torch, float32)"]
    out = [
        "## Serving: raw text to label, exported SavedModel vs transformers' pipeline", "",
        f"Command: `zoo benchmark serving --repeats {args.repeats}` (a {preset} SST-2-style "
        "classifier with random weights and an 8,000-token WordPiece vocabulary learnt on the "
        "pydoc corpus; the same weights copied into transformers' "
        f"BertForSequenceClassification; {len(lines)} lines of the corpus, batch {batch_size}, "
        f"at most {args.sequence_length} tokens). zoo: `serving_default` of the export "
        "(tokenizer, packing with dynamic padding, model, softmax, label names in the graph), "
        "loaded in a process that imports only tensorflow and tensorflow_text. transformers: "
        "`pipeline(\"text-classification\")` (BertTokenizerFast, padding to the batch's "
        "longest) in its own process. Each warms up with one pass; the median of "
        f"{args.repeats} passes is reported; the contenders run one after the other.", "",
        "| contender | texts/s | ratio | labels equal to transformers' |",
        "| --- | --- | --- | --- |"]
    summary = []
    for name, result in results.items():
        same = sum(a == b for a, b in zip(result["labels"], reference["labels"]))
        ratio = result["rate"] / reference["rate"]
        out.append(f"| {name} | {result['rate']:.1f} | {ratio:.2f} | {same}/{len(lines)} |")
        if name.startswith("zoo"):
            summary.append((f"serving texts/s, {name} vs transformers' pipeline",
                            _target(ratio)))
    return out + [""], summary


def section_bucketing(args, progress=print):
    """Fine-tuning throughput on the sample data's length mix, dynamic padding vs fixed.

    The same model, optimizer and batches; only `data.pad_to_multiple_of` differs (0: every
    batch padded to --sequence-length). The first steps of each setting trace and are not
    timed; each bucket width traces once more (the TF trainer relaxes shapes), so the timed
    steps start after one pass over --steps warm-up batches.
    """
    import keras

    import tasks
    from zoo import config as config_lib
    from zoo.data.samples import LAYOUT, write_samples
    from zoo.tokenizers import train_vocabulary

    preset = _preset(args)
    names = getattr(args, "tasks", ["glue/mrpc", "glue/sst2"])
    steps, multiple = getattr(args, "steps", 4), getattr(args, "multiple", 16)
    batch_size = args.batch_size or 32
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_samples(os.path.join(tmp, "samples"))
        files = [os.path.join(tmp, "samples", LAYOUT[t]["train"]) for t in names]
        vocab = os.path.join(tmp, "vocab")
        train_vocabulary(files, size=2000, kind="wordpiece", out=vocab)
        for name in names:
            data_dir = os.path.dirname(os.path.join(tmp, "samples", LAYOUT[name]["train"]))
            rates, widths = {}, {}
            for pad in (0, multiple):
                progress(f"  {name}, data.pad_to_multiple_of={pad}")
                config = config_lib.resolve(f"bert/{name.replace('/', '_')}", [
                    f"model.preset={preset}", f"model.vocabulary={vocab}",
                    f"data.dir={data_dir}", f"data.sequence_length={args.sequence_length}",
                    f"data.pad_to_multiple_of={pad}", f"train.batch_size={batch_size}"])
                task = tasks.create(name, config, check_data=False)
                keras.utils.set_random_seed(0)
                model = task.build_model()
                task.compile(model, total_steps=1000, warmup_steps=10)
                stream = task.dataset("train", repeat=True)
                model.fit(stream, steps_per_epoch=steps, epochs=1, verbose=0)  # warm-up
                start = time.perf_counter()
                model.fit(stream, steps_per_epoch=steps, epochs=1, verbose=0)
                rates[pad] = steps * batch_size / (time.perf_counter() - start)
                widths[pad] = sorted({int(x["token_ids"].shape[-1])
                                      for x, *_ in stream.take(2 * steps)})
                keras.backend.clear_session()
            rows.append((name, rates, widths))
    out = [
        f"## Dynamic padding: fine-tuning examples/s, pad to the batch's longest vs pad to "
        f"{args.sequence_length}", "",
        f"Command: `zoo benchmark bucketing --steps {steps}` ({preset}, batch {batch_size}, "
        f"`data.sequence_length={args.sequence_length}`, the sample training files, a "
        "2,000-token WordPiece vocabulary learnt on them; the same model, optimizer and "
        f"batches, only `data.pad_to_multiple_of` 0 vs {multiple}; {steps} warm-up steps, then "
        f"{steps} timed steps per setting, one setting after the other). The gain is the "
        "padding removed: the sample sentences are short; real GLUE text is longer, so expect "
        "less there. The exported SavedModels always pad each request batch to its longest "
        "sequence (rounded up to 16).", "",
        f"| task | pad to {args.sequence_length} examples/s | pad to longest (multiple of "
        f"{multiple}) examples/s | ratio | widths seen |", "| --- | --- | --- | --- | --- |"]
    summary = []
    for name, rates, widths in rows:
        ratio = rates[multiple] / rates[0]
        out.append(f"| {name} (sample) | {rates[0]:.1f} | {rates[multiple]:.1f} | {ratio:.2f} "
                   f"| {', '.join(map(str, widths[multiple]))} |")
        summary.append((f"fine-tuning examples/s, dynamic padding vs pad-to-"
                        f"{args.sequence_length}, {name} sample", _target(ratio, 2.0)))
    return out + [""], summary


def prepare():
    """Worker entry: write the weights and inputs of `_prepare_weights` (TensorFlow backend)."""
    import json

    _prepare_weights(*json.loads(sys.argv[1]))


def _prepared(root, families, batches, length, tiny):
    import json
    import subprocess

    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow")
    proc = subprocess.run(
        [sys.executable, "-c", "import tools.benchmark as b; b.prepare()",
         json.dumps([root, families, batches, length, tiny])], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError(f"preparing the benchmark weights failed:\n{proc.stderr[-4000:]}")


def _machine():
    """One line on the CPU and one on the library versions."""
    from importlib import metadata

    cpu, flags = platform.processor() or platform.machine(), set()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            for line in file:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    memory = ""
    with contextlib.suppress(OSError, ValueError):
        pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        memory = f", {pages / 2 ** 30:.0f} GiB RAM"
    bf16 = [f for f in ("avx512_bf16", "amx_bf16") if f in flags]
    versions = []
    for package in ("tensorflow", "tensorflow-text", "keras", "keras-hub", "jax", "torch",
                    "transformers", "onnxruntime"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    return (f"{cpu}, {os.cpu_count()} CPU cores{memory}, no GPU; bfloat16 instructions: "
            f"{', '.join(bf16) or 'none'}; Python {platform.python_version()}",
            ", ".join(versions))


def _print_section(lines, summary):
    print("\n".join(lines))
    if summary:
        print("Ratios against the targets of issue #10:")
        for what, value in summary:
            print(f"  {what}: {value}")
    sys.stdout.flush()


def run(args):
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    sections = {"models": section_models, "finetune": section_finetune,
                "bucketing": section_bucketing, "serving": section_serving,
                "tokenizers": section_tokenizers}
    chosen = list(sections) if args.target == "all" else [args.target]
    started = datetime.datetime.now()
    outputs = []
    with tempfile.TemporaryDirectory() as root:
        args.root = root
        if {"models", "finetune"} & set(chosen):
            families = list(args.families) if "models" in chosen else []
            families += ["bert"] if "finetune" in chosen and "bert" not in families else []
            batches = sorted(set(getattr(args, "batches", []))
                             | ({args.batch_size or 8} if "finetune" in chosen else set()))
            progress(f"preparing weights and inputs for {', '.join(families)}")
            _prepared(root, families, batches, args.sequence_length, args.tiny)
        for name in chosen:
            progress(f"benchmark {name}")
            lines, summary = sections[name](args, progress)
            _print_section(lines, summary)
            outputs.append((lines, summary))
    if args.target != "all":
        return 0
    machine, versions = _machine()
    minutes = (datetime.datetime.now() - started).total_seconds() / 60
    command = "zoo benchmark all" + "".join(
        f" --{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in sorted(vars(args).items())
        if k in _DEFAULTS and v != _DEFAULTS[k] and not isinstance(v, bool)) + " --no-bf16" * (
        not args.bf16) + " --tiny" * args.tiny
    doc = ["# Benchmarks", "",
           f"Written by `{command}` on {started:%Y-%m-%d} in {minutes:.0f} minutes; do not "
           "edit by hand, run the command again. Every table compares zoo with another library "
           "on the same machine in the same run, on the same weights and inputs; ratios > 1 "
           "mean zoo is faster. Absolute rates on a shared machine drift from run to run; the "
           "ratios, measured in alternation, are the figures to read.", "",
           f"Machine: {machine}.", "", f"Versions: {versions}.", "",
           "## Targets (issue #10)", "", "| comparison | ratio |", "| --- | --- |"]
    doc += [f"| {what} | {value} |" for _, summary in outputs for what, value in summary]
    doc.append("")
    for lines, _ in outputs:
        doc += lines + [""]
    from zoo.files import write_text

    write_text(args.out, "\n".join(doc).rstrip() + "\n")
    progress(f"wrote {args.out}")
    return 0


# Options of `all` left out of the command line written into the file when at their default.
_DEFAULTS = {"families": list(FAMILIES), "batches": [8, 1], "backends": list(_BACKENDS),
             "repeats": 5, "sequence_length": 128, "batch_size": None, "bf16": True,
             "tiny": False}
