"""The `zoo` command line: one module per subcommand under zoo_cli/.

Each subcommand module defines `register(subparsers)`, which adds its parser and sets
`func=run` on it (and may set `before_tensorflow`: a check that can answer first), and
`run(args) -> int`; zoo_cli/arguments.py adds the parser
(`add_command`) and the flags several commands share (`--set`, `--run-dir`, `--checkpoint`,
`--overwrite`).
"""

import argparse
import contextlib
import importlib
import os
import sys
import tempfile

# Subcommand name -> module under zoo_cli/. A new command is one file plus one line here.
COMMANDS = {
    "demo": "zoo_cli.demo",
    "benchmark": "zoo_cli.benchmark",
    "data": "zoo_cli.data",
    "convert": "zoo_cli.convert",
    "presets": "zoo_cli.presets",
    "train": "zoo_cli.train",
    "evaluate": "zoo_cli.evaluate",
    "score": "zoo_cli.score",
    "export": "zoo_cli.export",
    "predict": "zoo_cli.predict",
    "generate": "zoo_cli.generate",
    "reproduce": "zoo_cli.reproduce",
}


def version():
    """The installed distribution's version (its metadata: setup.cfg's `version`), read
    without importing zoo, so without TensorFlow."""
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


DISTRIBUTION = "zoo-models"  # setup.cfg's `name`, as zoo.DISTRIBUTION (not imported: TensorFlow)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="zoo", description="BERT, GPT-1 and ViT for Keras 3: models, checkpoints, data."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS.values():
        importlib.import_module(module).register(subparsers)
    return parser


@contextlib.contextmanager
def quiet_stderr_fd(replay=lambda error: True):
    """Silence file descriptor 2 for the duration; on an exception for which `replay(error)`
    is true, show what was captured. Yields a file on the terminal's stderr (progress bars).

    TensorFlow's C++ libraries log CUDA/oneDNN start-up lines while loading, before absl logging
    starts, so TF_CPP_MIN_LOG_LEVEL cannot hide them; capturing the descriptor can, and it also
    catches what child processes (Beam's local workers) write.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured, os.fdopen(os.dup(saved), "w") as terminal:
        os.dup2(captured.fileno(), 2)
        try:
            yield terminal
        except BaseException as error:
            sys.stderr.flush()
            os.dup2(saved, 2)
            if replay(error):
                captured.seek(0)
                sys.stderr.write(captured.read().decode(errors="replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TF's Python-side logging
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if getattr(args, "pipeline_options", False):
        args.pipeline_args = unknown  # Apache Beam's own options, passed to the runner
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    # A command may answer before TensorFlow loads (its `before_tensorflow(args)` returns an
    # exit code): `zoo benchmark` from an installed wheel, which refuses in one line.
    early = getattr(args, "before_tensorflow", None)
    code = early(args) if early is not None else None
    if code is not None:
        return code
    with quiet_stderr_fd():
        import tensorflow  # loaded here, so that its start-up lines are not shown
    # lazy: loads Keras, after TensorFlow's start-up lines are hidden
    from zoo.training.preemption import Interrupted
    try:
        return args.func(args) or 0
    except Interrupted as stop:
        # SIGTERM / SIGINT during training: the backup is written; the same command resumes.
        print(f"zoo {args.command}: {stop}", file=sys.stderr)
        return stop.exit_code
    except (OSError, ValueError, KeyError, RuntimeError, tensorflow.errors.OpError) as error:
        # Bad input (a missing file, a malformed row, an unknown key): the message names the
        # file, line or key, which is what the user needs; the traceback is for developers.
        # A storage fault (no space, no permission, a read-only file system) is one line too,
        # also when TensorFlow or h5py raised it (zoo.storage); other errors are bugs.
        # lazy: loads Keras (the zoo package), only on an error
        from zoo.storage import storage_message

        message = storage_message(error)
        if os.environ.get("ZOO_TRACEBACK") or (
                message is None and not isinstance(error, (OSError, ValueError, KeyError))):
            raise
        print(f"zoo {args.command}: error: {message or error}\n"
              "(set ZOO_TRACEBACK=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
