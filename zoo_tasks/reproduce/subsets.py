"""A table's `subset`: a stratified, seeded sample of a labelled dataset's examples, written as
CSV files (id, text, label) that the table's cells read (`data.train_file={subset}/train.csv`).

A subset keeps each label's share of the source (scikit-learn's `train_test_split` with
`stratify`, its `random_state` the table's seed), so the same source, size and seed give the
same examples on every machine; the rows keep the source's order. The source is read as the
cells would read it (zoo_tasks' text_classification reader: a file, or a folder of class
folders, `labels` naming the classes kept; IMDB's train/unsup is skipped and counted).
"""

import csv
import io
import json
import os

from zoo import config as config_lib
from zoo import files

MANIFEST = "subset.json"  # written last: the subset is finished


def sample(labels, examples, seed):
    """The indices (ascending) of a stratified sample of `examples` of `labels`: each label's
    share of the sample is its share of `labels` (within one example, as scikit-learn rounds)."""
    from sklearn.model_selection import train_test_split  # lazy: only a subset step needs it

    if examples > len(labels):
        raise ValueError(f"a subset of {examples} examples from {len(labels)}")
    indices = list(range(len(labels)))
    if examples == len(labels):
        return indices
    chosen, _ = train_test_split(indices, train_size=examples, stratify=labels,
                                 random_state=seed)
    return sorted(chosen)


def write_subset(step, progress=print):
    """Write RUN/data/subset/<split>.csv for each split of a plan's "subset" step, then
    subset.json (each split's source, size, seed and examples per label)."""
    import zoo_tasks  # lazy: zoo_tasks imports this package

    record = {"seed": step["seed"], "labels": step["labels"], "splits": {}}
    taken = {}  # source -> the indices its earlier splits took
    for name, split in step["splits"].items():
        config = config_lib.resolve({"task": "text_classification"}, [
            f"data.train_file={split['source']}", f"data.labels={json.dumps(step['labels'])}"])
        task = zoo_tasks.TASKS["text_classification"]("text_classification", config,
                                                      check_data=False, tokenize=False)
        columns = task.examples("train")
        used = taken.setdefault(split["source"], set())
        left = [i for i in range(len(columns["label"])) if i not in used]
        try:
            chosen = [left[i] for i in sample([columns["label"][i] for i in left],
                                              split["examples"], step["seed"])]
        except ValueError as error:
            raise ValueError(f"subset {name} of {split['source']}: {error}"
                             + (f" (after the {len(used)} that earlier splits took)"
                                if used else "")) from None
        used.update(chosen)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["id", "text", "label"])
        for i in chosen:
            writer.writerow([columns["id"][i], columns["sentence1"][i], columns["label"][i]])
        files.write_text(os.path.join(step["run_dir"], f"{name}.csv"), out.getvalue())
        counts = {label: sum(columns["label"][i] == label for i in chosen)
                  for label in step["labels"]}
        record["splits"][name] = {"source": split["source"], "examples": len(chosen),
                                  "of": len(columns["label"]), "per_label": counts,
                                  "excluded": len(used) - len(chosen)}  # taken by earlier splits
        progress(f"subset {name}: {len(chosen)} of {len(columns['label'])} examples of "
                 f"{split['source']} ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    files.write_text(os.path.join(step["run_dir"], MANIFEST), json.dumps(record, indent=1) + "\n")
    return record
