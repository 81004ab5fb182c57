"""`zoo reproduce`: a paper's table as a grid of runs, our numbers beside the paper's.

  zoo reproduce --list
  zoo reproduce gpt1/table5 --scale sample --data-root runs/samples --run-dir runs/gpt1_table5
  zoo reproduce bert/table5 --scale paper --data-root /data --run-dir gs://b/t5 --dry-run

TABLE is a YAML under configs/reproduce (named without .yaml) or a path: the table's rows,
columns (the fine-tuning experiments), the paper's numbers and the settings of each scale
(`paper`: the paper's sizes and hyperparameters; `small`: a reduced setting for about one GPU
day; `sample`: `zoo data samples` on a laptop; `cpu`: real data on two CPU cores, bert/imdb).
--data-root is laid out as `zoo data samples` writes it (corpus/*.txt, glue/MRPC/train.tsv,
squad/train-v1.1.json ...), or as the table says (bert/imdb: the aclImdb folder). Each cell is an
ordinary run directory under --run-dir (pretraining/<name>, cells/<row>/<column>/seed_<s>);
running the same command again resumes where it stopped and never retrains a finished cell.
Writes RUN/table.md, RUN/table.csv and RUN/commands.sh (each cell as a `zoo train` command).
A baseline or transformers row (bert/imdb) is trained by the repository's zoo_benchmarks/ folder:
from a clone of the repository, not from an installed wheel.
"""

import os
import sys

from zoo_cli import lab
from zoo_cli.arguments import add_command, add_overrides, add_overwrite, add_run_dir


def register(subparsers):
    parser = add_command(subparsers, "reproduce", "reproduce a paper's table (a grid of runs) "
                         "and set our numbers beside the paper's", __doc__, run)
    parser.add_argument("table", nargs="?", help="e.g. gpt1/table5, or a table YAML path")
    parser.add_argument("--list", action="store_true",
                        help="print the tables with their cells and the paper's numbers")
    parser.add_argument("--data-root", help="the data, laid out as `zoo data samples` "
                        "writes it")
    add_run_dir(parser, "the reproduction's directory", required=False)  # not with --list
    parser.add_argument("--scale", default="sample", choices=("paper", "small", "sample", "cpu"),
                        help="the paper's settings, a reduced one-GPU-day setting, the "
                             "sample data on this machine (default), or real data on a few "
                             "CPU cores (bert/imdb)")
    parser.add_argument("--seeds", type=int, default=None,
                        help="fine-tuning seeds per cell (default: the scale's)")
    parser.add_argument("--checkpoint", default=None,
                        help="the pretrained checkpoint of a table that starts from one "
                             "(bert/imdb_pretrained): a Hugging Face folder, hf://ORG/NAME or "
                             "a pretrained preset name (default: the table's)")
    add_overrides(parser, "override a config key in every run, e.g. "
                  "model.vocabulary=/path/to/vocab (repeatable)")
    parser.add_argument("--rows", nargs="+", default=None, metavar="ROW",
                        help="run only these rows (and what they start from); the table "
                             "shows the other rows' finished cells")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (cells, steps, estimated accelerator hours) "
                             "without training")
    add_overwrite(parser)


def lab_trainers():
    """The trainers of the rows zoo does not train (a baseline, another library), from the
    repository's measurement lab (`zoo_benchmarks.rows.TRAINERS`); none from an installed wheel,
    where those rows stop with a message and zoo's own rows run."""
    try:
        return lab.import_lab("zoo_benchmarks.rows").TRAINERS
    except lab.LabMissing:
        return {}


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files, training
    from zoo_tasks import reproduce  # lazy: as above

    if args.list:
        print("\n\n".join(reproduce.describe(name) for name in reproduce.table_names()))
        return 0
    missing = [flag for flag, value in (("TABLE", args.table), ("--data-root", args.data_root),
                                        ("--run-dir", args.run_dir)) if not value]
    if missing:
        print(f"zoo reproduce: error: {', '.join(missing)} required (or --list)",
              file=sys.stderr)
        return 2
    if args.seeds is not None and args.seeds < 1:
        print(f"zoo reproduce: error: --seeds must be >= 1, got {args.seeds}", file=sys.stderr)
        return 2
    try:
        table = reproduce.load_table(args.table)
        if args.dry_run:
            print(reproduce.dry_run(table, args.scale, args.data_root, args.run_dir,
                                    args.seeds, args.overrides, checkpoint=args.checkpoint))
            return 0
        reproduce.reproduce(table, args.scale, args.data_root, args.run_dir, args.seeds,
                            args.overrides, args.overwrite, rows=args.rows, lab=lab_trainers(),
                            checkpoint=args.checkpoint)
    except (reproduce.TableError, training.TrainingError) as error:
        print(f"zoo reproduce: error: {error}", file=sys.stderr)
        return 1
    with files.open(os.path.join(args.run_dir, "table.md"), encoding="utf-8") as file:
        print(file.read(), end="")
    print(f"run directory: {args.run_dir}\nTensorBoard:   tensorboard --logdir {args.run_dir}")
    return 0
