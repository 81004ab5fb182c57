"""Sentence and sentence-pair classification: GLUE (all nine tasks), SNLI, SciTail.

BERT section 4.1: "we represent the input sequence (for single sentence or sentence pairs) as
described in Section 3, and use the final hidden vector C corresponding to the first input
token ([CLS]) as the aggregate representation. The only new parameters introduced during
fine-tuning are classification layer weights W (K x H)", with a standard classification loss
log(softmax(C W^T)). STS-B, whose labels are similarity scores, gets one output and a squared
error. Hyperparameters (appendix A.3): batch 32, 3 epochs, learning rate among 5e-5, 4e-5,
3e-5 and 2e-5, warmup over the first 10 % of steps, then linear decay; dropout 0.1.

GPT-1 section 3.3: inputs are transformed into one token sequence: `[start; text; extract]`
for classification (CoLA, SST-2), `[start; premise; delim; hypothesis; extract]` for
entailment (MNLI, SNLI, SciTail, QNLI, RTE, WNLI), and for similarity (MRPC, QQP, STS-B)
both orders of the two sentences, processed independently, their final extract-token states
added before the linear output layer. Section 3.2: the fine-tuning objective adds the language
model loss on the same text, L3 = L2 + lambda * L1 with lambda 0.5 (`train.lm_weight`; 0 is
the Table 5 ablation). Section 4.1: learning rate 6.25e-5, batch 32, 3 epochs, warmup over
0.2 % of training then linear decay, dropout 0.1 on the classifier.

The style follows the backbone of `model.preset`: a BERT preset gives the BERT model and
packing, a GPT preset the GPT-1 ones. Metrics are the benchmarks' own (zoo.metrics).
"""

import os

import keras
import numpy as np
import tensorflow as tf

from zoo import metrics, models, training
from zoo.data import packing
from zoo.data.benchmarks import BENCHMARKS, names
from zoo_tasks import serving
from zoo_tasks.base import BaseTask, is_gpt, lm_targets, prediction_table, with_lm_loss

NAMES = names("classification")  # GLUE's nine tasks, SNLI, SciTail


class ClassificationTask(BaseTask):
    """One GLUE / SNLI / SciTail task: model, datasets, compile, evaluation.

    Args:
        name: the task name, one of `NAMES`.
        config: a `zoo.config.Experiment`.
        check_data: read the train and dev files now, so a missing path or a bad label fails
            before training starts.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("glue/mrpc", {
        ...     "data": {"dir": "samples/glue/MRPC"},
        ...     "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=3)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")  # doctest: +SKIP
        {'f1': 0.91, 'accuracy': 0.88}
    """

    bilstm_head = True  # model.bilstm: BERT Table 5 "LTR & No NSP + BiLSTM"
    signatures = serving.classification.signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.gpt = is_gpt(config.model.preset)
        self.tokenizer = self.load_tokenizer()
        self.setup(check_data)

    def load_tokenizer(self):
        """The tokenizer of `model.vocabulary` (or the init checkpoint's) in the run's style."""
        return training.load_tokenizer(self.config.model, gpt=self.gpt)

    def setup(self, check_data):
        """The benchmark's labels, input form and metrics, from its record; with
        `check_data` its train and dev files are read now."""
        name = self.name
        self.labels = BENCHMARKS[name].labels  # None: STS-B scores
        self.regression = self.labels is None
        # GPT-1 section 3.3's input transformation: "single", "entailment" or "similarity".
        self.input_form = BENCHMARKS[name].input_form
        self.single_sentence = self.input_form == "single"  # no sentence2
        self.metric_names = metrics.METRICS[name]
        self.main_metric = self.metric_names[0]
        self.split_files = BENCHMARKS[name].split_files  # MNLI: matched and mismatched
        if "dev" in self.split_files:  # "matched_accuracy": the first dev file's
            self.main_metric = f"{self.split_files['dev'][0].split('_')[1]}_{self.main_metric}"
        if check_data:
            self.examples("train")
            for split in self.split_files.get("dev", ("dev",)):
                self.examples(split)

    # --- Data ---

    def read(self, path):
        """The examples of a file (train.tsv, dev_matched.tsv ...) as columns: sentence1,
        sentence2, label, id, report; `examples(split)` reads a split's once."""
        rows, report = self.read_rows(path)
        return {
            "sentence1": [r["sentence1"] for r in rows],
            "sentence2": [r.get("sentence2", "") for r in rows],
            "label": [r["label"] for r in rows],
            "id": [r["id"] for r in rows],
            "report": report,
        }

    def _label_ids(self, labels):
        if self.regression:
            return np.array([[x if x is not None else 0.0] for x in labels], "float32")
        index = {name: i for i, name in enumerate(self.labels)}
        return np.array([index.get(x, 0) for x in labels], "int32")

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None,
                order=None):
        """Batches `(inputs, labels, sample_weights)` of a split, for `fit` / `predict`.

        The train split is shuffled: with `repeat=True` as an endless stream whose order is
        a pure function of (train.seed, position), so `skip_batches` resumes it exactly;
        otherwise one pass, reshuffled at every iteration. Other splits keep file order, or
        `order` (`data_order.length_order`).
        """
        columns = self.examples(split, path)
        tensors = (tf.constant(columns["sentence1"]), tf.constant(columns["sentence2"]),
                   tf.constant(self._label_ids(columns["label"])))
        return self.batches(split, tensors, self._encode, repeat, skip_batches, batch_size,
                            order)

    def inputs(self, sentence1, sentence2, multiple=None):
        """Tokenize and pack a batch of raw sentences into model inputs (TF ops only), padded
        to a multiple of `data.pad_to_multiple_of` (or `multiple`) when set."""
        multiple = multiple or self.config.data.pad_to_multiple_of
        return packing.trim_padding(self._packed(sentence1, sentence2), multiple)

    def _packed(self, sentence1, sentence2):
        tok, length = self.tokenizer, self.config.data.sequence_length
        first = tok(sentence1)
        single = self.single_sentence
        second = None if single else tok(sentence2)
        if not self.gpt:
            segments = first if single else (first, second)
            return packing.pack_bert(segments, length, tok.cls_token_id, tok.sep_token_id,
                                     tok.pad_token_id)
        start, delimiter, extract = (tok.token_to_id(t) for t in tok.special_tokens)
        if single:
            return packing.pack_gpt_classification(first, length, start, extract)
        if self.input_form == "similarity":
            return packing.pack_gpt_similarity(first, second, length, start, delimiter, extract)
        return packing.pack_gpt_entailment(first, second, length, start, delimiter, extract)

    def _encode(self, sentence1, sentence2, label):
        """One batch of `(inputs, labels, sample weights)` for `fit` (TF ops only)."""
        x = self.inputs(sentence1, sentence2)
        y = {"logits": label}
        weights = {"logits": tf.ones(tf.shape(label)[:1])}
        if self.gpt and self.config.train.lm_weight:
            y["lm"], weights["lm"] = lm_targets(x)
        return x, y, weights

    # --- Model ---

    def build_model(self):
        """The backbone of `model.preset` / `model.init_checkpoint` with this task's head."""

        model = self.config.model
        num_classes = self.num_outputs()
        if model.bilstm:  # the BiLSTM's final states replace the pooler (BERT Table 5)
            backbone = training.load_backbone(model, self.tokenizer, pooler=False)
            return models.BertClassifier(backbone, num_classes, dropout=model.dropout,
                                         lstm_units=model.lstm_units)
        backbone = training.load_backbone(model, self.tokenizer)
        if not self.gpt:
            return models.BertClassifier(backbone, num_classes, dropout=model.dropout)
        return models.GPTClassifier(
            backbone, num_classes,
            num_sequences=2 if self.input_form == "similarity" else None,
            combine="sum", dropout=model.dropout, lm=bool(self.config.train.lm_weight))

    def num_outputs(self):
        """The classifier's outputs: one a label, one score for a regression."""
        return 1 if self.regression else len(self.labels)

    def losses_and_metrics(self, model):
        """Cross-entropy (STS-B: squared error) on the logits, + GPT-1's LM loss (section
        3.2), accuracy (STS-B: MSE)."""
        if self.regression:
            loss = {"logits": keras.losses.MeanSquaredError()}
            metrics = {"logits": [keras.metrics.MeanSquaredError(name="mse")]}
        else:
            loss = {"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
            metrics = {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        loss, weights = with_lm_loss(model, loss, self.config.train.lm_weight)
        return dict(loss=loss, loss_weights=weights, metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """Predicted labels (names, or floats for STS-B) of a split or file, in file order."""
        logits = self.predicted_logits(model, split, path)
        if self.regression:
            return [float(v) for v in logits[:, 0]]
        return [self.labels[i] for i in np.argmax(logits, axis=-1)]

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """The benchmark's metrics on a split (MNLI "dev": matched and mismatched), or a file.

        Returns:
            dict of metrics (empty when the file has no labels); with
            `return_predictions=True` also {name: (columns, predicted labels)}.
        """
        if path:
            files = {split: path}
        else:
            files = {s: None for s in self.split_files.get(split, (split,))}
        results, predictions = {}, {}
        for name, file in files.items():
            columns = self.examples(name, file)
            predicted = self.predict(model, name, file)
            predictions[name] = (columns, predicted)
            gold = columns["label"]
            if any(label is None for label in gold):
                continue  # a test file: predictions only
            prefix = f"{name.split('_')[1]}_" if len(files) > 1 else ""
            for key, value in metrics.compute(self.name, gold, predicted).items():
                results[prefix + key] = value
        return (results, predictions) if return_predictions else results

    def write_predictions(self, directory, name, predictions):
        """`directory/<name>.tsv`, a GLUE submission TSV (`index<TAB>prediction`), the format
        `zoo score` reads; `predictions` is an entry of `evaluate(return_predictions=True)`.

        Returns:
            The paths written.
        """
        path = os.path.join(directory, f"{name}.tsv")
        metrics.write_predictions(path, predictions[1])
        return [path]

    def describe(self, predictions, limit):
        """A markdown table of the first dev examples with gold and predicted labels."""
        return prediction_table(  # MNLI: the matched set alone
            predictions, limit, ["sentence 1", "sentence 2", "gold", "predicted"],
            lambda columns, predicted, i: [columns["sentence1"][i], columns["sentence2"][i],
                                           columns["label"][i], predicted[i]])


__all__ = ["ClassificationTask", "NAMES"]
