"""What the `zoo` subcommands' parsers share: the subcommand itself and the flags several take.

A flag that means the same in every command that takes it is added here, so its name, type,
choices and default cannot drift apart; its help stays with the command, which knows what it
means there.
"""

import argparse

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
