"""What every sample writer shares: the output tree's layout, row counts and file writers."""

import contextlib
import csv
import os

from zoo import files

# Task -> split -> path under the output directory: the real distributions' names.
LAYOUT = {
    "glue/cola": {s: f"glue/CoLA/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/sst2": {s: f"glue/SST-2/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/mrpc": {s: f"glue/MRPC/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/qqp": {s: f"glue/QQP/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/stsb": {s: f"glue/STS-B/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/mnli": {s: f"glue/MNLI/{s}.tsv" for s in
                  ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched")},
    "glue/qnli": {s: f"glue/QNLI/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/rte": {s: f"glue/RTE/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/wnli": {s: f"glue/WNLI/{s}.tsv" for s in ("train", "dev", "test")},
    "snli": {s: f"snli/snli_1.0/snli_1.0_{s}.jsonl" for s in ("train", "dev", "test")},
    "scitail": {s: f"scitail/SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv"
                for s in ("train", "dev", "test")},
    "squad_v1": {s: f"squad/{s}-v1.1.json" for s in ("train", "dev")},
    "squad_v2": {s: f"squad/{s}-v2.0.json" for s in ("train", "dev")},
    "swag": {s: f"swag/{s}.csv" for s in ("train", "val", "test")},
    "race": {s: f"race/RACE/{s}" for s in ("train", "dev", "test")},
    # The 2016 release has no training file: models train on val and report test.
    "story_cloze": {"val": "story_cloze/cloze_test_val__spring2016 - cloze_test_ALL_val.csv",
                    "test": "story_cloze/cloze_test_test__spring2016 - cloze_test_ALL_test.csv"},
    "conll2003": {s: f"conll2003/{s}.txt" for s in ("train", "valid", "test")},
    "image_folder": {s: f"images/{s}" for s in ("train", "test")},
}
CORPUS = "corpus/corpus.txt"
MANIFEST = "manifest.json"

# Rows per split: enough to learn the rules, small enough to write in a second or two.
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


def _write_text(path, text):
    files.makedirs(os.path.dirname(path))
    with files.open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)


def _write_tsv(root, path, header, rows, bom=False):
    lines = [header] if header else []
    lines += rows
    for line in lines:
        assert not any(set(str(field)) & set("\t\r\n") for field in line), line
    text = "".join("\t".join(map(str, line)) + "\n" for line in lines)
    _write_text(os.path.join(root, path), ("\ufeff" if bom else "") + text)


def _write_csv(root, path, header, rows):
    path = os.path.join(root, path)
    files.makedirs(os.path.dirname(path))
    with files.open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _splits(task, rng, make):
    """{split: [make(rng, i) ...]} with `row_count(split)` rows each."""
    return {split: [make(rng, i) for i in range(row_count(split))]
            for split in LAYOUT[task]}
