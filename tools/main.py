"""The `zoo` command line: one module per subcommand under tools/.

Each subcommand module defines `register(subparsers)`, which adds its parser and sets
`func=run` on it, and `run(args) -> int`.
"""

import argparse
import importlib
import os
import sys

# Subcommand name -> module under tools/. A new command is one file plus one line here.
COMMANDS = {
    "demo": "tools.demo",
    "benchmark": "tools.benchmark",
    "data": "tools.data",
    "convert": "tools.convert",
}


def build_parser():
    parser = argparse.ArgumentParser(
        prog="zoo", description="BERT, GPT-1 and ViT for Keras 3: models, checkpoints, data."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        importlib.import_module(module).register(subparsers)
    return parser


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TF's CUDA/oneDNN start-up noise
    args = build_parser().parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
