"""The `zoo` command: every subcommand is listed, and bad input is a one-line error, exit 1."""

import pytest

from zoo_cli import main as cli


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert command in out


def test_a_shared_flag_means_the_same_in_every_command():
    """--set, --checkpoint, --run-dir and --overwrite parse alike wherever they are taken."""
    parse = cli.build_parser().parse_args
    for argv in (["train", "--experiment", "e", "--run-dir", "r"],
                 ["score", "glue/mrpc", "--gold", "g", "--predictions", "p"],
                 ["data", "check", "text_classification", "f"]):
        assert parse(argv).overrides == []
        assert parse(argv + ["--set", "a.b=1", "--set", "c=d"]).overrides == ["a.b=1", "c=d"]
    for argv in (["convert", "s", "d"], ["evaluate", "--run-dir", "r"],
                 ["export", "--run-dir", "r", "--out", "o"]):
        assert parse(argv).checkpoint == "best"
        assert parse(argv + ["--checkpoint", "final"]).checkpoint == "final"
        with pytest.raises(SystemExit):
            parse(argv + ["--checkpoint", "last"])
    for argv in (["train", "--experiment", "e"], ["evaluate"], ["export", "--out", "o"]):
        with pytest.raises(SystemExit):  # --run-dir is required
            parse(argv)
    for argv in (["train", "--experiment", "e", "--run-dir", "r"], ["demo"],
                 ["data", "corpus", "--from", "f", "--out", "o"]):
        assert parse(argv).overwrite is False and parse(argv + ["--overwrite"]).overwrite


def test_a_commands_help_shows_its_usage_lines_as_written(capsys):
    for argv in (["data", "--help"], ["score", "--help"]):
        with pytest.raises(SystemExit):
            cli.main(argv)
        assert "\n  zoo " + argv[0] + " " in capsys.readouterr().out, argv


def test_bad_input_is_a_message_not_a_traceback(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ZOO_TRACEBACK", raising=False)
    missing = tmp_path / "no_such_corpus.txt"
    code = cli.main(["data", "pretrain", "--corpus", str(missing), "--vocab", str(tmp_path),
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    assert "zoo data: error:" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_only_data_pretrain_passes_unknown_options_on_to_beam(tmp_path, capsys):
    """`zoo data pretrain` hands options it does not know to Beam (with `--runner none`, no
    Beam, they are an error); every other command refuses them, as argparse does."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["data", "samples", "--out", str(tmp_path / "s"), "--project", "p"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --project p" in capsys.readouterr().err
    code = cli.main(["data", "pretrain", "--corpus", "c.txt", "--vocab", "v", "--out",
                     str(tmp_path / "out"), "--runner", "none", "--project", "p"])
    assert code == 1
    assert "--runner none runs without Beam: unknown arguments ['--project', 'p']" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    # A Beam option is never read as an abbreviation of zoo's own (--seed, --shards).
    args, unknown = cli.build_parser().parse_known_args(
        ["data", "pretrain", "--corpus", "c.txt", "--vocab", "v", "--out", "o", "--s", "1"])
    assert unknown == ["--s", "1"] and args.seed == 12345 and args.shards == 4


def test_traceback_on_request(tmp_path, monkeypatch):
    monkeypatch.setenv("ZOO_TRACEBACK", "1")
    with pytest.raises((OSError, ValueError)):
        cli.main(["data", "pretrain", "--corpus", str(tmp_path / "missing.txt"),
                  "--vocab", str(tmp_path), "--out", str(tmp_path / "out")])


def test_demo_prints_the_table(capsys):
    assert cli.main(["demo", "--models", "bert_tiny", "vit_tiny16", "--sequence-length", "8"]) == 0
    out = capsys.readouterr().out
    assert "bert_tiny" in out and "4,385,920" in out and "vit_tiny16" in out


def test_help_version_and_usage_errors_answer_without_tensorflow():
    """`zoo --help`, `zoo --version`, a subcommand's --help and a usage error never import
    TensorFlow (its import alone costs seconds of CPU and prints start-up lines); the version
    is the installed distribution's (its metadata), as `zoo.__version__` gives it."""
    import subprocess
    import sys
    from importlib import metadata

    code = """
import contextlib, io, sys
from zoo_cli import main
out = {}
for argv in (["--help"], ["--version"], ["train", "--help"], ["train"]):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main.main(argv)
        except SystemExit as exit:
            code = exit.code
    out[" ".join(argv)] = (code, stdout.getvalue(), stderr.getvalue())
    assert "tensorflow" not in sys.modules, argv
print(repr(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = eval(proc.stdout)  # the repr of a dict of strings, ints and tuples
    assert out["--version"] == (0, f"zoo {metadata.version('zoo-models')}\n", "")
    assert out["--help"][0] == 0 and out["--help"][1].startswith("usage: zoo")
    assert out["--help"][2] == ""
    assert out["train --help"][0] == 0 and "--experiment" in out["train --help"][1]
    code, _, err = out["train"]
    assert code == 2 and err.splitlines()[-1].startswith("zoo train: error: "), err

    import zoo

    assert zoo.__version__ == metadata.version(zoo.DISTRIBUTION)
