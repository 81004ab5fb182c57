"""What the `zoo` subcommands' parsers share: the subcommand itself and the flags several take.

A flag that means the same in every command that takes it is added here, so its name, type,
choices and default cannot drift apart; its help stays with the command, which knows what it
means there.
"""

import argparse
import sys

CHECKPOINTS = ("best", "final")


def add_command(subparsers, name, help, doc, func=None):
    """The subcommand `name`: listed under `zoo --help` with `help`, its own --help showing
    `doc` (the module's docstring, its usage lines as written); runs `func(args) -> int`, or,
    without `func`, the function its own subcommands set."""
    parser = subparsers.add_parser(name, help=help, description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    if func is not None:
        parser.set_defaults(func=func)
    return parser


def add_overrides(parser, help):
    """`--set KEY=VALUE` (repeatable) into `args.overrides`, the config overrides of
    `zoo.config.resolve`."""
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help=help)


def add_run_dir(parser, help="the run directory", required=True):
    """`--run-dir DIR`: the directory of a `zoo train` run."""
    parser.add_argument("--run-dir", required=required, help=help)


def add_checkpoint(parser, help=None):
    """`--checkpoint best|final` (default best): which model of a run directory."""
    parser.add_argument("--checkpoint", choices=CHECKPOINTS, default="best", help=help)


def add_overwrite(parser, help="replace what is in --run-dir"):
    """`--overwrite`: replace an existing output instead of refusing (or resuming)."""
    parser.add_argument("--overwrite", action="store_true", help=help)


def add_model(parser, help):
    """`--model NAME`: a checkpoint by name or path (`zoo.loading`: a pretrained preset,
    hf://ORG/NAME, ORG/NAME, a Hugging Face folder ...), served with its head's task
    (`zoo_tasks.load`); `parser` may be a mutually exclusive group of the command's sources.
    `add_model_options` adds its --task and --set."""
    parser.add_argument("--model", metavar="NAME", default=None, help=help)


def add_model_options(parser):
    """`--task` and `--set` of a `--model` (see `add_model`)."""
    parser.add_argument("--task", default=None, metavar="TASK",
                        help="--model: the task to serve (default: its head's, from "
                        "config.json's architectures; needed where it has none)")
    add_overrides(parser, "--model: a config override of its task (data.text_pair_column="
                  "text_pair, data.sequence_length=256, data.version_2=true ...); repeatable")


def load_model(args, progress=None):
    """`zoo_tasks.load` of `args.model` with `--task`, `--set` (and `--checkpoint` if the
    command has it), printing a line on what was loaded."""
    import zoo_tasks  # lazy: loads TensorFlow and Keras; `zoo --help` imports this module

    loaded = zoo_tasks.load(args.model, task=args.task, overrides=args.overrides,
                            checkpoint=getattr(args, "checkpoint", "best"))
    if loaded.source is not None:
        print(f"loaded {loaded.source.describe()}", file=progress or sys.stderr)
    return loaded


def check_model_options(args):
    """--task and --set only with --model: a one-line error otherwise."""
    if args.model is None and (args.task or args.overrides):
        raise ValueError("--task and --set apply to --model")
