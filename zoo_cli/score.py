"""`zoo score`: a predictions file against the gold labels of a benchmark file.

  zoo score glue/mrpc --gold glue/MRPC/dev.tsv --predictions runs/mrpc/predictions/dev.tsv

The predictions file is a GLUE submission TSV (`index<TAB>prediction`, one row per gold
example), as `zoo evaluate` writes it. Prints one JSON object, e.g.
{"accuracy": 0.84, "examples": 408, "f1": 0.88, "task": "glue/mrpc"}.

  zoo score squad_v2 --gold dev-v2.0.json --predictions runs/squad2/predictions/dev.json \
      --na-prob runs/squad2/predictions/dev_na_prob.json

Your own data is read with the columns of its experiment (the same `--set data.KEY=VALUE` as
`zoo train`; several labels a row are joined by data.label_separator in the predictions):

  zoo score text_classification --gold intents/dev.jsonl \
      --predictions runs/intents/predictions/dev.tsv \
      --set data.text_column=utterance --set data.label_column=intent
"""

import json

from zoo_cli.arguments import add_command, add_overrides


def register(subparsers):
    parser = add_command(subparsers, "score", "score a predictions file against gold labels",
                         __doc__, run)
    parser.add_argument("task", help="a task name, e.g. glue/mrpc, glue/stsb, snli")
    parser.add_argument("--gold", required=True,
                        help="the benchmark file with the labels, in its official format")
    parser.add_argument("--predictions", required=True, help="index<TAB>prediction TSV; "
                        "SQuAD: the official {id: answer text} JSON")
    parser.add_argument("--na-prob", default=None, help="squad_v2 only: the official "
                        "{id: no-answer score} JSON, for the best-threshold search")
    add_overrides(parser, help="text_classification, token_classification, "
                               "question_answering: the data section's columns, label kind, "
                               "format or version_2, as for zoo train (repeatable)")


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import metrics

    options = {"na_prob": args.na_prob}
    if "data" in metrics.OPTIONS.get(args.task, ()):  # your own data: its columns, version
        # lazy: as above
        from zoo import config

        options["data"] = config.resolve({"task": args.task}, args.overrides).data
    elif args.overrides:
        raise ValueError(f"--set: {args.task} is scored as its benchmark lays it out; --set is "
                         "for your own data's tasks (text_classification, token_classification, "
                         "question_answering)")
    result = metrics.score(args.task, args.gold, args.predictions, **options)
    print(json.dumps({**result, "task": args.task}, sort_keys=True))
    return 0
