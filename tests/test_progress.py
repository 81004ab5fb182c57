"""Progress in a log file (zoo.progress): plain lines every few seconds, not carriage-return
redraws; a bar on a terminal."""

import io
import time

from zoo import progress
from zoo_cli.main import main as cli


def test_off_a_terminal_progress_is_a_line_every_interval(monkeypatch):
    monkeypatch.setattr(progress, "LOG_SECONDS", 0.2)
    log = io.StringIO()
    start = time.monotonic()
    for _ in progress.bar(range(40), file=log, desc="work", unit=" items"):
        time.sleep(0.025)  # 1 s in all: about five intervals
    elapsed = time.monotonic() - start
    text = log.getvalue()
    assert "\r" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert all(line.startswith("work: ") for line in lines), lines
    assert lines[-1].startswith("work: 100%") and "40/40" in lines[-1]
    assert 2 <= len(lines) <= elapsed / 0.2 + 2, lines  # the first, one an interval, the last


def test_an_erased_bar_leaves_no_line_and_a_terminal_gets_tqdm_as_it_is():
    log = io.StringIO()
    for _ in progress.bar(range(3), file=log, desc="chunks", leave=False):
        pass
    assert "\r" not in log.getvalue()
    assert all(line.startswith("chunks: ") for line in log.getvalue().splitlines())

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    screen = Terminal()
    for _ in progress.bar(range(3), file=screen, desc="bar"):
        pass
    assert "\rbar: 100%" in screen.getvalue()  # redrawn in place


def test_a_command_with_stderr_in_a_file_writes_lines(tmp_path, capsys):
    """`zoo data vocab ... 2> log` (stderr not a terminal, as under capsys): its progress is a
    few plain lines (the 98 MB IMDB corpus: 17 lines; docs/measurements.md)."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i} of the corpus, with words to count.\n"
                              for i in range(3000)), encoding="utf-8")
    assert cli(["data", "vocab", "--corpus", str(corpus), "--size", "200", "--kind",
                "wordpiece", "--out", str(tmp_path / "vocab")]) == 0
    text = capsys.readouterr().err
    assert "\r" not in text, text[:500]
    counting = [line for line in text.splitlines() if line.startswith("counting words")]
    assert 1 <= len(counting) <= 5 and "100%" in counting[-1], text
