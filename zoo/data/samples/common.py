"""What every sample writer shares: the output tree's layout, row counts and file writers."""

import contextlib
import csv
import os

from zoo import files
from zoo.data.benchmarks import BENCHMARKS

# Task -> split -> path under the output directory: each benchmark's `layout`, the real
# distributions' names. Copies: the manifest may be changed without changing the records.
LAYOUT = {name: dict(benchmark.layout) for name, benchmark in BENCHMARKS.items()
          if benchmark.layout}  # (your own data's tasks have no official files)
CORPUS = "corpus/corpus.txt"
MANIFEST = "manifest.json"

# Rows per split: enough to learn the rules, few enough that the samples stay small and quick.
TRAIN, EVAL = 400, 100
# The training rows of the run being written (write_samples' train_rows); see `row_count`.
_train_rows = TRAIN


@contextlib.contextmanager
def training_rows(n):
    """Have the writers write `n` training rows while the block runs."""
    global _train_rows
    default, _train_rows = _train_rows, n
    try:
        yield
    finally:
        _train_rows = default


def row_count(split, train_split="train"):
    """How many rows `split` gets: the run's training rows for `train_split`, EVAL otherwise."""
    return _train_rows if split == train_split else EVAL


def write_tsv(root, path, header, rows, bom=False):
    """`rows` (and `header`, unless None) as tab-separated lines in `root/path`, with a leading
    byte-order mark if `bom`; a field holding a tab or line break is a bug of the writer."""
    lines = [header] if header else []
    lines += rows
    for line in lines:
        assert not any(set(str(field)) & set("\t\r\n") for field in line), line
    text = "".join("\t".join(map(str, line)) + "\n" for line in lines)
    files.write_text(os.path.join(root, path), ("\ufeff" if bom else "") + text)


def write_csv(root, path, header, rows):
    """`header` and `rows` as a CSV file `root/path` with Python's csv quoting and "\\n" ends."""
    path = os.path.join(root, path)
    files.makedirs(os.path.dirname(path))
    with files.open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def rows_per_split(task, rng, make):
    """{split: [make(rng, i) ...]} for each split of the task's layout, `row_count(split)` rows
    each."""
    return {split: [make(rng, i) for i in range(row_count(split))]
            for split in LAYOUT[task]}
