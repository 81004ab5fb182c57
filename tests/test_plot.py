"""docs/img/speed.svg is docs/speed.md's table drawn (zoo_benchmarks.plot): the committed plot
equals the one the table gives now, byte for byte, and the table's reader refuses a cell it
cannot plot, naming the line."""

import os

import pytest

from tests.harness import REPO
from zoo_benchmarks.plot import draw, read_table

HEADER = "| comparison | peer | zoo / peer | target | measured |\n| --- | --- | --- | --- | --- |\n"


def test_the_committed_plot_is_the_tables(tmp_path):
    with open(os.path.join(REPO, "docs", "speed.md"), encoding="utf-8") as file:
        rows = read_table(file.read())
    draw(rows, str(tmp_path / "speed.svg"))
    with open(os.path.join(REPO, "docs", "img", "speed.svg"), "rb") as file:
        committed = file.read()
    assert (tmp_path / "speed.svg").read_bytes() == committed, (
        "docs/img/speed.svg is not docs/speed.md's table: run python -m zoo_benchmarks.plot")


def test_the_table_reads_each_row_and_refuses_what_it_cannot_plot(tmp_path):
    text = ("# Speed\n\n" + HEADER
            + "| `zoo train` journey | transformers' Trainer | 0.785 | ≥ 1.0 |"
              " 2026-11-28, Xeon AMX, `zoo benchmark journey` |\n"
            + "| generation, batch 8 | keras-hub (JAX) | 1,002.5 | none | 2026-11-27, H200 |\n\n"
            + "After the table.\n")
    first, second = read_table(text)
    assert (first.comparison, first.ratio, first.target, first.machine, first.status) == (
        "zoo train journey", 0.785, 1.0, "Xeon AMX", "missed")
    assert (second.ratio, second.written, second.target, second.status) == (
        1002.5, "1,002.5", None, "none")
    draw([first, second], str(tmp_path / "a.svg"))
    draw([first, second], str(tmp_path / "b.svg"))
    assert (tmp_path / "a.svg").read_bytes() == (tmp_path / "b.svg").read_bytes()
    with pytest.raises(ValueError, match=r"speed.md:5: zoo / peer 'n/a' is not a number"):
        read_table("x\n\n" + HEADER + "| a | b | n/a | none | today |\n")
    with pytest.raises(ValueError, match=r"speed.md:5: target '<= 2': expected 'none' or"):
        read_table("x\n\n" + HEADER + "| a | b | 1.5 | <= 2 | today |\n")
    with pytest.raises(ValueError, match=r"speed.md: no table with the columns"):
        read_table("| what | ratio |\n| --- | --- |\n| a | 1.0 |\n")
