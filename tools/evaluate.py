"""`zoo evaluate`: the benchmark's metrics of a trained run, and its predictions file.

  zoo evaluate --run-dir runs/mrpc                       # dev set, best checkpoint
  zoo evaluate --run-dir runs/mnli --split dev           # matched and mismatched
  zoo evaluate --run-dir runs/mrpc --data other/dev.tsv  # any file in the official format

Prints one JSON object of metrics and writes RUN/predictions/<split>.tsv (GLUE submission
format: index<TAB>prediction), which `zoo score` reads. A file without labels (a test set)
gives predictions only.
"""

import argparse
import json
import os


def register(subparsers):
    parser = subparsers.add_parser("evaluate", help="metrics and predictions of a trained run",
                                   description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--split", default="dev", help="dev (default), test, or another "
                        "split of the task; with --data, the name of the predictions file")
    parser.add_argument("--data", default=None, help="evaluate this file instead of the "
                        "split's file under data.dir")
    parser.add_argument("--checkpoint", choices=("best", "final"), default="best")
    parser.set_defaults(func=run)


def run(args):
    from zoo import training

    metrics = training.evaluate_run(args.run_dir, args.split, args.data, args.checkpoint)
    print(json.dumps(metrics, sort_keys=True))
    print(f"predictions: {os.path.join(args.run_dir, 'predictions')}")
    return 0
