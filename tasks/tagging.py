"""Named-entity recognition on CoNLL-2003, fine-tuned and feature-based (BERT style).

BERT section 5.3: "we use the representation of the first sub-token as the input to the
token-level classifier over the NER label set" with no CRF; `BertTokenClassifier` scores every
position and the label, loss and accuracy sit on each word's first sub-token (sample weight 1
there, 0 elsewhere: `zoo.data.ner`). Predictions are read at those positions and mapped back to
words through `word_ids`; a word with no token (cut off by `data.sequence_length`, or
tokenizing to nothing) is predicted "O" and counted in `words_unpredicted`.

BERT Table 7 (feature-based): "we use the representation of one or more layers without
fine-tuning any parameters of BERT ... as input to a randomly initialized two-layer
768-dimensional BiLSTM before the classification layer". `model.features` picks one of the six
combinations (`zoo.models.head_models.FEATURES`); null fine-tunes the whole model.

Metrics: the CoNLL-2003 entity-level precision, recall and F1 (0-100, conlleval rules,
`zoo.metrics.conll`) overall and per type (`PER_f1`, ...); `f1` picks the best checkpoint.
Predictions files are the conlleval input: the gold file with one more column.
"""

import os

import keras
import numpy as np
import tensorflow as tf

from tasks.base import Task, markdown_table
from zoo import training
from zoo.data import packing
from zoo.data.ner import align_tokens
from zoo.data.readers import CONLL_TAGS
from zoo.metrics import conll

# The contract's "dev" is CoNLL-2003's valid file.
SPLITS = {"train": "train", "dev": "valid", "valid": "valid", "test": "test"}


class TaggingTask(Task):
    """CoNLL-2003 NER: model, datasets, compile, entity-level evaluation.

    Args:
        name: "conll2003".
        config: a `zoo.config.Experiment`.
        check_data: read the train and valid files now.

    Example:
        >>> import tasks
        >>> task = tasks.create("conll2003", {"data": {"dir": "samples/conll2003"},
        ...                                   "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")["f1"]  # doctest: +SKIP
        91.2
    """

    splits = SPLITS

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.labels = CONLL_TAGS
        self.tokenizer = training.load_tokenizer(config.model, gpt=False)
        self.main_metric = "f1"
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
        every iteration. Other splits keep file order, or `order` (`training.length_order`).
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
        from zoo import models

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

    def compile(self, model, total_steps=None, warmup_steps=None):
        """Cross-entropy averaged over words (first sub-tokens), word accuracy, the optimizer."""
        losses = {"logits": keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")}
        metrics = {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        self.compile_with(model, total_steps, warmup_steps, loss=losses,
                          weighted_metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """(predicted IOB2 tags per sentence, number of words with no token, predicted "O")."""
        columns = self.examples(split, path)
        predicted = [["O"] * len(words) for words in columns["words"]]
        covered = [np.zeros(len(words), bool) for words in columns["words"]]
        order = training.length_order(self, split, path)
        sentences = iter(range(len(predicted)) if order is None else order)
        for x, _, _ in self.dataset(split, path, with_word_ids=True, order=order):
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
        results = {**conll.entity_scores(columns["tags"], predicted),
                   "words_unpredicted": unpredicted}
        return (results, {SPLITS.get(split, split): (columns, predicted)}) if return_predictions \
            else results

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
        conll.write_predictions(columns["path"], predicted, path)
        return [path]

    # --- Export ---

    def serving(self, model, run_dir=None):
        """Serving signatures (zoo.export): raw sentences in, words and their tags out.

        `serving_default`: `text` [batch] string, one sentence of whitespace-separated words
        (split on runs of ASCII whitespace: space, tab, newline, CR, VT, FF; other Unicode
        spaces stay inside a word, which a CoNLL word never holds) -> `words` and `tags`
        [batch, max_words] string, padded with "". The tags are the training data's names in
        IOB2 (as `evaluate` predicts and scores them), read at each word's first sub-token
        exactly as `predict` does: a word with no token (it tokenizes to nothing, e.g. a lone
        control character or soft hyphen, or `data.sequence_length` cuts it off; there is no
        windowing, as in training) is tagged "O".

        Defined outputs for odd input: an empty or all-whitespace text has no words (its row
        is all ""; a batch of only such texts gives [batch, 0]); a batch of 0 gives [0, 0];
        invalid UTF-8 bytes become U+FFFD before splitting (the tokenizer reads them so too),
        so `words` are always valid UTF-8; a very long text (100,000 characters) gets tags for
        the words that fit in the sequence and "O" after them.

        `serving_ids`: `token_ids`, `segment_ids`, `padding_mask` [batch, sequence] int32 (as
        `zoo.data.ner.align_tokens` packs them) -> `probabilities` [batch, sequence, tags]
        float32 and `tags` [batch, sequence] string, the argmax at every position.
        """
        from zoo import export

        names = tf.constant(self.labels)
        outside = self.labels.index("O")
        length = self.config.data.sequence_length

        def per_token(x):
            logits = tf.cast(model(x, training=False)["logits"], tf.float32)
            return tf.nn.softmax(logits, axis=-1)

        def raw(text):
            text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                                replacement_char=0xFFFD)
            words = tf.strings.split(text)  # (batch, words), row_splits int64
            # Dynamic padding: the tags of real tokens do not depend on the padding.
            aligned = packing.trim_padding(align_tokens(words, self.tokenizer, length),
                                           self.config.data.pad_to_multiple_of
                                           or export.PAD_TO_MULTIPLE_OF)
            probabilities = per_token({key: aligned[key] for key in
                                       ("token_ids", "segment_ids", "padding_mask")})
            token_tags = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
            # A word's tag is read where `predict` reads it: the first position of each run of
            # one word id inside the padding mask.
            word_ids = aligned["word_ids"]
            starts = tf.concat([tf.ones_like(word_ids[:, :1], tf.bool),
                                word_ids[:, 1:] != word_ids[:, :-1]], axis=1)
            first = (aligned["padding_mask"] > 0) & starts & (word_ids >= 0)
            where = tf.where(first)  # (n, 2) [row, position]
            target = tf.stack([where[:, 0], tf.cast(tf.gather_nd(word_ids, where), tf.int64)],
                              axis=1)
            padded = words.to_tensor("")
            shape = tf.shape(padded, out_type=tf.int64)
            tag_ids = tf.tensor_scatter_nd_update(tf.fill(shape, outside), target,
                                                  tf.gather_nd(token_tags, where))
            real = tf.sequence_mask(words.row_lengths(), shape[1])
            return {"words": padded, "tags": tf.where(real, tf.gather(names, tag_ids), "")}

        def ids(**x):
            probabilities = per_token(x)
            return {"probabilities": probabilities,
                    "tags": tf.gather(names, tf.argmax(probabilities, axis=-1))}

        return {
            export.DEFAULT: export.Signature(
                {"text": export.text("text")}, raw, ("words", "tags"),
                "whitespace-separated words in, words and their IOB2 tags out"),
            export.IDS: export.Signature(
                export.model_inputs(model), ids, ("probabilities", "tags"),
                "packed token ids in, per-token tag probabilities and tags out"),
        }

    def describe(self, predictions, limit):
        """A markdown table of the first sentences: words, gold and predicted tags."""
        rows = []
        for columns, predicted in predictions.values():
            rows = [[" ".join(columns["words"][i]), " ".join(columns["tags"][i]),
                     " ".join(predicted[i])] for i in range(min(limit, len(predicted)))]
            break
        return markdown_table(["words", "gold", "predicted"], rows)


__all__ = ["TaggingTask"]
