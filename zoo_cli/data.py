"""`zoo data`: vocabularies, pretraining shards and sample datasets.

  zoo data corpus   --from FILES_OR_FOLDERS --out FILE [--text-column C] [--strip-html]
  zoo data vocab    --corpus FILES --size N --kind wordpiece|bpe --out DIR
  zoo data pretrain --corpus FILES --vocab V --out DIR [--objective mlm_nsp|causal_lm]
                    [--runner DirectRunner|DataflowRunner|FlinkRunner|SparkRunner|none]
                    [Beam pipeline options, e.g. --direct_num_workers 2 or --project P]
  zoo data samples  --out DIR
  zoo data check    TASK PATH [--skip-bad-rows]
  zoo data check    text_classification FILE [--experiment E] [--set data.KEY=VALUE ...]
"""

import argparse
import logging
import os
import sys

from zoo_cli.arguments import add_command, add_overrides, add_overwrite
from zoo_cli.main import quiet_stderr_fd


def register(subparsers):
    parser = add_command(subparsers, "data", "build vocabularies, pretraining data, samples",
                         __doc__)
    commands = parser.add_subparsers(dest="data_command", required=True, metavar="WHAT")

    corpus = commands.add_parser(
        "corpus", help="your own documents as a corpus: one sentence a line, a blank line "
                       "between documents (the input of `data vocab` and `data pretrain`)")
    corpus.add_argument("--from", dest="sources", nargs="+", required=True,
                        help=".csv, .tsv, .jsonl or .parquet files (a document per row) or "
                             "folders of class folders of .txt files (a document per file)")
    corpus.add_argument("--out", required=True, help="the corpus file to write")
    corpus.add_argument("--text-column", default="text",
                        help="the column (or JSON key) holding the text (default text)")
    corpus.add_argument("--strip-html", action="store_true",
                        help="<br> and <p> end a sentence; other tags dropped, entities "
                             "unescaped (e.g. IMDB's reviews)")
    corpus.add_argument("--workers", type=int, default=None,
                        help="processes splitting sentences (default: one per core)")
    corpus.add_argument("--skip-bad-rows", action="store_true",
                        help="skip and count unreadable rows (default: stop at the first, "
                             "naming its file and line)")
    add_overwrite(corpus, help="replace an existing --out")
    corpus.set_defaults(func=run_corpus)

    vocab = commands.add_parser("vocab", help="train a WordPiece or BPE vocabulary on a corpus")
    vocab.add_argument("--corpus", nargs="+", required=True, help="plain-text files")
    vocab.add_argument("--size", type=int, required=True,
                       help="vocabulary size, special tokens included: exactly N tokens, fewer "
                            "only when every word of the corpus is a token already; an error "
                            "when the corpus's characters alone make more")
    vocab.add_argument("--kind", choices=("wordpiece", "bpe"), required=True)
    vocab.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                       help="lower-case (and strip accents for wordpiece); --no-lowercase: cased")
    vocab.add_argument("--out", required=True, help="output directory")
    vocab.set_defaults(func=run_vocab)

    pretrain = commands.add_parser(
        "pretrain", help="pretraining shards: sentence pairs with NSP labels (BERT), or token "
                         "ids of whole documents (--objective causal_lm: GPT-1, LTR)",
        description="Write pretraining shards with an Apache Beam pipeline. Options this "
                    "command does not know are Beam's pipeline options, passed to the runner "
                    "unchanged (e.g. --project, --region, --temp_location for Dataflow). "
                    "The same --seed gives the same shards on every runner and any number of "
                    "workers.",
        allow_abbrev=False)  # a Beam option must never be taken for a prefix of ours
    pretrain.add_argument("--objective", choices=("mlm_nsp", "causal_lm"), default="mlm_nsp",
                          help="mlm_nsp: OUT/seq{length}/ sentence pairs for BERT's masked LM "
                               "+ NSP; causal_lm: OUT/causal_lm/ token ids for a left-to-right "
                               "LM (the experiment's data.dir), every 20th document held out")
    pretrain.add_argument("--corpus", nargs="+", required=True,
                          help="one sentence per line, a blank line between documents")
    pretrain.add_argument("--vocab", required=True, help="vocab.txt or a tokenizer directory")
    pretrain.add_argument("--out", required=True, help="output directory")
    pretrain.add_argument("--max-sequence-length", type=int, nargs="+", default=[128, 512])
    pretrain.add_argument("--shards", type=int, default=4)
    pretrain.add_argument("--seed", type=int, default=12345)
    pretrain.add_argument("--dupe-factor", type=int, default=1,
                          help="passes over the corpus, each with new pair splits")
    pretrain.add_argument("--short-seq-prob", type=float, default=0.1,
                          help="probability of a shorter target length")
    pretrain.add_argument("--pool-size", type=int, default=None,
                          help="documents paired together, at most a chunk's (default "
                               "5000); NotNext segments come from the same pool")
    pretrain.add_argument("--runner", default="DirectRunner",
                          help="Apache Beam runner (default DirectRunner: this machine, one "
                               "worker process per core unless --direct_num_workers says "
                               "otherwise); `none` runs in this process without Beam")
    pretrain.add_argument("--chunk-mb", type=float, default=None,
                          help="MB of text per chunk, the unit of parallel work (default 8)")
    pretrain.set_defaults(func=run_pretrain, pipeline_options=True)

    samples = commands.add_parser("samples", help="write small learnable datasets in every format")
    samples.add_argument("--out", required=True, help="output directory")
    samples.add_argument("--seed", type=int, default=0)
    samples.add_argument("--train-rows", type=int, default=400,
                         help="training rows of the sentence-level and multiple-choice sets")
    samples.set_defaults(func=run_samples)

    check = commands.add_parser(
        "check", help="read a benchmark file with its reader: counts, labels, bad rows")
    check.add_argument("task", help="a task name, e.g. glue/mnli, squad_v2, conll2003")
    check.add_argument("path", help="the file (a directory for race and image_folder)")
    check.add_argument("--skip-bad-rows", action="store_true",
                       help="skip malformed rows, then count and list them (default: stop at "
                            "the first with its file and line; text_classification always "
                            "lists them)")
    check.add_argument("--experiment", default=None,
                       help="your own data (text_classification, token_classification, "
                            "question_answering): the experiment whose data section (and "
                            "tokenizer) to use (default: the defaults and --set)")
    add_overrides(check, help="your own data: a config override, as for zoo train, e.g. "
                              "data.text_column=review or model.vocabulary=DIR (repeatable)")
    check.set_defaults(func=run_check)


def run_corpus(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files
    from zoo.data.pretraining.corpus import default_workers, write_corpus  # lazy: as above

    if files.exists(args.out) and not args.overwrite:
        print(f"zoo data corpus: error: {args.out} exists; use --overwrite to replace it",
              file=sys.stderr)
        return 1
    for source in args.sources:
        if not files.exists(source):
            print(f"zoo data corpus: error: {source}: no such file or folder", file=sys.stderr)
            return 1
    workers = args.workers or default_workers()
    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    counts = write_corpus(args.sources, args.out, text_column=args.text_column,
                          strip_html=args.strip_html, workers=workers,
                          skip_bad_rows=args.skip_bad_rows)
    for report in counts["reports"]:
        print(report)
    print(f"wrote {counts['documents']} documents, {counts['sentences']} sentences to "
          f"{args.out}" + (f"; left out {counts['empty']} documents without a sentence"
                           if counts["empty"] else ""))
    return 0


def run_vocab(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo.tokenizers.training import train_vocabulary

    tokenizer = train_vocabulary(args.corpus, size=args.size, kind=args.kind, out=args.out,
                                 lowercase=args.lowercase)
    size = int(tokenizer.vocabulary_size())
    print(f"wrote a {args.kind} vocabulary of {size} tokens to {args.out} (load it with "
          "zoo.tokenizers.from_directory)" + (
              f"; fewer than --size {args.size}: every word of the corpus is a token"
              if size < args.size else ""))
    return 0


def pipeline_args(runner, options, paths=()):
    """Beam pipeline options for `--runner` and the options passed through, or None (`none`).

    On the DirectRunner, one worker process per core unless `--direct_num_workers` is given;
    several workers run in `multi_processing` mode, one in this process (`in_memory`). Paths
    on TF's `ram://` filesystem live in this process's memory, which worker processes cannot
    see: with such a path the DirectRunner runs in this process unless told otherwise.
    """
    if runner.lower() == "none":
        if options:
            raise ValueError(f"--runner none runs without Beam: unknown arguments {options}")
        return None
    args = [f"--runner={runner}", *options]
    if runner in ("DirectRunner", "direct"):
        given = {option.split("=")[0] for option in options if option.startswith("--")}
        in_process = any(str(path).startswith("ram://") for path in paths)
        workers = 1 if in_process else os.cpu_count() or 1
        if "--direct_num_workers" in given:
            from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions

            workers = PipelineOptions(options).view_as(DirectOptions).direct_num_workers
        else:
            args.append(f"--direct_num_workers={workers}")
        if "--direct_running_mode" not in given:
            args.append("--direct_running_mode="
                        + ("multi_processing" if workers != 1 else "in_memory"))
    return args


def run_pretrain(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo.data.pretraining.runner import PipelineError

    beam = pipeline_args(args.runner, args.pipeline_args, [*args.corpus, args.vocab, args.out])
    # Local Beam workers log their start-up (Beam's and TensorFlow's) to this terminal: kept
    # back unless a worker fails. A cluster runner's log (the job's address) is shown.
    if beam is None or args.runner not in ("DirectRunner", "direct"):
        return _pretrain(args, beam, progress=None)
    with quiet_stderr_fd(replay=lambda error: isinstance(error, PipelineError)) as terminal:
        return _pretrain(args, beam, progress=terminal)


def _pretrain(args, beam, progress):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo.data.pretraining import CHUNK_BYTES, POOL_SIZE, write_pretraining_data

    if args.chunk_mb is not None and args.chunk_mb <= 0:
        raise ValueError(f"--chunk-mb must be > 0, got {args.chunk_mb}")
    chunk_bytes = int(args.chunk_mb * 2**20) if args.chunk_mb else CHUNK_BYTES
    if args.objective == "causal_lm":
        # lazy: loads TensorFlow; `zoo --help` imports this module
        from zoo.data import write_causal_lm_data

        meta = write_causal_lm_data(args.corpus, args.vocab, args.out, shards=args.shards,
                                    chunk_bytes=chunk_bytes, pipeline_args=beam,
                                    progress=progress)
        print(f"causal_lm: {meta['num_documents']['train']} documents "
              f"({meta['num_tokens']['train']} tokens) in {args.shards} train shards, "
              f"{meta['num_documents']['dev']} ({meta['num_tokens']['dev']} tokens) held out, "
              f"in {os.path.join(args.out, 'causal_lm')}")
        return 0

    results = write_pretraining_data(args.corpus, vocab=args.vocab, out=args.out,
                                     max_sequence_lengths=args.max_sequence_length,
                                     shards=args.shards, seed=args.seed,
                                     dupe_factor=args.dupe_factor,
                                     short_seq_prob=args.short_seq_prob,
                                     pool_size=args.pool_size or POOL_SIZE,
                                     chunk_bytes=chunk_bytes, pipeline_args=beam,
                                     progress=progress)
    for length, meta in results.items():
        unpaired = meta["num_unpaired_documents"]
        print(f"seq{length}: {meta['num_instances']} sentence pairs from "
              f"{meta['num_documents']} documents, {meta['random_next_fraction']:.1%} random "
              f"next, {len(meta['shards'])} shards in {os.path.join(args.out, f'seq{length}')}"
              + (f"; {unpaired} documents left unpaired (alone in their chunk: no other "
                 "document to draw a random segment from)" if unpaired else ""))
    return 0


def run_samples(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files
    from zoo.data.samples import write_samples  # lazy: as above

    if args.train_rows < 1:
        raise ValueError(f"--train-rows must be >= 1, got {args.train_rows}")
    manifest = write_samples(args.out, seed=args.seed, train_rows=args.train_rows)
    size = sum(files.getsize(os.path.join(root, name))
               for root, _, names in files.walk(args.out) for name in names)
    print(f"wrote {len(manifest['tasks'])} sample datasets and a pretraining corpus to "
          f"{args.out} ({size / 1e6:.1f} MB); {os.path.join(args.out, 'manifest.json')} lists "
          "the files")
    return 0


def run_check(args):
    logger = logging.getLogger("zoo.data")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the report is printed instead of logged
    try:
        return _check(args)
    finally:
        logger.setLevel(level)  # `zoo data check` called in-process must not silence others


def _check_own_data(args):
    """`zoo data check text_classification FILE`: rows, skipped rows, labels with counts and
    token lengths against data.sequence_length."""
    # lazy: loads TensorFlow; `zoo --help` imports this module
    import zoo_tasks
    from zoo import config as config_lib  # lazy: as above

    config = config_lib.resolve(args.experiment or {"task": args.task}, args.overrides)
    if config.task != args.task:
        raise config_lib.ConfigError(f"--experiment {args.experiment}: task {config.task}, "
                                     f"not {args.task}")
    tokenize = bool(config.model.vocabulary or config.model.init_checkpoint)
    task = zoo_tasks.TASKS[args.task](args.task, config, check_data=False, tokenize=tokenize)
    result = task.check(args.path)
    print(f"{args.task}: {result['rows']} rows in {args.path} ({result['format']})")
    if task.regression:
        print("  scores: " + ", ".join(f"{k} {v:.4g}" for k, v in result["labels"].items()))
    else:
        print("  labels: " + ", ".join(f"{name} {n}" for name, n in result["labels"].items()))
    tokens = result["tokens"]
    if tokens is None:
        print("  token lengths: set model.vocabulary (or model.init_checkpoint) to see them")
    else:
        cut = tokens.pop("cut")
        print("  token lengths: " + ", ".join(f"{k} {v}" for k, v in tokens.items())
              + f"; {cut:.1%} of the rows are longer than data.sequence_length "
              f"{config.data.sequence_length} and would be cut")
    if result["skipped"]:
        print(result["skipped"])
        for error in result["bad_rows"]:
            print(f"  first: {error}")
    return 0


def _check(args):
    from collections import Counter

    if args.task == "text_classification":
        return _check_own_data(args)
    options = {}
    if args.task in ("token_classification", "question_answering"):  # your own files' fields
        # lazy: loads TensorFlow; `zoo --help` imports this module
        from zoo import config as config_lib

        data = config_lib.resolve(args.experiment or {"task": args.task}, args.overrides).data
        options = (dict(format=data.format, tokens_column=data.tokens_column,
                        tags_column=data.tags_column) if args.task == "token_classification"
                   else {"version": None if data.version_2 is None else 1 + data.version_2})
    elif args.overrides or args.experiment:
        print(f"error: --set and --experiment are for your own data's tasks; {args.task} is "
              "read as its benchmark lays it out", file=sys.stderr)
        return 1

    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo.data import DataError, read_examples

    counts = Counter()
    try:
        examples = read_examples(args.task, args.path, skip_bad_rows=args.skip_bad_rows,
                                 **options)
    except (ValueError, OSError) as error:  # an unknown task, a missing file
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        for example in examples:
            if "tags" in example:
                counts.update(example["tags"])
            elif "is_impossible" in example:
                counts["unanswerable" if example["is_impossible"] else "answerable"] += 1
            elif not isinstance(example["label"], float):  # STS-B scores are not counted
                label = example["label"]
                counts[examples.labels[label] if examples.task.kind == "image" else label] += 1
    except (DataError, OSError) as error:  # a malformed row, an unreadable file
        hint = ""
        if isinstance(error, DataError) and not args.skip_bad_rows:
            hint = " (--skip-bad-rows skips, counts and lists such rows)"
        print(f"error: {error}{hint}", file=sys.stderr)
        return 1
    report = examples.report
    print(f"{args.task}: {report.examples} examples in {args.path}")
    if report.layout:
        print(f"  read as {report.layout}")
    if counts:
        print("  " + ", ".join(f"{label} {n}" for label, n in sorted(counts.items(), key=str)))
    if report.skipped:
        print(report)
        for reason, error in report.first_errors.items():
            print(f"  first {reason}: {error}")
    return 0
