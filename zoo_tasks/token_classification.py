"""Your own tagged words: token classification (NER-style tagging) with any tag set, from
CoNLL column files or JSON lines `{"tokens": [...], "tags": [...]}`.

The model, alignment and prediction are CoNLL-2003's (zoo_tasks.tagging, BERT section 5.3: the
first sub-token of each word carries its tag, no CRF; fine-tuned or feature-based with
`model.features`). What is the user's here:

- The files: `data.train_file`, `data.dev_file`, `data.test_file`, CoNLL (the word first, the
  tag last, blank lines between sentences; .conll, .txt, .iob, .bio, .tsv) or JSON lines (the
  fields `data.tokens_column`, `data.tags_column`), by extension or `data.format`.
- The tags: `data.labels`, or every tag of the training file: "O" first, then by entity type
  and prefix (B, I, E, S), or plainly sorted when they are not IOB-like. The found names are
  written to `config.data.labels`, kept in the run's config.yaml. Tags are learnt and
  predicted as written (IOB1, IOB2 / BIO, IOBES, or no scheme at all).
- Metrics (`zoo.metrics.token_classification`): conlleval's entity scores where the tags are
  IOB-like (the scheme found in the gold tags; IOBES scored as its IOB2 form), token accuracy
  otherwise. Predictions files are JSON lines {"id", "tags"}, the format `zoo score
  token_classification` reads.
"""

import os
import re

from zoo_tasks.base import own_data_file
from zoo_tasks.tagging import TaggingTask
from zoo.data import DataError
from zoo.data.readers.tags import tag_scheme
from zoo.metrics import token_classification as metrics_lib

_PREFIX_ORDER = {"B": 0, "I": 1, "E": 2, "S": 3}
_ENTITY_TAG = re.compile(r"([BIES])-(.+)", re.DOTALL)


def sorted_tags(tags):
    """Tag names in tag-id order: "O" first, then IOB-like tags by entity type and prefix
    (B, I, E, S); a tag set that is not IOB-like, plainly sorted.

    Examples:
        >>> sorted_tags({"I-PER", "B-LOC", "O", "B-PER"})
        ['O', 'B-LOC', 'B-PER', 'I-PER']
        >>> sorted_tags({"VB", "NN", "DT"})
        ['DT', 'NN', 'VB']
    """
    tags = set(tags)
    matches = {tag: _ENTITY_TAG.fullmatch(tag) for tag in tags - {"O"}}
    if not all(matches.values()):
        return sorted(tags)
    return (["O"] if "O" in tags else []) + sorted(
        matches, key=lambda t: (matches[t].group(2), _PREFIX_ORDER[matches[t].group(1)]))


def labels_scheme(labels):
    """The scheme a tag set allows: "IOBES" (S- or E- tags), "IOB1" (B- and I- tags: scored
    through `to_iob2`, which leaves IOB2 as it is) or "none"."""
    if any(tag != "O" and not _ENTITY_TAG.fullmatch(tag) for tag in labels):
        return "none"
    return "IOBES" if any(tag[:2] in ("E-", "S-") for tag in labels) else "IOB1"


class TokenClassificationTask(TaggingTask):
    """Token classification on your own CoNLL or JSON-lines files; see the module docstring.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("token_classification", {
        ...     "model": {"preset": "bert_tiny", "vocabulary": "vocab"},
        ...     "data": {"train_file": "genes_train.conll", "dev_file": "genes_dev.conll"}})
        ... # doctest: +SKIP
        >>> task.labels  # doctest: +SKIP
        ('O', 'B-GENE', 'I-GENE')
    """

    @property
    def labels(self):
        """The tag names in tag-id order: `data.labels`, or found in the training data (and
        then written there)."""
        data = self.config.data
        if data.labels is None:
            tags = {tag for sentence in self.examples("train")["tags"] for tag in sentence}
            if len(tags) < 2:
                raise DataError(self.path("train"), None, "one tag", "at least two tags to "
                                "tell apart", f"only {sorted(tags)}" if tags else "no tags")
            data.labels = sorted_tags(tags)
        return tuple(data.labels)

    @property
    def main_metric(self):
        """Entity F1 for IOB-like tags, token accuracy otherwise."""
        return metrics_lib.main_metric(labels_scheme(self.labels))

    @property
    def outside(self):
        """The tag of a word with no token: "O", or for a tag set without it the first."""
        return "O" if "O" in self.labels else self.labels[0]

    # --- Data ---

    def path(self, split):
        """The file of `split`: `data.<split>_file`."""
        return own_data_file(self, split, "a CoNLL or JSON-lines file of tagged words")

    def read(self, path):
        """{"words", "tags", "ids", "gold", "path", "report"} of a file; a file without tags
        (a test file) gets `outside` tags to batch, and "gold" False."""
        data = self.config.data
        train = data.train_file == path
        options = dict(format=data.format, tokens_column=data.tokens_column,
                       tags_column=data.tags_column, label_required=train or data.dev_file == path)
        if not (train and data.labels is None):
            options["labels"] = self.labels
        rows, report = self.read_rows(path, **options)
        gold = all(r["tags"] is not None for r in rows)
        return {"words": [r["words"] for r in rows],
                "tags": [r["tags"] if gold else [self.outside] * len(r["words"]) for r in rows],
                "ids": [r["id"] for r in rows], "gold": gold, "path": path, "report": report}

    # --- Evaluation ---

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Entity scores or token accuracy (0-100) on a split or file; empty for a file
        without tags. With `return_predictions=True` also {split: (columns, predicted)}."""
        columns = self.examples(split, path)
        predicted, unpredicted = self.predict(model, split, path)
        results = {}
        if columns["gold"]:
            scheme = tag_scheme(columns["tags"])
            results = {**metrics_lib.tag_scores(columns["tags"], predicted, scheme),
                       "words_unpredicted": unpredicted}
        return (results, {split: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.jsonl`: {"id", "tags"} per sentence, in the file's order."""
        columns, predicted = predictions
        path = os.path.join(directory, f"{name}.jsonl")
        metrics_lib.write_tag_predictions(path, columns["ids"], predicted)
        return [path]


__all__ = ["TokenClassificationTask", "labels_scheme", "sorted_tags"]
