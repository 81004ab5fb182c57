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

from tasks.base import Task, inference_model, is_gpt, lm_targets, markdown_table, with_lm_loss
from zoo import config as config_lib
from zoo import training
from zoo.data import packing
from zoo.metrics import choices as choices_lib

NAMES = ("swag", "race", "story_cloze")
NUM_CHOICES = {"swag": 4, "race": 4, "story_cloze": 2}
# Split name -> LAYOUT split: "train" and "dev" are what training reads.
SPLITS = {"swag": {"train": "train", "dev": "val", "val": "val", "test": "test"},
          "race": {"train": "train", "dev": "dev", "test": "test"},
          "story_cloze": {"train": "val", "dev": "test", "val": "val", "test": "test"}}


class MultipleChoiceTask(Task):
    """SWAG, RACE or Story Cloze: model, datasets, compile, accuracy.

    Args:
        name: the task name, one of `NAMES`.
        config: a `zoo.config.Experiment`.
        check_data: read the train and dev files now, so a missing path or a bad row fails
            before training starts.

    Example:
        >>> import tasks
        >>> task = tasks.create("swag", {"data": {"dir": "samples/swag"},
        ...                              "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=3)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")  # doctest: +SKIP
        {'accuracy': 81.6}
    """

    main_metric = "accuracy"

    def __init__(self, name, config, check_data=True):
        if name not in NAMES:
            raise config_lib.ConfigError(f"task: {name!r} is not a multiple-choice task "
                                         f"({', '.join(NAMES)})")
        super().__init__(name, config)
        self.splits = SPLITS[name]
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
        (`training.length_order`).
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
        from zoo import models

        backbone = training.load_backbone(self.config.model, self.tokenizer)
        if not self.gpt:
            return models.BertMultipleChoice(backbone, self.num_choices,
                                             dropout=self.config.model.dropout)
        return models.GPTClassifier(backbone, 1, num_sequences=self.num_choices,
                                    combine="choices", dropout=self.config.model.dropout,
                                    lm=bool(self.config.train.lm_weight))

    def compile(self, model, total_steps=None, warmup_steps=None):
        """Softmax cross-entropy over the choices (+ GPT-1's LM loss), AdamW and schedule."""
        loss, weights = with_lm_loss(
            model, {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)},
            self.config.train.lm_weight)
        metrics = {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        self.compile_with(model, total_steps, warmup_steps, loss=loss, loss_weights=weights,
                          metrics=metrics)

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
            results = choices_lib.accuracy(self.name, columns["id"], columns["label"],
                                           predicted)
        return (results, {split: (columns, predicted)}) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv`: `id<TAB>prediction` (the chosen index), the file
        `zoo score` reads; `predictions` is an entry of `evaluate(return_predictions=True)`.

        Returns:
            The paths written.
        """
        path = os.path.join(directory, f"{name}.tsv")
        columns, predicted = predictions
        choices_lib.write_predictions(path, columns["id"], predicted)
        return [path]

    # --- Export ---

    def serving(self, model, run_dir=None):
        """Serving signatures (zoo.export): a context and its choices in, the choice out.

        `serving_default`: `context` [batch] string and `choices` [batch, k] string, any k >= 1
        (the same within one request; the model scores every sequence on its own, so k need
        not be the task's) -> `probabilities` [batch, k] float32 (softmax over the choices)
        and `choice` [batch] int32 (their argmax, 0-based). The graph packs every choice as
        `evaluate` does, in the run's style (BERT `[CLS] context [SEP] sentence B [SEP]`,
        GPT-1 `[start; document; question; delim; answer; extract]`, same truncation). What
        the client sends, so that the outputs equal `evaluate` on the data files:
          - SWAG: `context` the reader's context (sent1), `choices` its choices (sent2 + " "
            + ending_k, as the reader composes them).
          - Story Cloze: `context` the four sentences joined by single spaces, `choices` the
            two endings.
          - RACE: `context` the article, a newline, then the question
            (`article + "\\n" + question`): the question is the text after the last newline,
            the article everything before it (a context without a newline is an article with
            no question; an article with newlines and no question ends in "\\n"); `choices`
            the options as written. The graph composes BERT's sentence B as `_sentence_b`
            does (a cloze question gets the option in its `_` blanks, another gets
            `question + " " + option`); GPT-1 puts the question after the article, which is
            cut from its end so the question and the longest option fit.

        Defined outputs for odd input: empty strings are empty segments (the special tokens
        alone still make a sequence, which gets a score); invalid UTF-8 bytes are read as
        U+FFFD (as the tokenizer reads them); a long context is truncated as in training; a
        batch of 0 gives [0, k] and [0]. A non-empty batch with k = 0 is an
        InvalidArgumentError ("choices: at least one choice per question").

        `serving_ids`: the packed ids, [batch, k, sequence] int32 (`token_ids`,
        `padding_mask`, and `segment_ids` in BERT style), k free -> the same outputs.
        """
        from zoo import export

        inference = inference_model(model)
        n = self.num_choices

        def answer(flat, batch, k):
            """Outputs from (batch * k, sequence) packed choices: the model scores groups of
            its own n choices, so the flat list is padded to a multiple of n with copies of
            its first sequence (whose scores are dropped) and regrouped."""
            total = tf.shape(flat["token_ids"])[0]
            index = tf.concat([tf.range(total), tf.zeros([(n - total % n) % n], tf.int32)], 0)
            grouped = {key: tf.reshape(tf.gather(value, index), [-1, n, tf.shape(value)[-1]])
                       for key, value in flat.items()}
            logits = tf.cast(inference(grouped, training=False)["logits"], tf.float32)
            logits = tf.reshape(tf.reshape(logits, [-1])[:total], tf.stack([batch, k]))
            probabilities = tf.nn.softmax(logits, axis=-1)
            choice = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
            return {"probabilities": probabilities, "choice": choice}

        def checked(batch, k):
            return tf.debugging.assert_equal(
                tf.logical_or(k > 0, batch == 0), True,
                message="choices: at least one choice per question")

        def raw(context, choices):
            batch, k = tf.shape(choices)[0], tf.shape(choices)[1]
            with tf.control_dependencies([checked(batch, k)]):
                x = self.serving_inputs(context, choices)
            # Dynamic padding: each choice is scored on its own real tokens, so cutting the
            # batch to its longest sequence changes no score.
            x = packing.trim_padding(x, self.config.data.pad_to_multiple_of
                                     or export.PAD_TO_MULTIPLE_OF)
            return answer({key: value[:, 0] for key, value in x.items()}, batch, k)

        def ids(**x):
            shape = tf.shape(x["token_ids"])
            with tf.control_dependencies([checked(shape[0], shape[1])]):
                flat = {key: tf.reshape(value, [-1, shape[2]]) for key, value in x.items()}
            return answer(flat, shape[0], shape[1])

        specs = {key: tf.TensorSpec([None, None, None], spec.dtype, name=key)
                 for key, spec in export.model_inputs(inference).items()}
        outputs = ("probabilities", "choice")
        return {
            export.DEFAULT: export.Signature(
                {"context": export.text("context"),
                 "choices": tf.TensorSpec([None, None], tf.string, name="choices")},
                raw, outputs, "a context and k choices in, probabilities and the choice out"),
            export.IDS: export.Signature(specs, ids, outputs, "packed token ids [batch, k, "
                                         "sequence] in, probabilities and the choice out"),
        }

    def serving_inputs(self, context, choices):
        """`serving_default`'s packing (TF ops): raw `context` [batch] and `choices` [batch, k]
        strings (as `serving` documents them) -> packed model inputs, each
        (batch * k, 1, sequence_length), question-major; `_encode`'s packing of the same
        question, choice by choice."""
        tok, length = self.tokenizer, self.config.data.sequence_length

        def utf8(text):
            return tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace",
                                                replacement_char=0xFFFD)

        context, choices = utf8(context), utf8(choices)
        batch, k = tf.shape(choices)[0], tf.shape(choices)[1]
        options = tf.reshape(choices, [-1])  # (batch * k,)
        owner = tf.repeat(tf.range(batch), k)  # the question of each flat choice
        question = tf.fill(tf.shape(context), "")
        if self.name == "race":  # the question is the context's last line
            split = tf.strings.regex_full_match(context, r"(?s).*\n.*")
            question = tf.where(split, tf.strings.regex_replace(context, r"(?s)^.*\n", ""), "")
            context = tf.where(split, tf.strings.regex_replace(context, r"(?s)\n[^\n]*$", ""),
                               context)
        if not self.gpt:
            second = _sentence_b_graph(tf.gather(question, owner), options)
            return packing.pack_bert_multiple_choice(
                tf.gather(tok(context), owner), [tok(second)], length, tok.cls_token_id,
                tok.sep_token_id, tok.pad_token_id)
        start, delimiter, extract = (tok.token_to_id(t) for t in tok.special_tokens)
        answers, document, asked = tok(options), tok(context), tok(question)
        # As `_encode`: the document loses its end so the question and the longest answer of
        # its question fit.
        lengths = tf.reshape(tf.cast(answers.row_lengths(), tf.int32), tf.stack([batch, k]))
        longest = tf.reduce_max(tf.concat([lengths, tf.zeros([batch, 1], tf.int32)], axis=1),
                                axis=1)
        keep = tf.maximum(length - 3 - tf.cast(asked.row_lengths(), tf.int32) - longest, 0)
        positions = tf.ragged.range(tf.cast(document.row_lengths(), tf.int32))
        document = tf.ragged.boolean_mask(document, positions < keep[:, tf.newaxis])
        return packing.pack_gpt_multiple_choice(
            tf.gather(tf.concat([document, asked], axis=1), owner), [answers], length, start,
            delimiter, extract)

    def describe(self, predictions, limit):
        """A markdown table of the first questions with gold and predicted answers."""
        rows = []
        for columns, predicted in predictions.values():
            for i in range(min(limit, len(predicted))):
                gold, choices = columns["label"][i], columns["choices"][i]
                rows.append([columns["context"][i][:300], columns["question"][i],
                             "" if gold is None else choices[gold], choices[predicted[i]]])
        return markdown_table(["context", "question", "gold", "predicted"], rows)


def _sentence_b(question, option):
    """BERT style's sentence B: the option after the question, or in its blank.

    A RACE cloze question ("Tom was born in _ .") gets the option in the blank, as the RACE
    processor of transformers' multiple-choice examples does (`utils_multiple_choice.py`);
    SWAG and Story Cloze have no question, so sentence B is the ending alone.

    Example:
        >>> _sentence_b("Where was Tom born?", "Paris"), _sentence_b("Tom was born in _ .", "Rome")
        ('Where was Tom born? Paris', 'Tom was born in Rome .')
    """
    if "_" in question:
        return question.replace("_", option)
    return f"{question} {option}" if question else option


def _sentence_b_graph(question, option):
    """`_sentence_b` on string tensors of one shape (TF ops): the option in the question's
    `_` blanks, after the question and a space, or alone when the question is empty."""
    parts = tf.strings.split(question, "_")  # (n, parts); one part when there is no blank
    last = tf.ragged.range(parts.row_lengths()).flat_values == tf.gather(
        parts.row_lengths() - 1, parts.value_rowids())
    filler = tf.where(last, "", tf.gather(option, parts.value_rowids()))
    filled = tf.strings.reduce_join(parts.with_flat_values(
        tf.strings.join([parts.flat_values, filler])), axis=1)
    blank = tf.strings.regex_full_match(question, "(?s).*_.*")
    spaced = tf.where(question == "", option, tf.strings.join([question, option], " "))
    return tf.where(blank, filled, spaced)


__all__ = ["MultipleChoiceTask", "NAMES"]
