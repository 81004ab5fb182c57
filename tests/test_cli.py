"""The `zoo` command: every subcommand is listed, and bad input is a one-line error, exit 1."""

import pytest

from tools import main as cli


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in cli.COMMANDS:
        assert command in out


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
