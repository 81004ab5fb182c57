"""`zoo demo`: fine-tune a small BERT on the sample MRPC data and print its dev metrics.

The main job of `make demo`, end to end on this machine in a few minutes: write the sample
datasets (`zoo data samples --train-rows 4000`), learn a WordPiece vocabulary on them
(`zoo data vocab`), train bert_tiny on MRPC with `zoo train --experiment bert/glue_mrpc`
(model.fit, the AdamW schedule, TensorBoard logs, best checkpoint), print the dev accuracy
and F1 and where the run directory is, then export the model (`zoo export`:
OUT/exports/mrpc/<version>, tokenizer included) and ask the export about three raw sentence
pairs (`zoo predict`). `zoo demo --models` prints the table of every preset instead.
"""

import os
import time

import numpy as np

from zoo_cli import predict
from zoo_cli.arguments import add_command, add_overwrite

# The experiment the demo runs: bert/glue_mrpc, sized for two CPU cores. A randomly initialized
# model has none of the knowledge a pretrained checkpoint brings: telling whether the second
# sentence changed the first one's company, city or day has to be learnt from the pairs alone,
# which takes 4,000 of them, 4 attention heads, no dropout or weight decay and 2,000 steps at
# lr 5e-4 (with lr 1e-3, 2 heads or 400 rows instead, `make demo` learns less:
# docs/measurements.md).
TRAIN_ROWS = 4000
DEMO_OVERRIDES = ["model.preset=bert_tiny", "model.backbone.num_heads=4", "model.dropout=0",
                  "model.backbone.dropout=0", "model.backbone.attention_dropout=0",
                  "data.sequence_length=40", "train.batch_size=32", "train.steps=2000",
                  "train.learning_rate=5e-4", "train.warmup_fraction=0.1",
                  "train.weight_decay=0", "train.eval_every=500", "train.deterministic=false"]
# Raw sentence pairs for the exported model, in the sample data's style (1 = paraphrase).
REQUESTS = [
    {"sentence1": "Karin Castro said Hooli will open a new office in Lisbon on Monday .",
     "sentence2": "On Monday , Hooli will open an office in Lisbon , according to Karin Castro ."},
    {"sentence1": "Karin Castro said Hooli will open a new office in Lisbon on Monday .",
     "sentence2": "On Friday , Hooli will open an office in Lisbon , according to Karin Castro ."},
    {"sentence1": "Nils Novak said Soylent will open a new office in Prague on Sunday .",
     "sentence2": "On Sunday , Soylent will open an office in Berlin , according to Nils Novak ."},
]


def register(subparsers):
    parser = add_command(
        subparsers, "demo", "fine-tune bert_tiny on sample MRPC data and print dev accuracy and F1",
        __doc__, run)
    parser.add_argument("--out", default="runs/demo",
                        help="directory for samples, vocabulary and the run (default runs/demo)")
    add_overwrite(parser, help="train again even if OUT/mrpc holds a finished run")
    parser.add_argument("--models", nargs="*", default=None, metavar="PRESET",
                        help="instead: build these presets (all if none given), run a forward "
                             "pass and print a table")
    parser.add_argument("--batch-size", type=int, default=1, help="with --models")
    parser.add_argument("--sequence-length", type=int, default=128,
                        help="with --models: tokens per text input")


def run(args):
    if args.models is not None:
        return run_table(args)
    import json

    from zoo import config as config_lib  # lazy: as above
    from zoo import files  # lazy: as above
    from zoo.data.samples import LAYOUT, write_samples  # lazy: as above
    from zoo.tokenizers import from_directory, train_vocabulary  # lazy: as above

    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo_tasks import runs

    start = time.perf_counter()
    samples = os.path.join(args.out, "samples")
    vocab = os.path.join(args.out, "vocab")
    run_dir = os.path.join(args.out, "mrpc")
    if not files.isfile(os.path.join(samples, "manifest.json")):
        write_samples(samples, train_rows=TRAIN_ROWS)
    if not files.isfile(os.path.join(vocab, "vocab.txt")):
        train_vocabulary([os.path.join(samples, "corpus", "corpus.txt"),
                          os.path.join(samples, LAYOUT["glue/mrpc"]["train"])],
                         size=1000, kind="wordpiece", out=vocab)
    print(f"samples in {samples}, a {from_directory(vocab).vocabulary_size()}-token vocabulary "
          f"in {vocab}")
    data_dir = os.path.dirname(os.path.join(samples, LAYOUT["glue/mrpc"]["train"]))
    overrides = DEMO_OVERRIDES + [f"data.dir={data_dir}", f"model.vocabulary={vocab}"]
    print("zoo train --experiment bert/glue_mrpc " + " ".join(f"--set {o}" for o in overrides)
          + f" --run-dir {run_dir}")
    config = config_lib.resolve("bert/glue_mrpc", overrides)
    if files.isfile(os.path.join(run_dir, "final.keras")) and not args.overwrite:
        print(f"{run_dir} is a finished run (--overwrite trains it again)")
        metrics = runs.evaluate_run(run_dir)
    else:
        metrics = runs.train(config, run_dir, overwrite=args.overwrite)
        metrics = runs.evaluate_run(run_dir)  # the best checkpoint, as zoo evaluate does
    print(json.dumps(metrics, sort_keys=True))
    print(f"\nMRPC sample dev set (best checkpoint): accuracy {metrics['accuracy']:.3f}, "
          f"F1 {metrics['f1']:.3f} (chance: about 0.5)\n"
          f"run directory: {run_dir} (config.yaml, metrics.json, best.keras, final.keras, "
          f"predictions/dev.tsv)\n"
          f"TensorBoard:   tensorboard --logdir {run_dir}\n")
    export_and_predict(run_dir, os.path.join(args.out, "exports", "mrpc"),
                       os.path.join(args.out, "requests.jsonl"))
    print(f"demo wall time: {time.perf_counter() - start:.0f} s")
    return 0


def export_and_predict(run_dir, base, requests_path):
    """`zoo export` the run, then `zoo predict` three raw sentence pairs with the export."""
    import json
    import subprocess
    import sys

    import keras

    from zoo import export, files  # lazy: as above
    from zoo.files import write_text  # lazy: as above

    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo_tasks import runs

    print(f"zoo export --run-dir {run_dir} --out {base}")
    if keras.backend.backend() == "tensorflow":
        path = runs.export_run(run_dir, base, progress=lambda line: print(f"export: {line}"))
    else:  # the export is a TensorFlow graph whatever backend trained the run
        subprocess.run([sys.executable, "-m", "zoo_cli.main", "export", "--run-dir", run_dir,
                        "--out", base], check=True,
                       env=dict(os.environ, KERAS_BACKEND="tensorflow"))
        path = os.path.join(base, str(export.next_version(base) - 1))
    write_text(requests_path, "".join(json.dumps(r) + "\n" for r in REQUESTS))
    print(f"zoo predict --saved-model {path} --input {requests_path}")
    predictor = predict.Predictor(path)
    results = []
    predict.predict_lines(predictor, predict.read_requests(requests_path), 32, results.append)
    for request, result in zip(REQUESTS, results):
        print(json.dumps(result))
        print(f"  label {result['label']} "
              f"({'paraphrase' if result['label'] == '1' else 'not a paraphrase'}): "
              f"{request['sentence1']} / {request['sentence2']}")
    name = os.path.basename(files.absolute(base).rstrip("/"))
    print(f"serve it: {export.serving_command(base, name)}")


def run_table(args):
    import keras

    # lazy: loads TensorFlow; `zoo --help` imports this module
    import zoo
    from zoo.progress import bar as progress_bar  # lazy: `zoo --help` imports this module

    names = args.models or zoo.models.names()
    rows = []
    print(f"keras {keras.__version__}, backend {keras.backend.backend()}; "
          f"batch {args.batch_size}, sequence length {args.sequence_length}")
    for name in progress_bar(names, desc="presets", unit="model"):
        start = time.perf_counter()
        model = zoo.models.create(name)
        built = time.perf_counter() - start
        inputs = example_inputs(model, args.batch_size, args.sequence_length,
                                np.random.default_rng(0))
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
