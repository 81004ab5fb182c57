"""`zoo benchmark`: side-by-side speed against keras-hub, transformers and ONNX Runtime.

  zoo benchmark models      BERT-base, GPT-1 and ViT-B/16 forward (batch 8 and batch-1 latency):
                            zoo vs keras-hub on TensorFlow and JAX, transformers (torch) and
                            ONNX Runtime, same weights, each library in its own process
  zoo benchmark finetune    one BERT-base fine-tuning step (forward, backward, AdamW), same set
  zoo benchmark pretrain    one BERT-base pretraining step (masked LM + NSP), tokens/s: zoo on
                            TensorFlow (graph, XLA) and JAX vs transformers (eager, torch.compile)
  zoo benchmark bucketing   fine-tuning examples/s with dynamic padding vs pad-to-128 (GLUE mix)
  zoo benchmark serving     raw text -> label (texts/s): zoo's exported SavedModel (float32,
                            bfloat16, int8) vs transformers' text-classification pipeline and
                            ONNX Runtime, same weights; then one loaded model served to 1 2 4 8
                            client threads (--threads): texts/s, p50 and p99 latency
  zoo benchmark tokenizers  WordPiece (tokens/s), zoo in tf.data vs transformers' BertTokenizerFast
  zoo benchmark data        `zoo data pretrain` tokens/s and peak memory with 1 and 2 Beam workers
                            vs the tokenize-only `tokenizers` BertWordPieceTokenizer on one core
  zoo benchmark generate    greedy generation tokens/s at GPT-1's size (64-token prompts, 128
                            new tokens, batch 1 and 8): zoo with its cache on TensorFlow (graph,
                            XLA), JAX and the export, vs zoo without it, transformers' GPT-2
                            (cache) and GPT-1, keras-hub's GPT2CausalLM; the first call's time
  zoo benchmark journey     `zoo train` from the command to its metrics vs transformers' Trainer
                            (fresh processes, the same checkpoint, data and recipe): wall-clock,
                            steps/s and dev accuracy; --checkpoint, --train-file, --dev-file for
                            your own (default: a random BERT and labeled lines it builds);
                            --lora-rank 8: zoo's LoRA vs PEFT's, and zoo's full fine-tuning
  zoo benchmark embeddings  sentence embeddings texts/s: zoo's `encode` vs sentence-transformers'
                            on the same folder and texts (each in its own process, alternated);
                            --checkpoint FOLDER, --texts-file FILE for real ones
  zoo benchmark all         all of the above; writes docs/benchmarks.md (--out) with the machine,
                            the versions, every command, and each ratio against its target

Ratios > 1 mean zoo is faster. Each run prints markdown tables. The benchmarks run from a clone
of the repository (its zoo_benchmarks/ folder), not from an installed wheel.
"""

# The benchmarks themselves are the repository's measurement lab, zoo_benchmarks/ (report.py runs
# them), which the wheel does not ship: this module holds the command's flags, and `run`
# imports the lab from the clone zoo runs from.

import argparse
import os
import sys

from zoo_cli import lab
from zoo_cli.arguments import add_command

# The choices of --families and --backends: the keys of zoo_benchmarks.common.FAMILIES and its
# BACKENDS (tests/test_benchmark.py holds them equal), named here so that `zoo --help` runs
# where the lab is not.
FAMILIES = ("bert", "gpt1", "vit")
BACKENDS = ("tensorflow", "jax")


def run(args):
    """The chosen benchmark, by the lab's `zoo_benchmarks.report.run`; from an installed wheel
    (no lab), a one-line error."""
    try:
        report = lab.import_lab("zoo_benchmarks.report")
    except lab.LabMissing as error:
        print(f"zoo benchmark: error: {error}", file=sys.stderr)
        return 1
    return report.run(args)


def refuse_without_lab(args):
    """`run`'s one-line error from an installed wheel, before TensorFlow loads (zoo_cli.main:
    `before_tensorflow`, ~5 s of start-up saved); None where the lab is there."""
    try:
        lab.locate("zoo_benchmarks.report")
    except lab.LabMissing:
        return run(args)
    return None


def register(subparsers):
    parser = add_command(subparsers, "benchmark",
                         "compare speed with keras-hub / transformers / ONNX Runtime", __doc__)
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    parsers = {}
    for name, help_text in (
            ("models", "forward throughput and batch-1 latency of the three families"),
            ("finetune", "one BERT-base fine-tuning step per library and backend"),
            ("pretrain", "one BERT-base pretraining step, zoo vs transformers (tokens/s)"),
            ("bucketing", "fine-tuning examples/s: data.pad_to_multiple_of vs pad-to-length"),
            ("serving", "exported SavedModel (raw text in, label out) vs transformers' pipeline"),
            ("tokenizers", "WordPiece throughput in tf.data vs transformers' fast tokenizer"),
            ("data", "`zoo data pretrain` tokens/s and memory, 1 vs 2 Beam workers"),
            ("generate", "greedy generation tokens/s: zoo's cache vs transformers, keras-hub"),
            ("journey", "zoo train, command to metrics, vs transformers' Trainer"),
            ("embeddings", "sentence embeddings: zoo's encode vs sentence-transformers'"),
            ("all", "every benchmark above; writes docs/benchmarks.md")):
        parsers[name] = targets.add_parser(name, help=help_text)
        parsers[name].set_defaults(func=run, target=name, before_tensorflow=refuse_without_lab)
    for name in ("models", "all"):
        parsers[name].add_argument("--families", nargs="+", default=list(FAMILIES),
                                   choices=list(FAMILIES))
        parsers[name].add_argument("--batches", nargs="+", type=int, default=[8, 1],
                                   help="batch sizes; the smallest is the latency row")
        parsers[name].add_argument("--bf16", action=argparse.BooleanOptionalAction,
                                   default=True, help="also time bfloat16 on Keras: "
                                   "mixed_bfloat16, and zoo with bfloat16 weights")
    parsers["generate"].add_argument("--batches", nargs="+", type=int, default=[1, 8],
                                     help="batch sizes (those without a cache: the smallest)")
    for name in ("models", "finetune", "pretrain", "generate", "all"):
        parsers[name].add_argument("--tiny", action="store_true",
                                   help="two-layer models instead of the paper's sizes: checks "
                                        "the benchmark itself; the figures mean nothing")
        parsers[name].add_argument("--backends", nargs="+", default=list(BACKENDS),
                                   choices=BACKENDS, help="Keras backends for zoo and keras-hub")
    for name, parser in parsers.items():
        parser.add_argument("--repeats", type=int, default=5,
                            help="timed calls or passes per contender (the median is reported)")
        if name not in ("models", "generate"):
            parser.add_argument("--batch-size", type=int, default=None,
                                help="default: 8 (finetune, pretrain, serving), 32 (bucketing, "
                                     "journey, embeddings), 256 (tokenizers)")
    for name in ("models", "finetune", "pretrain", "bucketing", "serving", "all"):
        parsers[name].add_argument("--sequence-length", type=int, default=128)
    parsers["bucketing"].add_argument("--preset", default="bert_base")
    parsers["serving"].add_argument("--preset", default=None,
                                    help="default: bert_base (bert_tiny with --tiny)")
    parsers["bucketing"].add_argument("--tasks", nargs="+", default=["glue/mrpc", "glue/sst2"])
    parsers["bucketing"].add_argument("--steps", type=int, default=4,
                                      help="timed steps per setting")
    parsers["bucketing"].add_argument("--multiple", type=int, default=16)
    parsers["serving"].add_argument("--texts", type=int, default=256,
                                    help="texts per timed pass")
    # The concurrency table (zoo_benchmarks.concurrency); under `all`, these defaults.
    serving = parsers["serving"]
    serving.add_argument("--tiny", action="store_true",
                         help="bert_tiny (unless --preset); concurrency: float32 only, "
                              "threads 1 2, 0.5 s each: checks the benchmark itself")
    serving.add_argument("--threads", nargs="*", type=int, default=None,
                         help="client threads of the concurrency table (default 1 2 4 8; 1 2 "
                              "with --tiny; none: no concurrency table)")
    serving.add_argument("--request-size", type=int, default=None,
                         help="texts per request in the concurrency table (default 1)")
    serving.add_argument("--seconds", type=float, default=None,
                         help="seconds each contender serves at each thread count (default "
                              "10; 0.5 with --tiny)")
    serving.add_argument("--tf-threading", nargs="+", default=None, metavar="INTER,INTRA",
                         help="also zoo float32 with tf.config.threading's inter- and "
                              "intra-op threads set so in the client (0: TensorFlow's default)")
    tokenizers = parsers["tokenizers"]
    tokenizers.add_argument("--corpus", nargs="+",
                            help="plain-text files, one text per line (default: the English "
                                 "reference text CPython ships in pydoc_data.topics)")
    tokenizers.add_argument("--vocab", help="directory with vocab.txt (default: train a "
                                            "--vocab-size WordPiece vocabulary on the corpus)")
    # 1000 on the default corpus splits words into pieces about as often as BERT's vocabulary
    # does English text (the tokenizers table says how often); a larger one there keeps every
    # word whole.
    tokenizers.add_argument("--vocab-size", type=int, default=1000)
    tokenizers.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True)
    for name in ("data", "all"):
        parsers[name].add_argument("--corpus-mb", nargs="+", type=float, default=None,
                                   help="corpus sizes (default 32 128; 1 with --tiny); the "
                                        "marginal rate is taken between the two largest")
        parsers[name].add_argument("--workers", nargs="+", type=int, default=None,
                                   help="Beam DirectRunner workers to compare (default 1 2)")
    # generate's own flags; under `all`, their defaults (zoo_benchmarks.generate).
    generate = parsers["generate"]
    generate.add_argument("--new-tokens", type=int, default=None,
                          help="new tokens per row (default 128; 8 with --tiny)")
    generate.add_argument("--prompt-length", type=int, default=None,
                          help="prompt tokens per row (default 64; 16 with --tiny)")
    generate.add_argument("--uncached-batches", nargs="+", type=int, default=None,
                          help="batch sizes of the contenders without a cache (default: the "
                               "smallest of --batches)")
    generate.add_argument("--uncached-repeats", type=int, default=1,
                          help="timed calls of each contender without a cache")
    generate.add_argument("--export", action=argparse.BooleanOptionalAction, default=None,
                          help="time zoo's export (default: where TensorFlow is a backend)")
    parsers["data"].add_argument("--tiny", action="store_true",
                                 help="a 1 MB corpus: checks the benchmark itself")
    # journey's own flags; under `all`, their defaults (zoo_benchmarks.journey).
    journey = parsers["journey"]
    for name in ("journey", "all"):  # under `all`: the journey's checkpoint and data
        parsers[name].add_argument("--checkpoint", help="journey: a Hugging Face BERT folder "
                                   "(default: a random BERT of all-MiniLM-L6-v2's size, built)")
        parsers[name].add_argument("--train-file", help="journey: CSV with text and label "
                                   "columns (default: labeled lines of the pydoc corpus, built)")
        parsers[name].add_argument("--dev-file", help="journey: CSV with text and label "
                                   "columns, evaluated once")
    journey.add_argument("--sequence-length", type=int, default=64)
    journey.add_argument("--learning-rate", type=float, default=1e-4)
    journey.add_argument("--epochs", type=float, default=1.0)
    for name in ("journey", "all"):
        parsers[name].add_argument(
            "--lora-rank", type=int, default=None, metavar="R",
            help="journey: LoRA's, zoo train with train.lora_rank=R vs PEFT's LoRA on the "
                 "Trainer, and zoo's full fine-tuning")
    journey.add_argument("--tiny", action="store_true",
                         help="a 2-layer model and 352 lines: checks the benchmark itself")
    # embeddings' own flags; under `all`, their defaults (zoo_benchmarks.embeddings).
    embeddings = parsers["embeddings"]
    embeddings.add_argument("--checkpoint", dest="embeddings_checkpoint", metavar="FOLDER",
                            help="a sentence-transformers folder (default: a random one of "
                                 "all-MiniLM-L6-v2's size, built)")
    embeddings.add_argument("--texts-file", dest="embeddings_texts_file", metavar="FILE",
                            help="one text a line, 2,000 at most (default: the pydoc "
                                 "corpus' lines, of mixed lengths)")
    parsers["all"].add_argument("--embeddings-checkpoint", dest="embeddings_checkpoint",
                                metavar="FOLDER", help="embeddings: as its --checkpoint")
    parsers["all"].add_argument("--embeddings-texts-file", dest="embeddings_texts_file",
                                metavar="FILE", help="embeddings: as its --texts-file")
    embeddings.add_argument("--tiny", action="store_true",
                            help="a 2-layer model and 128 lines: checks the benchmark itself")
    parsers["all"].add_argument("--only", nargs="+", default=None, metavar="TARGET",
                                choices=[name for name in parsers if name != "all"],
                                help="run only these benchmarks and merge their sections into "
                                     "--out in place of the old ones, marked as a separate "
                                     "run with this machine and date (zoo_benchmarks.merge)")
    parsers["all"].add_argument("--out", default=os.path.join("docs", "benchmarks.md"),
                                help="the markdown file to write (atomically)")
