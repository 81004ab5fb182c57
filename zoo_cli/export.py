"""`zoo export`: a trained run, or a checkpoint by name, as one SavedModel that TF Serving
serves, raw inputs in.

  zoo export --run-dir runs/mrpc --out exports/mrpc              # exports/mrpc/1, then 2, ...
  zoo export --model hf://ORG/sentiment --out exports/sentiment  # a Hub classifier, no run
  zoo export --model gpt1_openai --out exports/gpt1              # GPT-1's released weights
  zoo export --model ORG/squad-reader --out exports/qa --quantize int8
  zoo export --run-dir runs/mrpc --out exports/mrpc --version 7 --checkpoint final
  zoo export --run-dir runs/mrpc --out exports/mrpc_bf16 --mixed-precision mixed_bfloat16
  zoo export --run-dir runs/mrpc --out exports/mrpc_auto --mixed-precision auto  # the faster
  zoo export --run-dir runs/mrpc --out exports/mrpc_int8 --quantize int8

Writes BASE/N (TF Serving's versioned layout; N defaults to one more than the highest version
in BASE) through a temporary directory renamed at the end: an interrupted export leaves no
version behind. An existing version is never overwritten. Tokenization, packing and
post-processing are in the graph (TensorFlow and tensorflow-text ops only): `serving_default`
takes raw text (or image bytes) and returns final answers, `serving_ids` takes token ids (or
pixels). Runs trained on any Keras backend export (through their .keras file). Prints the
signatures, the `docker run tensorflow/serving` command and a REST request for it.

--model takes any checkpoint zoo reads (a pretrained preset, hf://ORG/NAME[@REVISION], ORG/NAME,
a Hugging Face or sentence-transformers folder): the task is its head's, from config.json's
`architectures` (BertForSequenceClassification: text_classification with id2label's names;
...ForTokenClassification: token_classification; ...ForQuestionAnswering: question_answering;
...ForMultipleChoice: swag; ...ForMaskedLM: pretrain/masked_lm; OpenAIGPTLMHeadModel:
pretrain/causal_lm; ViTForImageClassification: image_folder; sentence-transformers:
sentence_embedding), or --task where it has none. The signatures are those of a run of that
task (docs/serve-hub.md); zoo_export.json records the repo and commit.
"""

import json
import os
import sys

from zoo_cli.arguments import (
    add_checkpoint,
    add_command,
    add_model,
    add_model_options,
    add_run_dir,
    check_model_options,
    load_model,
)


def register(subparsers):
    parser = add_command(subparsers, "export", "a run or a checkpoint by name as a SavedModel "
                         "for TF Serving", __doc__, run)
    source = parser.add_mutually_exclusive_group(required=True)
    add_run_dir(source, help="the zoo train run directory", required=False)
    add_model(source, help="a checkpoint by name or folder, with its head (see above)")
    add_model_options(parser)
    parser.add_argument("--out", required=True, metavar="BASE",
                        help="the model base directory; the export goes to BASE/<version>")
    parser.add_argument("--version", type=int, default=None,
                        help="version number (default: one more than the highest in BASE)")
    add_checkpoint(parser)
    parser.add_argument("--mixed-precision", default=None,
                        choices=("float32", "mixed_bfloat16", "mixed_float16", "auto"),
                        help="serve under this dtype policy (default: the run's "
                        "train.mixed_precision); mixed_bfloat16 stores the dense and embedding "
                        "weights in bfloat16 (the same answers, half their size); faster on "
                        "some CPUs only (about 2x slower on Intel without AMX and on AVX2 "
                        "alone: a warning says so); auto: "
                        "time the model's forward pass in float32 and bfloat16 here and serve "
                        "the faster (float32 unless bfloat16 wins by 5%% at batch 8 and 1)")
    parser.add_argument("--quantize", default=None, choices=("int8",),
                        help="serve every dense layer in int8: 7-bit weights with a scale per "
                        "output, activations quantized per request batch, the product, scales, "
                        "bias and activation in one oneDNN kernel, LayerNorms in oneDNN's "
                        "(zoo.export.int8); for x86-64 TensorFlow with oneDNN (the pip build); the "
                        "export holds the int8 kernels only and computes float32 around them "
                        "(no other --mixed-precision)")


def run(args):
    os.environ["KERAS_BACKEND"] = "tensorflow"  # a graph for TF Serving, whatever trained it
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import export, files  # lazy: as above
    from zoo_tasks import runs  # lazy: as above

    check_model_options(args)

    def progress(line):
        print(f"export: {line}", flush=True)

    if args.model is not None:
        export.new_version(args.out, args.version)  # checked before anything is downloaded
        path = load_model(args, progress=sys.stdout).export(
            args.out, args.version, mixed_precision=args.mixed_precision,
            quantize=args.quantize, progress=progress)
    else:
        path = runs.export_run(args.run_dir, args.out, args.version, args.checkpoint,
                               progress=progress, mixed_precision=args.mixed_precision,
                               quantize=args.quantize)
    with files.open(os.path.join(path, export.METADATA), encoding="utf-8") as file:
        metadata = json.load(file)
    print(f"exported {metadata['task']} to {path}")
    for name, signature in metadata["signatures"].items():
        inputs = ", ".join(f"{k} {v['dtype']}{v['shape']}" for k, v in
                           signature["inputs"].items())
        print(f"  {name}: ({inputs}) -> {', '.join(signature['outputs'])}")
    name = os.path.basename(files.absolute(args.out).rstrip("/"))
    print("serve it with TF Serving:")
    print(f"  {export.serving_command(args.out, name)}")
    example = {key: "..." for key in metadata["signatures"][export.DEFAULT]["inputs"]}
    print("and ask it (one instance per example):")
    print(f"  curl -d '{json.dumps({'instances': [example]})}' "
          f"localhost:8501/v1/models/{name}:predict")
    return 0
