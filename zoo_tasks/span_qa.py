"""Span question answering: SQuAD v1.1 and v2.0, BERT style, and your own SQuAD-format files.

BERT section 4.2: "we represent the input question and passage as a single packed sequence,
with the question using the A embedding and the passage using the B embedding. We only
introduce a start vector S and an end vector E during fine-tuning. The probability of word i
being the start of the answer span is computed as a dot product between T_i and S followed by
a softmax over all of the words in the paragraph ... The score of a candidate span from
position i to position j is defined as S·T_i + E·T_j, and the maximum scoring span where j >= i
is used as a prediction. The training objective is the sum of the log-likelihoods of the
correct start and end positions." (run_squad.py takes their mean, as here.) 3 epochs,
learning rate 5e-5, batch 32.

Section 4.3 (SQuAD 2.0): "We treat questions that do not have an answer as having an answer
span with start and end at the [CLS] token ... we compare the score of the no-answer span:
s_null = S·C + E·C to the score of the best non-null span s_ij = max_{j>=i} S·T_i + E·T_j. We
predict a non-null answer when s_ij > s_null + τ, where the threshold τ is selected on the dev
set to maximize F1." 2 epochs, learning rate 5e-5, batch 48.

Windows, post-processing and τ follow the released run_squad.py: contexts are cut into
doc-stride windows (zoo.data.span_qa); a question's prediction looks at all of its windows: the
n_best_size highest start and end logits of each window, spans inside the context, end >=
start, at most max_answer_length tokens, starting where the window gives the token its
maximum context; the best span becomes text through the tokens' character offsets, so the
answer is an exact substring of the context. s_null is the smallest [CLS] score over the
question's windows. The no-answer score written for the official evaluate-v2.0.py is
run_squad.py's `s_null - s_best`; the official best-threshold search over it picks
t = best_f1_thresh ("" when s_null - s_best > t), so τ = -t and a span is predicted when
s_best >= s_null + τ (the official search counts a tie as answered). Predictions files are
written at τ = 0, as run_squad.py writes them with its default threshold.

Serving (`zoo export`, `zoo_tasks.serving.span_qa`) does the same in the SavedModel graph: the
windows of `zoo.data.span_qa.span_qa_windows_graph`, the post-processing of `best_spans_graph`
(`zoo_tasks.span_qa_decoding`; both tested equal to their Python versions) and the run's τ.

Your own question answering (`question_answering`, `QuestionAnsweringTask`): all of the above
on `data.train_file`, `data.dev_file` and `data.test_file`, SQuAD v1.1 or v2.0 JSON documents of
any name. The version is `data.version_2`, or detected from the training file (SQuAD 2.0 marks
every question with "is_impossible"; `zoo.data.readers.span_qa.squad_version`) and then written
there, so the run's config.yaml keeps it for evaluation and export.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from zoo import config as config_lib
from zoo import files, models, training
from zoo.data import DataError, packing
from zoo.data.benchmarks import names
from zoo.data.readers.span_qa import squad_version
from zoo.data.span_qa import span_qa_windows
from zoo.files import write_text
from zoo.metrics import span_qa as span_qa_metrics
from zoo.models.presets import PRESETS
from zoo_tasks import data_order, serving
from zoo_tasks.base import BaseTask, own_data_file, prediction_table, traced_for
from zoo_tasks.span_qa_decoding import best_spans, best_spans_graph, logits_at_full_length

NAMES = names("span_qa")  # squad_v1, squad_v2
MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")
LABELS = ("start_positions", "end_positions")
THRESHOLD_FILE = "null_threshold.json"


class SpanQATask(BaseTask):
    """SQuAD v1.1 (`squad_v1`) or v2.0 (`squad_v2`): windows, BERT span head, official scores.

    Args:
        name: "squad_v1" or "squad_v2".
        config: a `zoo.config.Experiment` with a BERT preset.
        check_data: read and window the train and dev files now, so a bad answer or an empty
            context fails before training starts.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("squad_v2", {
        ...     "data": {"dir": "samples/squad"},
        ...     "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=2)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")["best_f1"]  # doctest: +SKIP
        81.9
    """

    bilstm_head = True  # model.bilstm: BERT Table 5 "LTR & No NSP + BiLSTM"
    model_inputs = MODEL_INPUTS  # what a window feeds the model, in training and serving
    signatures = serving.span_qa.signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.version = self.squad_version()
        preset = config.model.preset
        if preset not in PRESETS or PRESETS[preset][0] != "BertBackbone":
            raise config_lib.ConfigError(f"model.preset: {name} needs a BERT preset (span QA "
                                         f"is BERT section 4.2), found {preset!r}")
        self.tokenizer = training.load_tokenizer(config.model)
        # BERT Tables 2 and 3 report dev F1; for v2.0 the F1 at the tuned threshold.
        self.main_metric = "f1" if self.version == 1 else "best_f1"
        if check_data:
            self.windows("train")
            self.windows("dev")

    def squad_version(self):
        """1 or 2: the benchmark's (squad_v1, squad_v2)."""
        return 2 if self.name == "squad_v2" else 1

    # --- Data ---

    def read(self, path):
        """(questions, windows, report) of a file (train-v1.1.json, dev-v2.0.json ...)."""
        data = self.config.data
        examples, report = self.read_rows(path)
        try:
            windows = span_qa_windows(examples, self.tokenizer, data.sequence_length,
                                      data.doc_stride, data.max_query_length)
        except ValueError as error:  # names the example and its id
            raise DataError(path, None, "cannot cut into windows", "a question whose "
                            "context and answer fit the tokenizer and window",
                            str(error)) from None
        return examples, windows, report

    def examples(self, split, path=None):
        """The questions of a split (or file): dicts of `zoo.data.read_examples`."""
        return super().examples(split, path)[0]

    def windows(self, split, path=None):
        """The doc-stride windows of a split (or file), `zoo.data.span_qa.span_qa_windows`."""
        return super().examples(split, path)[1]

    def report(self, split, path=None):
        """The reader's `Report` of a split (or file): the bad rows skipped and why."""
        return super().examples(split, path)[2]

    def num_examples(self, split):
        """How many windows `dataset(split)` batches (a question may have several)."""
        return len(self.windows(split)["token_ids"])

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None,
                order=None):
        """Batches `(inputs, {start_positions, end_positions})` of a split's windows.

        Inputs are (batch, sequence_length), or with `data.pad_to_multiple_of` cut to the
        batch's longest window rounded up to it (the answer positions are inside it). The
        train split is shuffled: with `repeat=True` as an endless stream whose order is a
        pure function of (train.seed, position), so `skip_batches` resumes it exactly;
        otherwise one pass, reshuffled at every iteration. Other splits keep window order,
        or `order` (`data_order.length_order`, undone by `predict`).
        """
        windows = self.windows(split, path)
        tensors = [tf.constant(windows[key]) for key in MODEL_INPUTS + LABELS]
        return self.batches(split, tensors, self._encode, repeat, skip_batches, batch_size,
                            order)

    def _encode(self, *columns):
        """One batch of `(inputs, labels)` from the window columns of MODEL_INPUTS + LABELS."""
        x = dict(zip(MODEL_INPUTS, columns[:len(MODEL_INPUTS)]))
        y = dict(zip(LABELS, columns[len(MODEL_INPUTS):]))
        return packing.trim_padding(x, self.config.data.pad_to_multiple_of), y

    # --- Model ---

    def build_model(self):
        """The BERT backbone of `model.preset` / `model.init_checkpoint` with S and E."""

        # S and E read the token vectors only: no pooler (transformers' BertForQuestionAnswering
        # has none either), so no weight goes without a gradient.
        backbone = training.load_backbone(self.config.model, self.tokenizer, pooler=False)
        lstm_units = self.config.model.lstm_units if self.config.model.bilstm else None
        return models.BertSpanQA(backbone, lstm_units=lstm_units)

    def losses_and_metrics(self, model):
        """Mean of the start and end cross-entropies (run_squad.py), and their accuracies."""
        losses = {key: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                  for key in LABELS}
        metrics = {key: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                   for key in LABELS}
        return dict(loss=losses, loss_weights={k: 0.5 for k in LABELS}, metrics=metrics)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """{id: (answer text, s_best, s_null)} for the questions of a split or file."""
        examples, windows = self.examples(split, path), self.windows(split, path)
        data = self.config.data
        order = data_order.length_order(self, split, path)
        starts, ends = [], []
        # Batch by batch: with dynamic padding the batches differ in length, and the logits
        # of the cut positions are -inf (no logit; `logits_at_full_length`).
        ds = data_order.evaluation_inputs(
            self, ("windows", split, path), order,
            lambda: self.dataset(split, path, batch_size=self.config.train.batch_size,
                                 order=order))
        traced_for(model, ds.element_spec[0], on_batch=True)
        for x, _ in ds:
            start, end = logits_at_full_length(
                model.predict_on_batch(x), data.sequence_length,
                x["padding_mask"] if data.pad_to_multiple_of else None)
            starts.append(start)
            ends.append(end)
        length = data.sequence_length
        starts = data_order.in_file_order(np.concatenate(starts or [np.zeros((0, length))]), order)
        ends = data_order.in_file_order(np.concatenate(ends or [np.zeros((0, length))]), order)
        spans = best_spans(windows, [e["context"] for e in examples], starts, ends,
                           data.n_best_size, data.max_answer_length)
        return {e["id"]: span for e, span in zip(examples, spans)}

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """The official SQuAD metrics (0-100) of a split or file.

        v1.1: `exact_match`, `f1`. v2.0: evaluate-v2.0.py's keys with the no-answer scores
        (`exact`, `f1`, ... at τ = 0; `best_exact`, `best_f1` and their thresholds), plus
        `tau`, the tuned τ of BERT section 4.3 (-best_f1_thresh).

        Returns:
            dict of metrics; with `return_predictions=True` also {split: (examples, answers,
            no-answer scores)}, answers {id: text} at τ = 0.
        """
        name = split
        examples = self.examples(split, path)
        spans = self.predict(model, split, path)
        gold = {e["id"]: [a["text"] for a in e["answers"]] for e in examples}
        if self.version == 1:
            answers = {qid: text for qid, (text, _, _) in spans.items()}
            na_probs = None
            results = span_qa_metrics.squad_v1(gold, answers)
        else:
            na_probs = {qid: float(s_null - s_best) for qid, (_, s_best, s_null) in spans.items()}
            answers = {qid: text if na_probs[qid] <= 0 else ""
                       for qid, (text, _, _) in spans.items()}
            results = span_qa_metrics.squad_v2(gold, answers, na_probs)
            results["tau"] = 0.0 - results["best_f1_thresh"]
        entry = (examples, answers, na_probs)
        return (results, {name: entry}) if return_predictions else results

    def write_predictions(self, directory, name, entry):
        """`<name>.json` ({id: answer}, "" for no answer) and for v2.0 `<name>_na_prob.json`
        ({id: s_null - s_best}): the official files `zoo score` (evaluate-v2.0.py) reads.

        Returns:
            The paths written.
        """
        _, answers, na_probs = entry
        paths = [os.path.join(directory, f"{name}.json")]
        write_text(paths[0], json.dumps(answers, ensure_ascii=False, indent=0) + "\n")
        if na_probs is not None:
            paths.append(os.path.join(directory, f"{name}_na_prob.json"))
            write_text(paths[1], json.dumps(na_probs, indent=0) + "\n")
        return paths

    def save_extras(self, run_dir, metrics):
        """SQuAD 2.0: `null_threshold.json` with τ and the F1 at τ = 0 and at τ, for export."""
        if self.version == 1 or "tau" not in metrics:
            return
        extras = {"tau": metrics["tau"], "f1_at_zero": metrics["f1"],
                  "f1_at_tau": metrics["best_f1"],
                  "null_score_diff_threshold": metrics["best_f1_thresh"],
                  "rule": "answer the best span when s_best >= s_null + tau (BERT 4.3); "
                          "null_score_diff_threshold is run_squad.py's, = -tau"}
        write_text(os.path.join(run_dir, THRESHOLD_FILE), json.dumps(extras, indent=1) + "\n")

    def null_threshold(self, run_dir):
        """τ of a SQuAD 2.0 run (`null_threshold.json`, written by `save_extras`); 0.0 when the
        run has no such file (v1.1, or a run never evaluated on dev)."""
        path = os.path.join(run_dir, THRESHOLD_FILE) if run_dir else None
        if self.version == 1 or not path or not files.exists(path):
            return 0.0
        with files.open(path, encoding="utf-8") as file:
            return float(json.load(file)["tau"])

    def describe(self, predictions, limit):
        """A markdown table of the first dev questions with gold and predicted answers."""
        def row(examples, answers, i):
            example = examples[i]
            gold = " / ".join(dict.fromkeys(a["text"] for a in example["answers"]))
            return [example["question"], gold or "(no answer)",
                    answers[example["id"]] or "(no answer)"]

        return prediction_table(predictions, limit, ["question", "gold", "predicted"], row)


# === Your own data ===


class QuestionAnsweringTask(SpanQATask):
    """SQuAD-format question answering on your own files; see the module docstring.

    Examples:
        >>> import zoo_tasks
        >>> task = zoo_tasks.create("question_answering", {
        ...     "model": {"preset": "bert_tiny", "vocabulary": "vocab"},
        ...     "data": {"train_file": "faq_train.json", "dev_file": "faq_dev.json"}},
        ...     check_data=False)  # doctest: +SKIP
        >>> task.version  # doctest: +SKIP
        2
    """

    def squad_version(self):
        """`data.version_2`, or the training file's (then written to `data.version_2`)."""
        data = self.config.data
        if data.version_2 is None:
            data.version_2 = squad_version(self.path("train")) == 2
        return 2 if data.version_2 else 1

    def path(self, split):
        """The file of `split`: `data.<split>_file`."""
        return own_data_file(self, split, "a SQuAD v1.1 or v2.0 .json file")

    def read_rows(self, path, **options):
        """(questions, report) of a file, read as the run's SQuAD version."""
        return super().read_rows(path, version=self.version, **options)


__all__ = ["NAMES", "QuestionAnsweringTask", "SpanQATask", "best_spans", "best_spans_graph",
           "logits_at_full_length"]
