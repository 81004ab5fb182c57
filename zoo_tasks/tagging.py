"""Tagging: named-entity recognition on CoNLL-2003, fine-tuned and feature-based (BERT style),
and your own tagged words.

BERT section 5.3: "we use the representation of the first sub-token as the input to the
token-level classifier over the NER label set" with no CRF; `BertTokenClassifier` scores every
position and the label, loss and accuracy sit on each word's first sub-token (sample weight 1
there, 0 elsewhere: `zoo.data.tagging`). Predictions are read at those positions and mapped back to
words through `word_ids`; a word with no token (cut off by `data.sequence_length`, or
tokenizing to nothing) is predicted "O" and counted in `words_unpredicted`.

BERT Table 7 (feature-based): "we use the representation of one or more layers without
fine-tuning any parameters of BERT ... as input to a randomly initialized two-layer
768-dimensional BiLSTM before the classification layer". `model.features` picks one of the six
combinations (`zoo.models.head_models.FEATURES`); null fine-tunes the whole model.

Metrics: the CoNLL-2003 entity-level precision, recall and F1 (0-100, conlleval rules,
`zoo.metrics.tagging`) overall and per type (`PER_f1`, ...); `f1` picks the best checkpoint.
Predictions files are the conlleval input: the gold file with one more column.

Your own tagged words (`token_classification`, `TokenClassificationTask`): token
classification (NER-style tagging) with any tag set, from CoNLL column files or JSON lines
`{"tokens": [...], "tags": [...]}`, on the model, alignment and prediction above. What is the
user's there:

- The files: `data.train_file`, `data.dev_file`, `data.test_file`, CoNLL (the word first, the
  tag last, blank lines between sentences; .conll, .txt, .iob, .bio, .tsv) or JSON lines (the
  fields `data.tokens_column`, `data.tags_column`), by extension or `data.format`.
- The tags: `data.labels`, or every tag of the training file: "O" first, then by entity type
  and prefix (B, I, E, S), or plainly sorted when they are not IOB-like. The found names are
  written to `config.data.labels`, kept in the run's config.yaml. Tags are learnt and
  predicted as written (IOB1, IOB2 / BIO, IOBES, or no scheme at all).
- Metrics (`zoo.metrics.tagging`): conlleval's entity scores where the tags are IOB-like (the
  scheme found in the gold tags; IOBES scored as its IOB2 form), token accuracy otherwise.
  Predictions files are JSON lines {"id", "tags"}, the format `zoo score token_classification`
  reads.
"""

import os
import re

import keras
import numpy as np
import tensorflow as tf

from zoo import models, training
from zoo.data import DataError, packing
from zoo.data.benchmarks import BENCHMARKS
from zoo.data.readers.tagging import CONLL_TAGS, tag_scheme
from zoo.data.tagging import align_tokens
from zoo.metrics import tagging as tagging_metrics
from zoo_tasks import data_order, serving
from zoo_tasks.base import BaseTask, own_data_file, prediction_table, traced_for

_PREFIX_ORDER = {"B": 0, "I": 1, "E": 2, "S": 3}
_ENTITY_TAG = re.compile(r"([BIES])-(.+)", re.DOTALL)


class TaggingTask(BaseTask):
    """CoNLL-2003 NER: model, datasets, compile, entity-level evaluation.

    Args:
        name: "conll2003".
        config: a `zoo.config.Experiment`.
        check_data: read the train and valid files now.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("conll2003", {
        ...     "data": {"dir": "samples/conll2003"},
        ...     "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")["f1"]  # doctest: +SKIP
        91.2
    """

    labels = CONLL_TAGS
    main_metric = "f1"
    signatures = serving.tagging.signatures
    # The tag of a word with no token (cut off by data.sequence_length, or tokenizing to
    # nothing): outside any entity.
    outside = "O"

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.tokenizer = training.load_tokenizer(config.model, gpt=False)
        if check_data:
            self.examples("train")
            self.examples("dev")

    # --- Data ---

    def read(self, path):
        """{"words", "tags" (IOB2), "path", "report"} of a file (train.txt, valid.txt ...);
        `examples(split)` reads a split's once."""
        rows, report = self.read_rows(path, convert_to_iob2=True)
        return {"words": [r["words"] for r in rows], "tags": [r["tags"] for r in rows],
                "path": path, "report": report}

    def num_examples(self, split):
        """How many sentences `dataset(split)` batches."""
        return len(self.examples(split)["words"])

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None,
                with_word_ids=False, order=None):
        """Batches `(inputs, {"logits": tag ids}, {"logits": weights})` of a split.

        Every tensor is (batch, sequence_length), or with `data.pad_to_multiple_of` cut to
        the batch's longest sentence rounded up to it. The train split is shuffled: with
        `repeat=True` as an endless stream whose order is a pure function of (train.seed,
        position), so `skip_batches` resumes it exactly; otherwise one pass, reshuffled at
        every iteration. Other splits keep file order, or `order` (`data_order.length_order`).
        """
        columns = self.examples(split, path)
        index = {tag: i for i, tag in enumerate(self.labels)}
        words = tf.ragged.constant(columns["words"], dtype=tf.string, row_splits_dtype=tf.int64)
        tags = tf.ragged.constant([[index[t] for t in s] for s in columns["tags"]],
                                  dtype=tf.int32, row_splits_dtype=tf.int64)
        length = self.config.data.sequence_length

        def encode_tags(batch_words, batch_tags):
            aligned = align_tokens(batch_words, self.tokenizer, length)
            word_tags = tf.pad(batch_tags.to_tensor(), [[0, 0], [0, 1]])
            first = aligned["first_token"]
            token_tags = tf.gather(word_tags, tf.maximum(aligned["word_ids"], 0), batch_dims=1)
            keys = ("token_ids", "segment_ids", "padding_mask") + ("word_ids",) * with_word_ids
            x = {key: aligned[key] for key in keys}
            # The labels and weights are cut with the inputs (dynamic padding).
            x = packing.trim_padding({**x, "labels": token_tags * tf.cast(first, tf.int32),
                                      "weights": tf.cast(first, tf.float32)},
                                     self.config.data.pad_to_multiple_of)
            return x, {"logits": x.pop("labels")}, {"logits": x.pop("weights")}

        return self.batches(split, (words, tags), encode_tags, repeat, skip_batches,
                            batch_size, order, key=(with_word_ids,))

    # --- Model ---

    def build_model(self):
        """BertTokenClassifier (model.features null) or the feature-based BertFeatureTagger."""

        features = self.config.model.features
        if features is None:
            backbone = training.load_backbone(self.config.model, self.tokenizer)
            return models.BertTokenClassifier(backbone, len(self.labels),
                                              dropout=self.config.model.dropout)
        backbone = training.load_backbone(self.config.model, self.tokenizer,
                                          return_hidden_states=True)
        return models.BertFeatureTagger(backbone, len(self.labels), features,
                                        lstm_units=self.config.model.lstm_units,
                                        dropout=self.config.model.dropout)

    def losses_and_metrics(self, model):
        """Cross-entropy averaged over words (first sub-tokens), and word accuracy."""
        losses = {"logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")}
        metrics = {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        return dict(loss=losses, weighted_metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """(predicted tags per sentence (CoNLL-2003: IOB2), number of words with no token,
        predicted `outside`)."""
        columns = self.examples(split, path)
        predicted = [[self.outside] * len(words) for words in columns["words"]]
        covered = [np.zeros(len(words), bool) for words in columns["words"]]
        order = data_order.length_order(self, split, path)
        sentences = iter(range(len(predicted)) if order is None else order)
        ds = data_order.evaluation_inputs(
            self, ("words", split, path), order,
            lambda: self.dataset(split, path, with_word_ids=True, order=order))
        traced_for(model, {k: v for k, v in ds.element_spec[0].items() if k != "word_ids"},
                   on_batch=True)
        for x, _, _ in ds:
            word_ids = x.pop("word_ids").numpy()
            tags = np.argmax(model.predict_on_batch(x)["logits"], axis=-1)
            first = x["padding_mask"].numpy() > 0
            first &= np.concatenate([np.ones_like(word_ids[:, :1], bool),
                                     word_ids[:, 1:] != word_ids[:, :-1]], axis=1)
            first &= word_ids >= 0
            for row in range(len(word_ids)):
                sentence = next(sentences)
                for position in np.flatnonzero(first[row]):
                    predicted[sentence][word_ids[row, position]] = self.labels[
                        tags[row, position]]
                    covered[sentence][word_ids[row, position]] = True
        unpredicted = int(sum((~c).sum() for c in covered))
        return predicted, unpredicted

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Entity-level precision, recall, F1 (0-100) overall and per type, on a split or file.

        Returns:
            {"f1", "precision", "recall", "accuracy", "PER_f1", ..., "tokens",
            "words_unpredicted"}; with
            `return_predictions=True` also {split: (columns, predicted tags)}.
        """
        columns = self.examples(split, path)
        predicted, unpredicted = self.predict(model, split, path)
        results = {**tagging_metrics.entity_scores(columns["tags"], predicted),
                   "words_unpredicted": unpredicted}
        # Predictions files are named by the split's file: "dev" is CoNLL-2003's valid.
        name = (BENCHMARKS[self.name].splits or {}).get(split, split)
        return (results, {name: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.txt` in the conlleval input format: the gold file's lines with the
        predicted tag as one more column (blank and -DOCSTART- lines as they are).

        Returns:
            The paths written.
        """
        columns, predicted = predictions
        if columns["report"].skipped:
            raise ValueError(f"{columns['path']}: {columns['report']}; the predictions file "
                             "must keep every line of the gold file")
        path = os.path.join(directory, f"{name}.txt")
        tagging_metrics.write_predictions(columns["path"], predicted, path)
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first sentences: words, gold and predicted tags."""
        return prediction_table(
            predictions, limit, ["words", "gold", "predicted"],
            lambda columns, predicted, i: [" ".join(columns["words"][i]),
                                           " ".join(columns["tags"][i]), " ".join(predicted[i])])


# === Your own data ===


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
        return tagging_metrics.main_metric(labels_scheme(self.labels))

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
            results = {**tagging_metrics.tag_scores(columns["tags"], predicted, scheme),
                       "words_unpredicted": unpredicted}
        return (results, {split: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.jsonl`: {"id", "tags"} per sentence, in the file's order."""
        columns, predicted = predictions
        path = os.path.join(directory, f"{name}.jsonl")
        tagging_metrics.write_tag_predictions(path, columns["ids"], predicted)
        return [path]


__all__ = ["TaggingTask", "TokenClassificationTask", "labels_scheme", "sorted_tags"]
