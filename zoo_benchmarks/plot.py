"""`python -m zoo_benchmarks.plot`: docs/img/speed.svg, zoo against each peer, drawn from the
table of docs/speed.md.

docs/speed.md's table (columns `comparison | peer | zoo / peer | target | measured`) is the one
place the current figures are written; the plot is read from it, so that after a benchmark run
one edits the row and draws the plot again:

    python -m zoo_benchmarks.plot [--table docs/speed.md] [--out docs/img/speed.svg]

One horizontal bar a row, from parity (a vertical line at 1.0) to the row's zoo / peer, on a
log scale (0.5 and 2 lie as far from parity); a tick at the row's target; bars coloured by
whether the target is met, missed or absent. A target cell is `none` or `≥ X`; the measured
cell starts with the date and the machine (`2026-11-28, Xeon AMX, ...`), and the machine goes
into the bar's label. The same table gives the same bytes (`svg.hashsalt`, no date in the
file's metadata), so the SVG changes in a commit only when the figures do.
"""

import argparse
import dataclasses
import io
import math
import os
import re

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, NullLocator

from zoo import files

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ("comparison", "peer", "zoo / peer", "target", "measured")
COLORS = {"met": "#1f77b4", "missed": "#e8710a", "none": "#9aa0a6"}


@dataclasses.dataclass(frozen=True)
class Row:
    """One comparison of the table: zoo's rate over the peer's (> 1: zoo faster)."""

    comparison: str
    peer: str
    ratio: float
    target: float | None
    measured: str
    written: str  # the ratio as the table writes it (0.50, not 0.5)

    @property
    def machine(self):
        """The measured cell's second field (`2026-11-28, Xeon AMX, ...` -> `Xeon AMX`)."""
        fields = [field.strip() for field in self.measured.split(",")]
        return fields[1] if len(fields) > 1 else fields[0]

    @property
    def status(self):
        if self.target is None:
            return "none"
        return "met" if self.ratio >= self.target else "missed"


def plain(cell):
    """A cell's text without markdown: links as their text, no backticks or emphasis."""
    cell = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell)
    return cell.replace("`", "").replace("**", "").strip()


def _cells(line):
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def read_table(text, source="docs/speed.md"):
    """The rows of the table whose header is `COLUMNS` in the markdown `text`."""
    lines = text.split("\n")
    for start, line in enumerate(lines):
        if line.startswith("|") and tuple(_cells(line)) == COLUMNS:
            break
    else:
        raise ValueError(f"{source}: no table with the columns | {' | '.join(COLUMNS)} |")
    rows = []
    for number, line in enumerate(lines[start + 2:], start + 3):
        if not line.startswith("|"):
            break
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            raise ValueError(f"{source}:{number}: {len(cells)} cells, expected {len(COLUMNS)}")
        comparison, peer, ratio, target, measured = cells
        written = plain(ratio)
        try:
            ratio = float(written.replace(",", ""))
        except ValueError:
            raise ValueError(f"{source}:{number}: zoo / peer {ratio!r} is not a number") from None
        target = plain(target)
        if target == "none":
            target = None
        else:
            match = re.fullmatch(r"≥\s*([0-9.]+)", target)
            if not match:
                raise ValueError(f"{source}:{number}: target {target!r}: expected 'none' or "
                                 "'≥ X'")
            target = float(match[1])
        rows.append(Row(plain(comparison), plain(peer), ratio, target, plain(measured), written))
    if not rows:
        raise ValueError(f"{source}: the table has no rows")
    return rows


def _ticks(low, high):
    """Powers of two from below `low` to above `high`, as the axis' ticks."""
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    return [2.0 ** k for k in range(first, last + 1)]


def _label_at(row):
    """Where a bar's figure goes: past the bar's end, or past the target's tick when the tick
    lies beyond the end on the same side of parity (so the two do not overlap)."""
    if row.target is None or (row.target >= 1.0) != (row.ratio >= 1.0):
        return row.ratio
    return max(row.ratio, row.target) if row.ratio >= 1.0 else min(row.ratio, row.target)


def draw(rows, path):
    """Writes the bar chart of `rows` to the SVG file `path`."""
    values = [row.ratio for row in rows] + [row.target for row in rows if row.target]
    low, high = min(values + [1.0]) / 1.5, max(values + [1.0]) * 1.5
    settings = {"svg.hashsalt": "zoo", "svg.fonttype": "none", "font.size": 9}
    with matplotlib.rc_context(settings):
        figure = Figure(figsize=(12, 0.27 * len(rows) + 1.6))
        axes = figure.add_subplot()
        ys = list(range(len(rows) - 1, -1, -1))  # the table's first row at the top
        for y, row in zip(ys, rows):
            axes.barh(y, row.ratio - 1.0, left=1.0, height=0.7, color=COLORS[row.status])
            right = row.ratio >= 1.0
            axes.text(_label_at(row) * (1.03 if right else 1 / 1.03), y, row.written,
                      va="center", ha="left" if right else "right", fontsize=8)
            if row.target is not None:
                axes.plot([row.target], [y], marker="|", markersize=11, markeredgewidth=1.5,
                          color="black", linestyle="none")
        axes.axvline(1.0, color="black", linewidth=1)
        axes.set_xscale("log")
        axes.set_xlim(low, high)
        ticks = [t for t in _ticks(low, high) if low <= t <= high]
        axes.xaxis.set_major_locator(FixedLocator(ticks))
        axes.xaxis.set_minor_locator(NullLocator())
        axes.set_xticklabels([f"{t:g}" for t in ticks])
        axes.set_yticks(ys)
        axes.set_yticklabels([f"{row.comparison} vs {row.peer} ({row.machine})"
                              for row in rows], fontsize=8)
        axes.set_ylim(-0.7, len(rows) - 0.3)
        axes.grid(axis="x", color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        axes.spines[["top", "right"]].set_visible(False)
        axes.set_xlabel("zoo / peer (log scale): above 1, zoo is faster")
        axes.set_title("zoo against each peer (docs/speed.md's table)")
        axes.legend(handles=[Patch(color=COLORS["met"], label="target met"),
                             Patch(color=COLORS["missed"], label="target missed"),
                             Patch(color=COLORS["none"], label="no target"),
                             Line2D([], [], marker="|", color="black", linestyle="none",
                                    markersize=11, markeredgewidth=1.5, label="target"),
                             Line2D([], [], color="black", linewidth=1, label="parity (1.0)")],
                    loc="lower right", fontsize=8)
        figure.tight_layout()
        svg = io.StringIO()
        figure.savefig(svg, format="svg", metadata={"Date": None})
    files.write_text(path, svg.getvalue())  # atomically, parents made


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m zoo_benchmarks.plot",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", default=os.path.join(REPO, "docs", "speed.md"),
                        help="the markdown file with the table (default: docs/speed.md)")
    parser.add_argument("--out", default=os.path.join(REPO, "docs", "img", "speed.svg"),
                        help="the SVG file to write (default: docs/img/speed.svg)")
    args = parser.parse_args(argv)
    with files.open(args.table, encoding="utf-8") as file:
        rows = read_table(file.read(), args.table)
    draw(rows, args.out)
    print(f"wrote {os.path.relpath(args.out)}: {len(rows)} comparisons from "
          f"{os.path.relpath(args.table)}")


if __name__ == "__main__":
    main()
