"""`zoo score`: a predictions file against the gold labels of a benchmark file.

  zoo score glue/mrpc --gold glue/MRPC/dev.tsv --predictions runs/mrpc/predictions/dev.tsv

The predictions file is a GLUE submission TSV (`index<TAB>prediction`, one row per gold
example), as `zoo evaluate` writes it. Prints one JSON object, e.g.
{"accuracy": 0.84, "examples": 408, "f1": 0.88, "task": "glue/mrpc"}.
"""

import argparse
import json


def register(subparsers):
    parser = subparsers.add_parser("score", help="score a predictions file against gold labels",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", help="a task name, e.g. glue/mrpc, glue/stsb, snli")
    parser.add_argument("--gold", required=True,
                        help="the benchmark file with the labels, in its official format")
    parser.add_argument("--predictions", required=True, help="index<TAB>prediction TSV")
    parser.set_defaults(func=run)


def run(args):
    from zoo import metrics

    result = metrics.score(args.task, args.gold, args.predictions)
    print(json.dumps({**result, "task": args.task}, sort_keys=True))
    return 0
