"""Multiple choice: SWAG, RACE and Story Cloze, in BERT style and GPT-1 style.

BERT section 4.4 (SWAG): "we construct four input sequences, each containing the concatenation
of the given sentence (sentence A) and a possible continuation (sentence B). The only
task-specific parameters introduced is a vector whose dot product with the [CLS] token
representation C denotes a score for each choice which is normalized with a softmax layer."
3 epochs, learning rate 2e-5, batch 16. Here every task is packed that way,
`[CLS] context [SEP] (question +) ending [SEP]` per choice, the context truncated first:
SWAG's context is sent1 and its endings sent2 + ending (the reader's choices); RACE's context
is the article and sentence B the question and the option (a cloze question, with a `_`
blank, gets the option in the blank, as transformers' RACE processor does); Story Cloze's
context is the four sentences, sentence B the ending.

GPT-1 section 3.3: "For these tasks, we are given a context document z, a question q, and a
set of possible answers {a_k}. We concatenate the document context and question with each
possible answer, adding a delimiter token in between to get [z; q; $; a_k]. Each of these
sequences are processed independently with our model and then normalized via a softmax layer
to produce an output distribution over possible answers." With the auxiliary language-model
loss on the same tokens, L3 = L2 + lambda * L1, lambda 0.5 (`train.lm_weight`, section 3.2);
section 4.1's hyperparameters (learning rate 6.25e-5, batch 32, 3 epochs, warmup 0.2 %).
The article is truncated from its end so that the question and the longest answer fit.

The style follows the backbone of `model.preset`, as for classification. Splits are the files
of `zoo.data.samples.LAYOUT`: SWAG train / val / test (test unlabelled; "dev" is val); RACE
train / dev / test directories (each with middle/ and high/); Story Cloze 2016 has no training
file, so its val file is the training split ("train") and its test file the evaluation split
("dev", what training evaluates on and `zoo evaluate` reads by default), as GPT-1 reports test
accuracy after fine-tuning on val (OpenAI's code keeps 374 val stories aside for model
selection; here best.keras is selected on test, so report `--checkpoint final`). Accuracy is on
0-100; RACE also reports RACE-M and RACE-H (`middle_accuracy`, `high_accuracy`, GPT-1 Table 3).
"""

import os

import keras
import numpy as np
import tensorflow as tf

from zoo import config as config_lib
from zoo import models, training
from zoo.data import packing
from zoo.data.benchmarks import BENCHMARKS, names
from zoo.metrics import multiple_choice as multiple_choice_metrics
from zoo_tasks import serving
from zoo_tasks.base import BaseTask, is_gpt, lm_targets, prediction_table, with_lm_loss

NAMES = names("multiple_choice")  # swag, race, story_cloze
NUM_CHOICES = {name: BENCHMARKS[name].num_choices for name in NAMES}


class MultipleChoiceTask(BaseTask):
    """SWAG, RACE or Story Cloze: model, datasets, compile, accuracy.

    Args:
        name: the task name, one of `NAMES`.
        config: a `zoo.config.Experiment`.
        check_data: read the train and dev files now, so a missing path or a bad row fails
            before training starts.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("swag", {"data": {"dir": "samples/swag"},
        ...                                  "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=3)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")  # doctest: +SKIP
        {'accuracy': 81.6}
    """

    main_metric = "accuracy"
    signatures = serving.multiple_choice.signatures

    def __init__(self, name, config, check_data=True):
        if name not in NAMES:
            raise config_lib.ConfigError(f"task: {name!r} is not a multiple-choice task "
                                         f"({', '.join(NAMES)})")
        super().__init__(name, config)
        self.num_choices = NUM_CHOICES[name]
        self.gpt = is_gpt(config.model.preset)
        self.tokenizer = training.load_tokenizer(config.model, gpt=self.gpt)
        if check_data:
            self.examples("train")
            self.examples("dev")

    # --- Data ---

    def read(self, path):
        """The questions of a file (RACE: directory) as columns: id, context, question,
        choices, label (None in unlabelled files), report; `examples(split)` reads a split's
        once."""
        rows, report = self.read_rows(path)
        for row in rows:
            if len(row["choices"]) != self.num_choices:  # the readers guarantee it
                raise ValueError(f"{path}: question {row['id']!r} has "
                                 f"{len(row['choices'])} choices, expected {self.num_choices}")
        return {
            "id": [r["id"] for r in rows],
            "context": [r["context"] for r in rows],
            "question": [r.get("question", "") for r in rows],
            "choices": [r["choices"] for r in rows],
            "label": [r["label"] for r in rows],
            "report": report,
        }

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None,
                order=None):
        """Batches `(inputs, labels, sample_weights)` of a split, for `fit` / `predict`.

        Inputs are (batch, num_choices, sequence_length), or with `data.pad_to_multiple_of`
        cut to the batch's longest sequence rounded up to it. The train split is shuffled:
        with `repeat=True` as an endless stream whose order is a pure function of
        (train.seed, position), so `skip_batches` resumes it exactly; otherwise one pass,
        reshuffled at every iteration. Other splits keep file order, or `order`
        (`data_order.length_order`).
        """
        columns = self.examples(split, path)
        labels = np.array([x if x is not None else 0 for x in columns["label"]], "int32")
        choices = columns["choices"]
        if not self.gpt:
            choices = [[_sentence_b(q, c) for c in options]
                       for q, options in zip(columns["question"], choices)]
        tensors = (tf.constant(columns["context"]), tf.constant(columns["question"]),
                   tf.constant(choices), tf.constant(labels))
        return self.batches(split, tensors, self._encode, repeat, skip_batches, batch_size,
                            order)

    def _encode(self, context, question, choices, label):
        """Tokenize and pack one batch (TF ops only)."""
        tok, length = self.tokenizer, self.config.data.sequence_length
        y, weights = {"logits": label}, {"logits": tf.ones(tf.shape(label)[:1])}
        if not self.gpt:
            # `choices` holds sentence B of every choice (`_sentence_b`).
            x = packing.pack_bert_multiple_choice(
                tok(context), [tok(choices[:, k]) for k in range(self.num_choices)], length,
                tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
            return packing.trim_padding(x, self.config.data.pad_to_multiple_of), y, weights
        start, delimiter, extract = (tok.token_to_id(t) for t in tok.special_tokens)
        answers = [tok(choices[:, k]) for k in range(self.num_choices)]
        document, asked = tok(context), tok(question)
        # [start; z; q; $; a_k; extract]: the document is cut from its end so that q and the
        # longest answer fit (the packer then only trims if they alone are too long).
        longest = tf.reduce_max(tf.stack([a.row_lengths() for a in answers]), axis=0)
        keep = tf.maximum(length - 3 - asked.row_lengths() - longest, 0)
        positions = tf.ragged.range(document.row_lengths())
        document = tf.ragged.boolean_mask(document, positions < keep[:, tf.newaxis])
        x = packing.pack_gpt_multiple_choice(tf.concat([document, asked], axis=1), answers,
                                             length, start, delimiter, extract)
        x = packing.trim_padding(x, self.config.data.pad_to_multiple_of)
        if self.config.train.lm_weight:  # next-token targets on every choice's sequence
            y["lm"], weights["lm"] = lm_targets(x)
        return x, y, weights

    # --- Model ---

    def build_model(self):
        """The backbone of `model.preset` / `model.init_checkpoint` with a choice scorer."""

        backbone = training.load_backbone(self.config.model, self.tokenizer)
        if not self.gpt:
            return models.BertMultipleChoice(backbone, self.num_choices,
                                             dropout=self.config.model.dropout)
        return models.GPTClassifier(backbone, 1, num_sequences=self.num_choices,
                                    combine="choices", dropout=self.config.model.dropout,
                                    lm=bool(self.config.train.lm_weight))

    def losses_and_metrics(self, model):
        """Softmax cross-entropy over the choices (+ GPT-1's LM loss), accuracy."""
        loss, weights = with_lm_loss(
            model, {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
            self.config.train.lm_weight)
        metrics = {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        return dict(loss=loss, loss_weights=weights, metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """The chosen 0-based choice index of every question of a split or file."""
        logits = self.predicted_logits(model, split, path)
        return [int(i) for i in np.argmax(logits, axis=-1)]

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Accuracy (0-100; RACE also per level) on a split or a file.

        Returns:
            dict of metrics (empty for an unlabelled file); with `return_predictions=True`
            also {split: (columns, predicted indices)}.
        """
        columns = self.examples(split, path)
        predicted = self.predict(model, split, path)
        results = {}
        if not any(label is None for label in columns["label"]):
            results = multiple_choice_metrics.accuracy(self.name, columns["id"],
                                                       columns["label"], predicted)
        return (results, {split: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv`: `id<TAB>prediction` (the chosen index), the file
        `zoo score` reads; `predictions` is an entry of `evaluate(return_predictions=True)`.

        Returns:
            The paths written.
        """
        path = os.path.join(directory, f"{name}.tsv")
        columns, predicted = predictions
        multiple_choice_metrics.write_predictions(path, columns["id"], predicted)
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first questions with gold and predicted answers."""
        def row(columns, predicted, i):
            gold, choices = columns["label"][i], columns["choices"][i]
            return [columns["context"][i][:300], columns["question"][i],
                    "" if gold is None else choices[gold], choices[predicted[i]]]

        return prediction_table(predictions, limit, ["context", "question", "gold", "predicted"],
                                row)


def _sentence_b(question, option):
    """BERT style's sentence B: the option after the question, or in its blank.

    A RACE cloze question ("Tom was born in _ .") gets the option in the blank, as the RACE
    processor of transformers' multiple-choice examples does (`utils_multiple_choice.py`);
    SWAG and Story Cloze have no question, so sentence B is the ending alone. The serving
    graph does the same with `zoo_tasks.serving.multiple_choice.sentence_b_graph`.

    Examples:
        >>> _sentence_b("Where was Tom born?", "Paris"), _sentence_b("Tom was born in _ .", "Rome")
        ('Where was Tom born? Paris', 'Tom was born in Rome .')
    """
    if "_" in question:
        return question.replace("_", option)
    return f"{question} {option}" if question else option


__all__ = ["MultipleChoiceTask", "NAMES"]
