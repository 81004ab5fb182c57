"""`zoo benchmark`: side-by-side speed against keras-hub and transformers, reported as ratios.

  zoo benchmark models      BERT-base forward (seq/s), zoo vs keras_hub.models.BertBackbone
  zoo benchmark tokenizers  WordPiece (tokens/s), zoo in tf.data vs transformers' BertTokenizerFast
  zoo benchmark bucketing   fine-tuning examples/s with dynamic padding vs pad-to-128 (GLUE mix)
  zoo benchmark serving     raw text -> label (texts/s): zoo's exported SavedModel (float32 and
                            bfloat16) vs transformers' text-classification pipeline, same weights
"""

import argparse
import os
import tempfile
import statistics
import time


def register(subparsers):
    parser = subparsers.add_parser("benchmark", help="compare speed with keras-hub / transformers",
                                   description=__doc__)
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    models = targets.add_parser("models", help="BERT-base forward throughput vs keras-hub")
    models.add_argument("--batch-size", type=int, default=8)
    models.add_argument("--sequence-length", type=int, default=128)
    models.add_argument("--repeats", type=int, default=5)
    models.set_defaults(func=run_models)
    tokenizers = targets.add_parser(
        "tokenizers", help="WordPiece throughput in tf.data vs transformers' fast tokenizer")
    tokenizers.add_argument("--corpus", nargs="+",
                            help="plain-text files, one text per line (default: the English "
                                 "reference text CPython ships in pydoc_data.topics)")
    tokenizers.add_argument("--vocab", help="directory with vocab.txt (default: train a "
                                            "--vocab-size WordPiece vocabulary on the corpus)")
    # 1000 on the default corpus splits words into 1.22 pieces on average, close to BERT's
    # vocabulary on English text; a larger one there keeps every word whole.
    tokenizers.add_argument("--vocab-size", type=int, default=1000)
    tokenizers.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True)
    tokenizers.add_argument("--batch-size", type=int, default=256)
    tokenizers.add_argument("--repeats", type=int, default=3)
    tokenizers.set_defaults(func=run_tokenizers)
    bucketing = targets.add_parser(
        "bucketing", help="fine-tuning examples/s: data.pad_to_multiple_of vs pad-to-length")
    bucketing.add_argument("--preset", default="bert_base")
    bucketing.add_argument("--tasks", nargs="+", default=["glue/mrpc", "glue/sst2"])
    bucketing.add_argument("--steps", type=int, default=6, help="timed steps per setting")
    bucketing.add_argument("--batch-size", type=int, default=32)
    bucketing.add_argument("--sequence-length", type=int, default=128)
    bucketing.add_argument("--multiple", type=int, default=16)
    bucketing.set_defaults(func=run_bucketing)
    serving = targets.add_parser(
        "serving", help="exported SavedModel (raw text in, label out) vs transformers' pipeline")
    serving.add_argument("--preset", default="bert_base")
    serving.add_argument("--texts", type=int, default=256, help="texts per timed pass")
    serving.add_argument("--batch-size", type=int, default=8)
    serving.add_argument("--sequence-length", type=int, default=128)
    serving.add_argument("--repeats", type=int, default=3)
    serving.set_defaults(func=run_serving)


def _interleaved_rates(fns, inputs, batch_size, repeats):
    """Median sequences/s of each function, timed call by call in alternation.

    Alternating the contenders spreads any change in machine load over all of them, so the
    ratio stays meaningful on a shared machine even when absolute rates drift.
    """
    for fn, x in zip(fns, inputs):
        fn(x)  # trace / warm up, not timed
    times = [[] for _ in fns]
    for _ in range(repeats):
        for i, (fn, x) in enumerate(zip(fns, inputs)):
            start = time.perf_counter()
            fn(x)
            times[i].append(time.perf_counter() - start)
    return [batch_size / statistics.median(t) for t in times]


def run_models(args):
    import keras
    import keras_hub
    import numpy as np

    import zoo

    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.sequence_length)
    ids = rng.integers(1, 30522, shape).astype("int32")
    ours = zoo.models.create("bert_base", dropout=0.0, attention_dropout=0.0)
    theirs = keras_hub.models.BertBackbone(
        vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768,
        intermediate_dim=3072, dropout=0.0, max_sequence_length=512, num_segments=2,
    )
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    print(f"BERT-base forward, backend {keras.backend.backend()}, fp32, batch {args.batch_size} "
          f"x seq {args.sequence_length}, median of {args.repeats} interleaved calls")
    for mode in ("eager call", "predict_on_batch"):
        fns = [ours, theirs] if mode == "eager call" else [ours.predict_on_batch,
                                                           theirs.predict_on_batch]
        ours_rate, theirs_rate = _interleaved_rates(fns, [inputs, inputs],
                                                    args.batch_size, args.repeats)
        print(f"  {mode:17s} zoo {ours_rate:7.2f} seq/s   keras-hub {theirs_rate:7.2f} seq/s   "
              f"ratio {ours_rate / theirs_rate:.2f}")
    return 0


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


def run_tokenizers(args):
    import tensorflow as tf
    import transformers

    from zoo import tokenizers

    lines = _corpus_lines(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = args.vocab
        if vocab is None:
            corpus = os.path.join(tmp, "corpus.txt")
            with open(corpus, "w", encoding="utf-8") as file:
                file.writelines(line + "\n" for line in lines)
            vocab = os.path.join(tmp, "vocab")
            tokenizers.train_vocabulary([corpus], size=args.vocab_size, kind="wordpiece",
                                        out=vocab, lowercase=args.lowercase)
        ours = tokenizers.from_huggingface(vocab, lowercase=args.lowercase)
        theirs = transformers.BertTokenizerFast.from_pretrained(
            vocab, do_lower_case=args.lowercase, split_special_tokens=True)
    batches = [lines[i:i + args.batch_size] for i in range(0, len(lines), args.batch_size)]

    dataset = tf.data.Dataset.from_tensor_slices(lines).batch(args.batch_size).map(
        ours, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True).prefetch(tf.data.AUTOTUNE)

    def run_ours():
        return [ids for ids in dataset]

    def run_theirs():
        return [theirs(batch, add_special_tokens=False)["input_ids"] for batch in batches]

    our_ids = [row for ids in run_ours() for row in ids.to_list()]  # warm-up: traces the map
    their_ids = [row for ids in run_theirs() for row in ids]
    tokens = sum(map(len, their_ids))
    same = sum(a == b for a, b in zip(our_ids, their_ids))
    rates = {}
    for name, fn in (("zoo", run_ours), ("transformers", run_theirs)):
        start = time.perf_counter()
        for _ in range(args.repeats):
            fn()
        rates[name] = tokens * args.repeats / (time.perf_counter() - start)
    print(f"WordPiece, {len(lines)} lines, {tokens} tokens, vocabulary {ours.vocabulary_size()} "
          f"({'uncased' if args.lowercase else 'cased'}), batch {args.batch_size}, "
          f"{args.repeats} repeats, {os.cpu_count()} CPU cores")
    print(f"  identical ids on {same}/{len(lines)} lines")
    ratio = rates["zoo"] / rates["transformers"]
    print(f"  zoo tf.data {rates['zoo']:,.0f} tokens/s   transformers BertTokenizerFast "
          f"{rates['transformers']:,.0f} tokens/s   ratio {ratio:.2f}")
    return 0


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


def run_serving(args):
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
    import sys

    import numpy as np
    import torch
    import transformers

    import tasks
    from zoo import config as config_lib
    from zoo import export, tokenizers
    from zoo.convert import to_huggingface

    transformers.logging.set_verbosity_error()  # the classifier is copied in below
    lines = [line for line in _corpus_lines(None) if len(line.split()) >= 3][:args.texts]
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
            f"model.preset={args.preset}", f"model.vocabulary={vocab}", "model.dropout=0",
            f"data.sequence_length={args.sequence_length}"])
        task = tasks.create("glue/sst2", config, check_data=False)
        keras_model = task.build_model()
        commands = {}
        for policy in ("float32", "mixed_bfloat16"):
            model = keras_model if policy == "float32" else export.with_dtype_policy(
                keras_model, policy)
            archive, _ = export.build_archive(task, model, None)
            path = os.path.join(tmp, policy)
            archive.write_out(path, verbose=False)
            commands[f"zoo SavedModel {policy.replace('mixed_', '')}"] = [
                "-c", _SERVE_ZOO, path]

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
        commands["transformers pipeline (torch)"] = ["-c", _SERVE_TRANSFORMERS, served]
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        for name, command in commands.items():
            extra = [str(args.sequence_length)] if name.startswith("transformers") else []
            proc = subprocess.run([sys.executable, *command, texts_path, str(args.batch_size),
                                   str(args.repeats), *extra], capture_output=True, text=True,
                                  env=env, cwd=tmp)
            if proc.returncode:
                raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])

    reference = results["transformers pipeline (torch)"]
    print(f"raw text -> label, {args.preset} classifier (random weights, copied to "
          f"transformers), {len(lines)} texts of the pydoc corpus, batch {args.batch_size}, "
          f"at most {args.sequence_length} tokens, median of {args.repeats} passes, each "
          f"contender in its own process, {os.cpu_count()} CPU cores")
    for name, result in results.items():
        same = sum(a == b for a, b in zip(result["labels"], reference["labels"]))
        print(f"  {name:30s} {result['rate']:8.1f} texts/s   ratio "
              f"{result['rate'] / reference['rate']:.2f}   labels equal to transformers' on "
              f"{same}/{len(lines)}")
    return 0


def run_bucketing(args):
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

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_samples(os.path.join(tmp, "samples"))
        files = [os.path.join(tmp, "samples", LAYOUT[t]["train"]) for t in args.tasks]
        vocab = os.path.join(tmp, "vocab")
        train_vocabulary(files, size=2000, kind="wordpiece", out=vocab)
        for name in args.tasks:
            data_dir = os.path.dirname(os.path.join(tmp, "samples", LAYOUT[name]["train"]))
            rates, widths = {}, {}
            for multiple in (0, args.multiple):
                config = config_lib.resolve(f"bert/{name.replace('/', '_')}", [
                    f"model.preset={args.preset}", f"model.vocabulary={vocab}",
                    f"data.dir={data_dir}", f"data.sequence_length={args.sequence_length}",
                    f"data.pad_to_multiple_of={multiple}",
                    f"train.batch_size={args.batch_size}"])
                task = tasks.create(name, config, check_data=False)
                keras.utils.set_random_seed(0)
                model = task.build_model()
                task.compile(model, total_steps=1000, warmup_steps=10)
                stream = task.dataset("train", repeat=True)
                model.fit(stream, steps_per_epoch=args.steps, epochs=1, verbose=0)  # warm-up
                start = time.perf_counter()
                model.fit(stream, steps_per_epoch=args.steps, epochs=1, verbose=0)
                rates[multiple] = args.steps * args.batch_size / (time.perf_counter() - start)
                widths[multiple] = sorted({int(x["token_ids"].shape[-1])
                                           for x, *_ in stream.take(2 * args.steps)})
                keras.backend.clear_session()
            rows.append((name, rates, widths))
    print(f"fine-tuning {args.preset}, batch {args.batch_size}, sequence length "
          f"{args.sequence_length}, {args.steps} timed steps per setting after {args.steps} "
          f"warm-up steps, {os.cpu_count()} CPU cores")
    for name, rates, widths in rows:
        print(f"  {name:10s} pad to {args.sequence_length}: {rates[0]:6.1f} examples/s   "
              f"pad to longest (multiple of {args.multiple}): {rates[args.multiple]:6.1f} "
              f"examples/s   ratio {rates[args.multiple] / rates[0]:.2f}   "
              f"widths seen {widths[args.multiple]}")
    return 0
