"""The command line of a row the lab trains for `zoo reproduce` (RUN/commands.sh):

  python -m zoo_benchmarks.baselines KIND --experiment E [--set k=v ...] --out DIR
  python -m zoo_benchmarks.transformers_recipe KIND --experiment E [--set k=v ...] --out DIR
      [--overwrite]

The experiment resolves as `zoo train` resolves it; an error in it or in the run (ValueError,
OSError) is one line on stderr and exit status 1.
"""

import argparse
import sys

from zoo import config as config_lib


def row_command(prog, description, kinds, train, argv=None, overwrite=False):
    """Parse `argv` as `prog` and call `train(kind, config, out)` (with `overwrite=` the flag's
    value where `overwrite`: the row refuses to train a finished run again without
    --overwrite). Returns the exit status."""
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=kinds)
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--out", required=True)
    if overwrite:
        parser.add_argument("--overwrite", action="store_true",
                            help="train a finished run again")
    args = parser.parse_args(argv)
    options = {"overwrite": args.overwrite} if overwrite else {}
    try:
        train(args.kind, config_lib.resolve(args.experiment, args.overrides), args.out,
              **options)
    except (ValueError, OSError) as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 1
    return 0
