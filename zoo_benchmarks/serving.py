"""`zoo benchmark serving`: raw text to label, zoo's SavedModels (float32, bfloat16, int8) vs
transformers' pipeline and ONNX Runtime (float32, and int8 from its `quantize_dynamic`).

`prepare` writes the models both of the section's tables serve; the second table, one loaded
model and several client threads, is `zoo_benchmarks.concurrency`'s."""

import os
import statistics
import sys
import tempfile

import zoo_tasks
from zoo import config as config_lib
from zoo import export, tokenizers
from zoo.convert import to_huggingface
from zoo.export import constant, int8
from zoo_benchmarks import concurrency
from zoo_benchmarks.common import corpus_lines, preset_for, target_cell
from zoo_benchmarks.workers import alternate

# Each contender runs in its own fresh interpreter, as a server would: in one process,
# TensorFlow's spinning thread pools cut torch's throughput severalfold. A contender's script
# is _ARGUMENTS (the arguments all take, the texts), its own lines defining `one_pass` (every
# text to a label, in batches), then _TIMED: one warm-up pass, whose labels it answers as one
# JSON line, then one timed pass for each line on stdin, its seconds as one JSON line. The
# parent keeps every contender loaded and asks them in turn (`workers.alternate`), so that a
# drift in the machine's load falls on all of them alike.
_ARGUMENTS = """
import json, sys, time
path, texts_path, batch_size = sys.argv[1], sys.argv[2], int(sys.argv[3])
texts = json.load(open(texts_path))
"""
_TIMED = """
print(json.dumps({"labels": one_pass()}), flush=True)
for _ in sys.stdin:
    start = time.perf_counter(); one_pass()
    print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
"""
_SERVE_ZOO = _ARGUMENTS + """
import tensorflow as tf
import tensorflow_text  # noqa: F401
serve = tf.saved_model.load(path).signatures["serving_default"]
batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
def one_pass():
    return [l.decode() for b in batches for l in serve(sentence1=tf.constant(b))["label"].numpy()]
""" + _TIMED
_SERVE_TRANSFORMERS = _ARGUMENTS + """
import torch, transformers
transformers.logging.set_verbosity_error()
length = int(sys.argv[4])
pipe = transformers.pipeline("text-classification", model=path, tokenizer=path, device=-1)
def one_pass():
    with torch.no_grad():
        out = pipe(texts, batch_size=batch_size, truncation=True, max_length=length)
    return [r["label"].rsplit("_", 1)[-1] for r in out]
""" + _TIMED
_SERVE_ONNXRUNTIME = _ARGUMENTS + """
import numpy as np, onnxruntime, transformers
model, length = sys.argv[4], int(sys.argv[5])
tokenizer = transformers.BertTokenizerFast.from_pretrained(path)
options = onnxruntime.SessionOptions()
options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
def one_pass():
    labels = []
    for batch in batches:
        feed = dict(tokenizer(batch, padding=True, truncation=True, max_length=length,
                              return_tensors="np"))
        labels += [str(i) for i in np.argmax(session.run(["logits"], feed)[0], axis=-1)]
    return labels
""" + _TIMED


def _onnx_models(hf_model, folder):
    """transformers' classifier as ONNX (batch and length dynamic) and ONNX Runtime's dynamic
    int8 quantization of it (`quantize_dynamic`, int8 weights): (float32 path, int8 path)."""
    import contextlib
    import warnings

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    inputs = {name: torch.ones((2, 8), dtype=torch.long)
              for name in ("input_ids", "attention_mask", "token_type_ids")}
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
    paths = os.path.join(folder, "model.onnx"), os.path.join(folder, "model_int8.onnx")
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        torch.onnx.export(hf_model.eval(), (), paths[0], kwargs=inputs, dynamo=True,
                          input_names=list(inputs), output_names=["logits"],
                          dynamic_shapes={k: {0: batch, 1: length} for k in inputs})
        quantize_dynamic(paths[0], paths[1], weight_type=QuantType.QInt8)
    return paths


def prepare(args, tmp, progress=print):
    """What the serving benchmarks serve, written under `tmp`: the texts, zoo's exports and
    transformers' copy of the same classifier (a folder, and as ONNX in float32 and int8).

    Returns a dict: "preset", "lines" (the texts), "texts" (them as a JSON file), "zoo"
    ({policy or "int8": SavedModel path}), "hf" (the transformers folder, BertTokenizerFast
    beside the model), "onnx" ({"float32" or "int8": .onnx path}).
    """
    import json

    import numpy as np
    import torch
    import transformers

    preset = preset_for(args) or ("bert_tiny" if getattr(args, "tiny", False) else "bert_base")
    texts = getattr(args, "texts", 256)
    transformers.logging.set_verbosity_error()  # the classifier is copied in below
    lines = [line for line in corpus_lines(None) if len(line.split()) >= 3][:texts]
    corpus = os.path.join(tmp, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as file:
        file.writelines(line + "\n" for line in corpus_lines(None))
    texts_path = os.path.join(tmp, "texts.json")
    with open(texts_path, "w", encoding="utf-8") as file:
        json.dump(lines, file)
    vocab = os.path.join(tmp, "vocab")
    tokenizers.train_vocabulary([corpus], size=8000, kind="wordpiece", out=vocab)
    config = config_lib.resolve("bert/glue_sst2", [
        f"model.preset={preset}", f"model.vocabulary={vocab}", "model.dropout=0",
        f"data.sequence_length={args.sequence_length}"])
    task = zoo_tasks.create("glue/sst2", config, check_data=False)
    keras_model = task.build_model()
    exports = {}
    # `zoo benchmark all --no-bf16` leaves out the bfloat16 export, as it does elsewhere.
    policies = ["float32"] + (["mixed_bfloat16"] if getattr(args, "bf16", True) else [])
    for policy in policies:
        # As `zoo export` serves mixed_bfloat16: dense and embedding weights in bfloat16; and
        # float32: the Dense weights as graph constants (zoo.export.constant).
        model = keras_model if policy == "float32" else export.with_bfloat16_weights(
            keras_model)
        with constant.dense_constants(model, progress):
            archive, _ = export.build_archive(task, model, None)
            exports[policy] = os.path.join(tmp, policy)
            export.write_out(archive, exports[policy])
    with int8.serving_form(keras_model):  # as `zoo export --quantize int8` writes it
        archive, _ = export.build_archive(task, keras_model, None)
        exports["int8"] = os.path.join(tmp, "int8")
        export.write_out(archive, exports["int8"])

    hf_dir = os.path.join(tmp, "hf")
    to_huggingface(keras_model.backbone, hf_dir)
    hf_model = transformers.BertForSequenceClassification.from_pretrained(hf_dir, num_labels=2)
    kernel, bias = (np.asarray(w) for w in keras_model.classifier.dense.weights)
    with torch.no_grad():
        hf_model.classifier.weight.copy_(torch.from_numpy(kernel.T.copy()))
        hf_model.classifier.bias.copy_(torch.from_numpy(bias.copy()))
    served = os.path.join(tmp, "hf_classifier")
    hf_model.save_pretrained(served)
    transformers.BertTokenizerFast(os.path.join(vocab, "vocab.txt"),
                                   do_lower_case=True).save_pretrained(served)
    progress("  exporting transformers' model to ONNX, quantizing it")
    onnx_models = dict(zip(("float32", "int8"), _onnx_models(hf_model, tmp)))
    return {"preset": preset, "lines": lines, "texts": texts_path, "zoo": exports,
            "hf": served, "onnx": onnx_models}


def section_serving(args, progress=print):
    """Raw text to label: zoo's SavedModel signature vs transformers' pipeline, same weights.

    Both sides start from the same strings and end at a label: zoo's `serving_default`
    (tokenizer, packing with dynamic padding, model, softmax, label names, all in the graph;
    loaded with tf.saved_model.load in a process importing only tensorflow and
    tensorflow_text, as a server runs it) and transformers' `pipeline("text-classification")`
    (BertTokenizerFast, padding to the batch's longest, BertForSequenceClassification on
    torch, in its own process). Weights are copied from the zoo model, and the labels of both
    are compared on every text. Every contender is loaded and warms up with one pass; then
    pass r of each, in turn (`workers.alternate`: the order rotated every round), before
    pass r + 1 of any, and the median of --repeats passes is reported. The int8 rows: zoo's
    `--quantize int8` export (`zoo.export.int8`) and ONNX Runtime's `quantize_dynamic` of
    transformers' model (BertTokenizerFast before it), beside ONNX Runtime in float32. Then,
    unless --threads is empty, the concurrency table (`zoo_benchmarks.concurrency`) on the
    same models.
    """
    batch_size = args.batch_size or 8
    with tempfile.TemporaryDirectory() as tmp:
        prepared = prepare(args, tmp, progress)
        preset, lines, texts_path = prepared["preset"], prepared["lines"], prepared["texts"]
        # A script's arguments: the model, the texts, the batch size, then its own.
        common, length = [texts_path, str(batch_size)], str(args.sequence_length)
        commands = {f"zoo SavedModel, {policy}": (_SERVE_ZOO, [path, *common])
                    for policy, path in prepared["zoo"].items()}
        commands["transformers pipeline (torch, float32)"] = (
            _SERVE_TRANSFORMERS, [prepared["hf"], *common, length])
        for label, onnx_model in prepared["onnx"].items():
            commands[f"ONNX Runtime, {label}"] = (
                _SERVE_ONNXRUNTIME, [prepared["hf"], *common, onnx_model, length])
        progress(f"  loading {len(commands)} contenders, one warm-up pass each")
        procs = {name: concurrency.start(script, arguments, tmp)
                 for name, (script, arguments) in commands.items()}
        try:
            labels = {name: concurrency.ask(proc, name)["labels"]
                      for name, proc in procs.items()}
            times = alternate({name: lambda p=proc, n=name: concurrency.ask(p, n, {})["seconds"]
                               for name, proc in procs.items()}, args.repeats, progress=progress)
        finally:
            concurrency.stop(procs)
        results = {name: {"rate": len(lines) / statistics.median(times[name]),
                          "labels": labels[name]} for name in commands}
        threads = concurrency.thread_counts(args)
        if threads:
            concurrent = concurrency.section(args, prepared, threads, tmp, progress)

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
        "longest) in its own process. Every contender is loaded and warms up with one pass; "
        "then the parent asks each in turn for one timed pass (the order rotated every round, "
        "so that a change in the machine's load falls on all alike) and reports the median of "
        f"{args.repeats}. int8: "
        "zoo's `zoo export --quantize int8` (7-bit weights, a scale per output unit, "
        "uint8 activations over each batch's range, product, scales, bias and activation in "
        "one oneDNN kernel; LayerNorms in oneDNN's kernel too, where the float32 export keeps "
        "TensorFlow's portable ops) and ONNX Runtime's "
        "`quantize_dynamic` (int8 weights) of transformers' model exported with "
        "`torch.onnx.export`, BertTokenizerFast in front, as the float32 ONNX Runtime row.", "",
        "| contender | texts/s | ratio | labels equal to transformers' |",
        "| --- | --- | --- | --- |"]
    summary = []
    for name, result in results.items():
        same = sum(a == b for a, b in zip(result["labels"], reference["labels"]))
        ratio = result["rate"] / reference["rate"]
        out.append(f"| {name} | {result['rate']:.1f} | {ratio:.2f} | {same}/{len(lines)} |")
        if name.startswith("zoo"):  # issue #53: the float32 export >= the pipeline
            summary.append((f"serving texts/s, {name} vs transformers' pipeline",
                            target_cell(ratio, 1.0 if name.endswith("float32") else None)))
    rate = {name: result["rate"] for name, result in results.items()}
    summary.append(("serving texts/s, zoo int8 export vs zoo float32 export",
                    target_cell(rate["zoo SavedModel, int8"] / rate["zoo SavedModel, float32"],
                                1.8)))
    # Issue #53: each zoo export >= ONNX Runtime in the same precision.
    summary.append(("serving texts/s, zoo float32 export vs ONNX Runtime float32",
                    target_cell(rate["zoo SavedModel, float32"] / rate["ONNX Runtime, float32"],
                                1.0)))
    summary.append(("serving texts/s, zoo int8 export vs ONNX Runtime int8",
                    target_cell(rate["zoo SavedModel, int8"] / rate["ONNX Runtime, int8"], 1.0)))
    if threads:
        out += [""] + concurrent[0]
        summary += concurrent[1]
    return out + [""], summary
