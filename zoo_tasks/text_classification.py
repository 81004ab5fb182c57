"""Your own data: text classification of one text or a pair, with one label, several labels
or a score a row, from CSV, TSV, JSON lines, Parquet, a folder of class folders, or rows in
memory.

The model, packing and training are sentence classification's (zoo_tasks.classification): BERT
section 4.1 (the [CLS] vector and a K-way layer; one text is segment A, a pair A and B) and
GPT-1 section 3.3 (`[start; text; extract]`, a pair in the entailment form `[start; text;
delim; pair; extract]`, with the auxiliary LM loss, lambda = `train.lm_weight`). What is the
user's here:

- The files: `data.train_file`, `data.dev_file`, `data.test_file`, of any name, local or
  `gs://`, in the format of their extension (or `data.format`), read by
  `zoo.data.readers.tables` with the columns `data.text_column`, `data.text_pair_column`,
  `data.label_column`, `data.id_column`. From Python, rows in memory instead:
  `zoo_tasks.create("text_classification", config, rows={"train": [...], "dev": dataframe})`.
- The labels: `data.labels`, or every label of the training file, sorted (numerically when
  all are integers), as transformers' run_glue.py sorts them. The found names are written to
  `config.data.labels`, so the run's config.yaml keeps them and evaluation, export and
  conversion need no data. A dev or test label never seen in training is an error naming its
  line; a training file with a single class is refused.
- Their kind: one label a row (softmax, cross-entropy); `data.multi_label` (a sigmoid a
  label and binary cross-entropy, as transformers' problem_type "multi_label_classification";
  a label is predicted at probability >= `data.threshold`); `data.regression` (one output,
  squared error).
- Metrics: `zoo.metrics.text_classification` (scikit-learn's and scipy's).
"""

import math
import os

import keras
import numpy as np

from zoo import config as config_lib
from zoo.data import DataError, read_examples
from zoo.data.readers import Report
from zoo.data.readers.tables import read_rows, table_format
from zoo.metrics import text_classification as text_classification_metrics
from zoo.metrics.predictions import write_predictions
from zoo_tasks import serving
from zoo_tasks.base import OWN_SPLITS as SPLITS
from zoo_tasks.base import own_data_file, prediction_table, with_lm_loss
from zoo_tasks.classification import ClassificationTask


def sorted_labels(names):
    """Label names in label-id order: numerically when all are integers ("2" before "10"),
    else as strings.

    Examples:
        >>> sorted_labels({"10", "2", "-1"}), sorted_labels({"pos", "neg"})
        (['-1', '2', '10'], ['neg', 'pos'])
    """
    names = list(names)
    try:
        return sorted(names, key=int)
    except ValueError:
        return sorted(names)


class TextClassificationTask(ClassificationTask):
    """Classification (or regression) on your own files or rows; see the module docstring.

    Args:
        name: "text_classification".
        config: a `zoo.config.Experiment`; its data section names the files and columns.
        check_data: read the train and dev data now, so a bad path, column or label fails
            before training starts (and the labels are found).
        rows: {split: a list of dicts or a pandas DataFrame} in memory, read as the files are.
        tokenize: False: no tokenizer (`check` without token lengths, before a vocabulary
            exists).

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("text_classification", {
        ...     "model": {"preset": "bert_tiny", "vocabulary": "vocab"},
        ...     "data": {"train_file": "reviews.csv", "dev_file": "dev.csv"}})  # doctest: +SKIP
        >>> task.labels  # doctest: +SKIP
        ('negative', 'positive')
    """

    bilstm_head = True
    signatures = serving.text_classification.signatures

    def __init__(self, name, config, check_data=True, rows=None, tokenize=True):
        unknown = sorted(set(rows or {}) - set(SPLITS))
        if unknown:
            raise config_lib.ConfigError(f"rows: unknown split {unknown[0]!r}; splits: "
                                         f"{', '.join(SPLITS)}")
        self.rows, self.tokenize = dict(rows or {}), tokenize
        super().__init__(name, config, check_data)

    def load_tokenizer(self):
        return super().load_tokenizer() if self.tokenize else None

    def setup(self, check_data):
        """Label kind, input form and main metric from the data section; with `check_data`
        the train (finding the labels) and dev data are read now."""
        data = self.config.data
        self.kind = text_classification_metrics.label_kind(data)
        self.regression, self.multi_label = self.kind == "regression", self.kind == "multi_label"
        self.input_form = "single" if data.text_pair_column is None else "entailment"
        self.single_sentence = self.input_form == "single"
        self.main_metric = text_classification_metrics.MAIN_METRICS[self.kind]
        self.split_files = {}
        if check_data:
            self.examples("train")
            self.labels  # found now, from the training data
            if self.has_split("dev"):
                self.examples("dev")

    # --- Data ---

    @property
    def labels(self):
        """The label names in label-id order (None for a regression): `data.labels`, or found
        in the training data (and then written there)."""
        if self.regression:
            return None
        data = self.config.data
        if data.labels is None:
            data.labels = self._found_labels()
        return tuple(data.labels)

    def _found_labels(self):
        columns = self.examples("train")
        names = {name for label in columns["label"]
                 for name in (label if self.multi_label else (label,))}
        where = self._source("train")
        if not self.multi_label and len(names) < 2:
            raise DataError(where, None, "one class", "at least two labels to tell apart",
                            f"only {sorted(names)} in {len(columns['label'])} rows" if names
                            else "no labels")
        if self.multi_label and not names:
            raise DataError(where, None, "no labels", "at least one label", "none in any row")
        separator = self.config.data.label_separator
        if self.multi_label and any(separator in name for name in names):
            bad = sorted(name for name in names if separator in name)[0]
            raise DataError(where, None, "bad label", f"labels without data.label_separator "
                            f"{separator!r} (predictions files join them with it)", repr(bad))
        return sorted_labels(names)

    def has_split(self, split):
        """Whether a file or rows are given for `split`."""
        return split in self.rows or bool(getattr(self.config.data, f"{split}_file", None))

    def path(self, split):
        """The file of `split`: `data.<split>_file`."""
        return own_data_file(self, split, ".csv, .tsv, .jsonl, .parquet or a folder of class "
                             "folders")

    def _source(self, split):
        return f"rows[{split!r}]" if split in self.rows else self.path(split)

    def examples(self, split, path=None):
        """The columns of a split (its file, or its rows in memory) or of a file, read once."""
        if path is None and split in self.rows:
            key = ("rows", split)
            if key not in self._cache:
                report = Report(self._source(split), self.config.data.skip_bad_rows)
                rows = list(read_rows(self.rows[split], report, where=self._source(split),
                                      **self._options(split)))
                self._cache[key] = self._columns(rows, report)
            return self._cache[key]
        return super().examples(split, path)

    def read(self, path):
        """The columns of a file (sentence1, sentence2, label, id, report)."""
        split = next((s for s in SPLITS if s not in self.rows
                      and getattr(self.config.data, f"{s}_file") == path), None)
        rows, report = self.read_rows(path, format=self.config.data.format,
                                      **self._options(split))
        return self._columns(rows, report)

    def _options(self, split):
        """The reader's options for `split` (None: a file given to evaluate or predict)."""
        data = self.config.data
        options = dict(text_column=data.text_column, text_pair_column=data.text_pair_column,
                       label_column=data.label_column, id_column=data.id_column,
                       label_kind=self.kind, label_separator=data.label_separator,
                       label_required=split in ("train", "dev"))
        # The training data of labels still to be found is read with any label; the rest
        # against the labels: an unknown one names its line, and a folder's class folders not
        # among them are skipped and counted (IMDB's train/unsup beside pos and neg).
        if not self.regression and not (split == "train" and data.labels is None):
            options["labels"] = self.labels
        return options

    @staticmethod
    def _columns(rows, report):
        return {"sentence1": [r["sentence1"] for r in rows],
                "sentence2": [r.get("sentence2", "") for r in rows],
                "label": [r["label"] for r in rows], "id": [r["id"] for r in rows],
                "report": report}

    def _label_ids(self, labels):
        if self.multi_label:  # multi-hot rows
            index = {name: i for i, name in enumerate(self.labels)}
            targets = np.zeros((len(labels), len(self.labels)), "float32")
            for row, names in enumerate(labels):
                for name in names or ():
                    targets[row, index[name]] = 1.0
            return targets
        return super()._label_ids(labels)

    # --- Model ---

    def losses_and_metrics(self, model):
        """Cross-entropy, binary cross-entropy a label (multi_label) or squared error
        (regression), + GPT-1's LM loss."""
        if not self.multi_label:
            return super().losses_and_metrics(model)
        threshold = self.config.data.threshold  # on the logits: sigmoid(z) >= t <=> z >= logit(t)
        logit = math.log(threshold / (1 - threshold)) if 0 < threshold < 1 else (
            -math.inf if threshold == 0 else math.inf)
        loss = {"logits": keras.losses.BinaryCrossentropy(from_logits=True)}
        metrics = {"logits": [keras.metrics.BinaryAccuracy(name="accuracy", threshold=logit)]}
        loss, weights = with_lm_loss(model, loss, self.config.train.lm_weight)
        return dict(loss=loss, loss_weights=weights, metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """Predicted labels of a split or file in file order: names, tuples of names
        (multi_label) or floats (regression)."""
        if not self.multi_label:
            return super().predict(model, split, path)
        probabilities = 1 / (1 + np.exp(-self.predicted_logits(model, split, path)))
        chosen = probabilities >= self.config.data.threshold
        return [tuple(self.labels[i] for i in np.flatnonzero(row)) for row in chosen]

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """`zoo.metrics.text_classification`'s metrics on a split or a file (empty when it
        has no labels); with `return_predictions=True` also {split: (columns, predicted)}."""
        columns = self.examples(split, path)
        predicted = self.predict(model, split, path)
        results = {}
        if not any(label is None for label in columns["label"]):
            results = text_classification_metrics.compute(self.kind, columns["label"],
                                                          predicted, self.labels)
        predictions = {split: (columns, predicted)}
        return (results, predictions) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv` (`index<TAB>prediction`; several labels joined by
        `data.label_separator`), the format `zoo score text_classification` reads."""
        path = os.path.join(directory, f"{name}.tsv")
        predicted = predictions[1]
        if self.multi_label:
            predicted = [self.config.data.label_separator.join(names) for names in predicted]
        write_predictions(path, predicted)
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first examples with gold and predicted labels."""
        show = (lambda v: ", ".join(v)) if self.multi_label else str
        pair = [] if self.single_sentence else ["text pair"]

        def row(columns, predicted, i):
            text = [columns["sentence1"][i]] + ([columns["sentence2"][i]] if pair else [])
            return text + [show(columns["label"][i]), show(predicted[i])]

        return prediction_table(predictions, limit, ["text", *pair, "gold", "predicted"], row)

    # --- Checking a file before training ---

    def check(self, path, percentiles=(50, 90, 95, 99)):
        """What `zoo data check` prints of a file: rows, skipped rows with their places,
        labels with counts (or the score's range), and the token lengths under the run's
        tokenizer against `data.sequence_length`.

        Returns:
            {"path", "format", "rows", "skipped": str of the report, "labels": {name: count}
            or {"min", "mean", "max"}, "tokens": {"p50": ...,
            "max", "cut": share of rows longer than data.sequence_length} or None without a
            tokenizer, "bad_rows": [first error of each reason]}.
        """
        data = self.config.data
        options = self._options("train" if data.labels is None else None)
        options["label_required"] = True
        examples = read_examples(self.name, path, skip_bad_rows=True, format=data.format,
                                 **options)
        rows = list(examples)
        report = examples.report
        labels = [r["label"] for r in rows]
        if self.regression:
            values = np.array(labels, dtype=float)
            label_summary = ({"min": float(values.min()), "mean": float(values.mean()),
                              "max": float(values.max())} if len(values) else {})
        else:
            counts = {}
            for label in labels:
                for name in (label if self.multi_label else (label,)):
                    counts[name] = counts.get(name, 0) + 1
            label_summary = {name: counts[name] for name in sorted_labels(counts)}
        tokens = None
        if self.tokenizer is not None and rows:
            lengths = self._token_lengths(rows)
            tokens = {f"p{p}": int(np.percentile(lengths, p)) for p in percentiles}
            tokens["max"] = int(lengths.max())
            tokens["cut"] = float(np.mean(lengths > data.sequence_length))
        return {"path": path, "format": table_format(path, data.format), "rows": len(rows),
                "skipped": str(report) if report.skipped else "",
                "labels": label_summary, "tokens": tokens,
                "bad_rows": [str(error) for error in report.first_errors.values()]}

    def _token_lengths(self, rows, batch=1024):
        """Each row's packed length before truncation: its tokens and the special tokens of
        the run's style (BERT: [CLS] A [SEP] (B [SEP]); GPT-1: start, (delim,) extract)."""
        tok = self.tokenizer
        lengths = []
        for start in range(0, len(rows), batch):
            part = rows[start:start + batch]
            total = tok([r["sentence1"] for r in part]).row_lengths().numpy()
            if not self.single_sentence:
                total = total + tok([r["sentence2"] for r in part]).row_lengths().numpy()
            lengths.append(total)
        special = (2 if self.single_sentence else 3)
        return np.concatenate(lengths) + special


__all__ = ["TextClassificationTask", "sorted_labels"]
