"""Span question answering: SQuAD v1.1 and v2.0, BERT style.

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
doc-stride windows (zoo.data.squad); a question's prediction looks at all of its windows: the
n_best_size highest start and end logits of each window, spans inside the context, end >=
start, at most max_answer_length tokens, starting where the window gives the token its
maximum context; the best span becomes text through the tokens' character offsets, so the
answer is an exact substring of the context. s_null is the smallest [CLS] score over the
question's windows. The no-answer score written for the official evaluate-v2.0.py is
run_squad.py's `s_null - s_best`; the official best-threshold search over it picks
t = best_f1_thresh ("" when s_null - s_best > t), so τ = -t and a span is predicted when
s_best >= s_null + τ (the official search counts a tie as answered). Predictions files are
written at τ = 0, as run_squad.py writes them with its default threshold.
"""

import json
import os

import keras
import numpy as np
import tensorflow as tf

from zoo import config as config_lib
from zoo import training
from zoo.data import DataError, read_examples
from zoo.data.samples import LAYOUT
from zoo.data.squad import squad_windows
from zoo.files import write_text
from zoo.metrics import squad as squad_metrics

NAMES = ("squad_v1", "squad_v2")
MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")
LABELS = ("start_positions", "end_positions")
THRESHOLD_FILE = "null_threshold.json"


class SpanQATask:
    """SQuAD v1.1 (`squad_v1`) or v2.0 (`squad_v2`): windows, BERT span head, official scores.

    Args:
        name: "squad_v1" or "squad_v2".
        config: a `zoo.config.Experiment` with a BERT preset.
        check_data: read and window the train and dev files now, so a bad answer or an empty
            context fails before training starts.

    Example:
        >>> import tasks
        >>> task = tasks.create("squad_v2", {"data": {"dir": "samples/squad"},
        ...                                  "model": {"vocabulary": "vocab"}})  # doctest: +SKIP
        >>> model = task.build_model()  # doctest: +SKIP
        >>> task.compile(model)  # doctest: +SKIP
        >>> model.fit(task.dataset("train"), epochs=2)  # doctest: +SKIP
        >>> task.evaluate(model, "dev")["best_f1"]  # doctest: +SKIP
        81.9
    """

    def __init__(self, name, config, check_data=True):
        from zoo.models.presets import PRESETS

        self.name, self.config = name, config
        self.version = 2 if name == "squad_v2" else 1
        preset = config.model.preset
        if preset not in PRESETS or PRESETS[preset][0] != "BertBackbone":
            raise config_lib.ConfigError(f"model.preset: {name} needs a BERT preset (span QA "
                                         f"is BERT section 4.2), found {preset!r}")
        self.tokenizer = training.load_tokenizer(config.model)
        # BERT Tables 2 and 3 report dev F1; for v2.0 the F1 at the tuned threshold.
        self.main_metric = "f1" if self.version == 1 else "best_f1"
        self._cache = {}
        if check_data:
            self.windows("train")
            self.windows("dev")

    # --- Data ---

    def path(self, split):
        """The official file of `split` under `data.dir` (train-v1.1.json, dev-v2.0.json)."""
        if not self.config.data.dir:
            raise config_lib.ConfigError(f"data.dir: missing; the directory holding the "
                                         f"{self.name} files")
        if split not in LAYOUT[self.name]:
            raise config_lib.ConfigError(f"{self.name} has no split {split!r}; splits: "
                                         f"{', '.join(LAYOUT[self.name])}")
        return os.path.join(self.config.data.dir, os.path.basename(LAYOUT[self.name][split]))

    def examples(self, split, path=None):
        """The questions of a split (or file): dicts of `zoo.data.read_examples`."""
        return self._read(split, path)[0]

    def windows(self, split, path=None):
        """The doc-stride windows of a split (or file), `zoo.data.squad.squad_windows`."""
        return self._read(split, path)[1]

    def report(self, split, path=None):
        """The reader's `Report` of a split (or file): the bad rows skipped and why."""
        return self._read(split, path)[2]

    def _read(self, split, path):
        path = path or self.path(split)
        if path not in self._cache:
            data = self.config.data
            read = read_examples(self.name, path, skip_bad_rows=data.skip_bad_rows)
            examples = list(read)
            try:
                windows = squad_windows(examples, self.tokenizer, data.sequence_length,
                                        data.doc_stride, data.max_query_length)
            except ValueError as error:  # names the example and its id
                raise DataError(path, None, "cannot cut into windows", "a question whose "
                                "context and answer fit the tokenizer and window",
                                str(error)) from None
            self._cache[path] = (examples, windows, read.report)
        return self._cache[path]

    def steps_per_epoch(self):
        """Optimizer steps in one pass over the training windows."""
        n = len(self.windows("train")["token_ids"])
        return -(-n // self.config.train.batch_size)

    def dataset(self, split, path=None, repeat=False, skip_batches=0, batch_size=None):
        """Batches `(inputs, {start_positions, end_positions})` of a split's windows.

        The train split is shuffled: with `repeat=True` as an endless stream whose order is
        a pure function of (train.seed, position), so `skip_batches` resumes it exactly;
        otherwise one pass, reshuffled at every iteration. Other splits keep window order,
        which `evaluate` relies on.
        """
        windows = self.windows(split, path)
        n = len(windows["token_ids"])
        batch_size = batch_size or self.config.train.batch_size
        x = {key: tf.constant(windows[key]) for key in MODEL_INPUTS}
        y = {key: tf.constant(windows[key]) for key in LABELS}
        indices = training.example_order(n, split, self.config.train.seed, batch_size,
                                         repeat, skip_batches)
        ds = indices.batch(batch_size).map(
            lambda i: ({k: tf.gather(v, i) for k, v in x.items()},
                       {k: tf.gather(v, i) for k, v in y.items()}),
            num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return ds.prefetch(tf.data.AUTOTUNE)

    # --- Model ---

    def build_model(self):
        """The BERT backbone of `model.preset` / `model.init_checkpoint` with S and E."""
        from zoo import models

        # S and E read the token vectors only: no pooler (transformers' BertForQuestionAnswering
        # has none either), so no weight goes without a gradient.
        backbone = training.load_backbone(self.config.model, self.tokenizer, pooler=False)
        return models.BertSpanQA(backbone)

    def compile(self, model, total_steps=None, warmup_steps=None):
        """Mean of the start and end cross-entropies (run_squad.py), AdamW + schedule."""
        train = self.config.train
        losses = {key: keras.losses.SparseCategoricalCrossentropy(from_logits=True)
                  for key in LABELS}
        metrics = {key: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
                   for key in LABELS}
        optimizer = training.optimizer(train, model, self.steps_per_epoch(), total_steps,
                                       warmup_steps)
        model.compile(optimizer=optimizer, loss=losses, loss_weights={k: 0.5 for k in LABELS},
                      metrics=metrics, jit_compile=train.jit_compile)

    # --- Evaluation ---

    def predict(self, model, split="dev", path=None):
        """{id: (answer text, s_best, s_null)} for the questions of a split or file."""
        examples, windows, _ = self._read(split, path)
        ds = self.dataset(split, path, batch_size=self.config.train.batch_size)
        logits = model.predict(ds.map(lambda x, _: x), verbose=0)
        data = self.config.data
        spans = best_spans(windows, [e["context"] for e in examples], logits["start_positions"],
                           logits["end_positions"], data.n_best_size, data.max_answer_length)
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
            results = squad_metrics.squad_v1(gold, answers)
        else:
            na_probs = {qid: float(s_null - s_best) for qid, (_, s_best, s_null) in spans.items()}
            answers = {qid: text if na_probs[qid] <= 0 else ""
                       for qid, (text, _, _) in spans.items()}
            results = squad_metrics.squad_v2(gold, answers, na_probs)
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

    def describe(self, predictions, limit):
        """A markdown table of the first dev questions with gold and predicted answers."""
        rows = ["| question | gold | predicted |", "|---|---|---|"]
        for examples, answers, _ in predictions.values():
            for example in examples[:limit]:
                gold = " / ".join(dict.fromkeys(a["text"] for a in example["answers"]))
                cells = [example["question"], gold or "(no answer)",
                         answers[example["id"]] or "(no answer)"]
                rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
            break
        return "\n".join(rows)

    def phases(self, schedule):
        """One phase: the whole run on the shuffled stream of training windows."""
        return [training.Phase(0, schedule.rounds,
                               lambda skip: self.dataset("train", repeat=True,
                                                         skip_batches=skip))]


def best_spans(windows, contexts, start_logits, end_logits, n_best_size=20,
               max_answer_length=30):
    """The best answer of each question over all its windows (run_squad.py's post-processing).

    Args:
        windows: `zoo.data.squad.squad_windows` output (example_index, offsets, context_mask,
            max_context_mask), windows of one question consecutive.
        contexts: the context text of each example (indexed by `example_index`).
        start_logits, end_logits: (windows, seq) logits.
        n_best_size: start and end candidates per window (the highest logits).
        max_answer_length: longest answer, in tokens.

    Returns:
        One (text, s_best, s_null) per example: the best span's text (`context[a:b]` by its
        tokens' character offsets; "" with s_best 0.0 when no span qualifies, as run_squad.py's
        "empty" entry), its score start + end, and the smallest [CLS] score over the windows.

    Example:
        >>> windows = {"example_index": np.array([0]), "offsets": np.array([[[-1, -1],
        ...     [0, 3], [4, 7]]]), "context_mask": np.array([[False, True, True]]),
        ...     "max_context_mask": np.array([[False, True, True]])}
        >>> best_spans(windows, ["Ann did"], np.array([[0.0, 2.0, 1.0]]),
        ...            np.array([[0.0, 0.5, 3.0]]))
        [('Ann did', 5.0, 0.0)]
    """
    start_logits, end_logits = np.asarray(start_logits), np.asarray(end_logits)
    best = [("", -np.inf, np.inf) for _ in contexts]
    for w, example in enumerate(windows["example_index"]):
        start, end = start_logits[w], end_logits[w]
        text, score, null = best[example]
        null = min(null, float(start[0] + end[0]))
        context, offsets = windows["context_mask"][w], windows["offsets"][w]
        max_context = windows["max_context_mask"][w]
        # Stable sorts: among equal logits the earlier position comes first, as in run_squad.py.
        starts = np.argsort(-start, kind="stable")[:n_best_size]
        ends = np.argsort(-end, kind="stable")[:n_best_size]
        for i in starts:
            if not (context[i] and max_context[i]):
                continue
            for j in ends:
                if not context[j] or j < i or j - i + 1 > max_answer_length:
                    continue
                candidate = float(start[i] + end[j])
                if candidate > score:
                    text = contexts[example][offsets[i, 0]:offsets[j, 1]]
                    score = candidate
        best[example] = (text, score, null)
    return [(text, score if np.isfinite(score) else 0.0, null) for text, score, null in best]


__all__ = ["NAMES", "SpanQATask", "best_spans"]
