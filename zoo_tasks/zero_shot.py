"""GPT-1 zero-shot: a language model scored without fine-tuning (`zoo evaluate --zero-shot`).

A use of the library over benchmark tasks, as the task families are, so it lives in zoo_tasks/
beside them rather than in zoo/: it reads a benchmark's examples and its record's `zero_shot`
heuristic (`zoo.data.benchmarks`), the pretrained model, and the fine-tuned tasks' scoring.

Radford et al. 2018, section 5 ("Zero-shot Behaviors", Figure 2 right): "we designed a series
of heuristic solutions that use the underlying generative model to perform tasks without
supervised finetuning ... For SST-2 (sentiment analysis), we append the token very to each
example and restrict the language model's output distribution to only the words positive and
negative and guess the token it assigns higher probability to as the prediction. For RACE
(question answering), we pick the answer the generative model assigns the highest average
token log-probability when conditioned on the document and question. For DPRD (winograd
schemas) ... For CoLA (linguistic acceptability), examples are scored as the average token
log-probability the generative model assigns and predictions are made by thresholding."

What the paper leaves open, and the rules chosen here:
- Multiple choice (RACE, Story Cloze, SWAG): the average is over the answer's tokens, each
  conditioned on the context (RACE: article + question; Story Cloze: the four sentences; SWAG:
  the first sentence, the answer being the second sentence's start plus the ending). When
  context + answer exceed the model's positions, the context loses tokens from its start.
- "positive" / "negative": a word of several BPE tokens gets the probability of the whole
  word (the product over its tokens), so both words compete on equal terms.
- CoLA's threshold is not given: by default it is the one that maximises MCC on the evaluated
  file itself (an oracle threshold, an upper bound; the output says so), or `threshold` fixes
  it (e.g. one tuned on another file). The first token of a sentence has no context (the
  pre-trained model has no start token) and is not scored; a one-token sentence scores 0.
- Inputs are the pre-training tokenizer's BPE without GPT-1's fine-tuning tokens, which the
  language model never saw.

Log-probabilities come from the model with `keras.ops` (any backend); batches from tf.data.
"""

import math
import os

import keras
import numpy as np
import tensorflow as tf
import yaml
from sklearn import metrics as sklearn_metrics

from zoo import config as config_lib
from zoo import files, metrics, tokenizers, training
from zoo.data import BENCHMARKS, DataError, prefetched, read_examples
from zoo.files import write_text
from zoo.metrics import multiple_choice as multiple_choice_metrics
from zoo.training.run_dir import run_dir_of

# Section 5's heuristics, in the order the tasks are listed; a benchmark's record names its one.
HEURISTICS = ("sentiment", "acceptability", "multiple_choice")
TASKS = tuple(name for heuristic in HEURISTICS for name, benchmark in BENCHMARKS.items()
              if benchmark.zero_shot == heuristic)
# Section 5: the word appended to every SST-2 example, and the two words compared after it.
SENTIMENT_PROMPT, SENTIMENT_WORDS = "very", {"1": "positive", "0": "negative"}


def load_language_model(path):
    """The GPT-1 backbone and BPE tokenizer of a checkpoint, for zero-shot scoring.

    Args:
        path: a `gpt1/pretrain` run directory (the Transformer or `gpt1_lstm`), one of its
            `checkpoints/step_<N>.keras` (`train.keep_checkpoints`), a `.keras` file beside its
            vocab.json and merges.txt, or a Hugging Face OpenAI GPT folder (config.json,
            weights, vocabulary).

    Examples:
        >>> backbone, tokenizer = load_language_model("runs/gpt1_pretrain")  # doctest: +SKIP
    """
    model_config = config_lib.ModelConfig(preset=_preset(os.fspath(path)),
                                          init_checkpoint=os.fspath(path))
    vocabulary = training.vocabulary_path(model_config)
    tokenizer = tokenizers.from_huggingface(vocabulary)
    if not isinstance(tokenizer, tokenizers.GPTTokenizer):
        raise config_lib.ConfigError(f"{path}: zero-shot scoring needs GPT-1's BPE vocabulary "
                                     f"(vocab.json + merges.txt), found a "
                                     f"{type(tokenizer).__name__} in {vocabulary}")
    return training.load_backbone(model_config, tokenizer), tokenizer


def _preset(path):
    """The preset of the zoo run `path` is or is a kept checkpoint of (gpt1_lstm for GPT-1
    Table 5's LSTM); gpt1 for anything else."""
    run_dir = run_dir_of(path)
    if run_dir is None:
        return "gpt1"
    with files.open(os.path.join(run_dir, "config.yaml"), encoding="utf-8") as file:
        return (yaml.safe_load(file).get("model") or {}).get("preset", "gpt1")


class Scorer:
    """Sums of next-token log-probabilities of continuations given contexts, in batches.

    Args:
        backbone: a `zoo.models.GPTBackbone`.
        tokenizer: its BPE tokenizer (for `ids`; `log_probs` takes ids).
        batch_size: sequences per forward pass.

    Examples:
        >>> import zoo
        >>> backbone = zoo.models.create("gpt1", num_layers=1, hidden_dim=8, num_heads=2,
        ...                              vocabulary_size=4)
        >>> total, count = Scorer(backbone, tokenizer=None).log_probs([[0, 1]], [[1, 0, 0]])
        >>> count.tolist(), bool(total[0] < 0)
        ([3], True)
    """

    def __init__(self, backbone, tokenizer, batch_size=8):
        self.backbone, self.tokenizer, self.batch_size = backbone, tokenizer, batch_size
        self.length = backbone.max_sequence_length

    def ids(self, texts):
        """Token ids of each text (lists of ints)."""
        if not texts:
            return []
        return self.tokenizer(tf.constant(texts)).to_list()

    def log_probs(self, contexts, continuations):
        """Per pair: (sum of log p(token | everything before) over the continuation, count).

        Args:
            contexts: token id lists; at least one token each (the first continuation token
                is predicted from the context's last position).
            continuations: token id lists.

        Returns:
            Two arrays: the summed log-probabilities (float64) and the token counts.
        """
        sequences, starts = [], []
        for context, continuation in zip(contexts, continuations):
            continuation = list(continuation)[:self.length - 1]
            keep = self.length - len(continuation)
            context = list(context)[-keep:]  # long contexts lose their beginning
            if not context:
                raise ValueError("a continuation needs at least one context token")
            sequences.append(context + continuation)
            starts.append(len(context))
        ragged = tf.ragged.constant(sequences, dtype=tf.int32, ragged_rank=1)
        starts = tf.constant(starts, tf.int32)
        ds = prefetched(tf.data.Dataset.from_tensor_slices((ragged, starts)).map(_example)
                        .padded_batch(self.batch_size))
        totals, counts = [], []
        for x, targets, weights in ds.as_numpy_iterator():
            totals.append(self._batch(x, targets, weights))
            counts.append(weights.sum(axis=1))
        return np.concatenate(totals), np.concatenate(counts).astype(int)

    def _batch(self, x, targets, weights):
        ops = keras.ops
        sequence = self.backbone(x, training=False)["sequence_output"]
        logits = ops.cast(self.backbone.logits(sequence), "float32")  # (batch, seq, vocab)
        # log p(target) = logit(target) - logsumexp(logits): no second (batch, seq, vocab)
        # tensor of log-probabilities (GPT-1's 40,478 tokens x 512 positions per sequence).
        picked = (ops.take_along_axis(logits, ops.expand_dims(targets, -1), axis=-1)[..., 0]
                  - ops.logsumexp(logits, axis=-1))
        total = ops.sum(picked * ops.cast(weights, "float32"), axis=1)  # (batch,)
        return ops.convert_to_numpy(total).astype(np.float64)


def _example(ids, start):
    """Inputs, next-token targets and the weights of the continuation's predictions."""
    n = tf.shape(ids)[0]
    x = {"token_ids": ids, "padding_mask": tf.ones_like(ids)}
    targets = tf.concat([ids[1:], [0]], axis=0)
    # Position t predicts token t + 1: the continuation's tokens are predicted at start-1 ...
    positions = tf.range(n)
    weights = tf.cast((positions >= start - 1) & (positions < n - 1), tf.int32)
    return x, targets, weights


# === The heuristics of section 5 ===


def sentiment(scorer, sentences):
    """SST-2: "1" when log p(positive | sentence very) > log p(negative | ...), else "0".

    Returns:
        (labels, the log-probability margins positive minus negative).
    """
    contexts = scorer.ids([f"{s} {SENTIMENT_PROMPT}" for s in sentences])
    words = {label: scorer.ids([word])[0] for label, word in SENTIMENT_WORDS.items()}
    positive, _ = scorer.log_probs(contexts, [words["1"]] * len(contexts))
    negative, _ = scorer.log_probs(contexts, [words["0"]] * len(contexts))
    margins = positive - negative
    return ["1" if m > 0 else "0" for m in margins], margins


def average_log_probs(scorer, contexts, continuations):
    """The average token log-probability of each continuation given its context."""
    total, count = scorer.log_probs(scorer.ids(contexts), scorer.ids(continuations))
    return total / np.maximum(count, 1)


def multiple_choice(scorer, examples):
    """The choice with the highest average token log-probability, and all the scores.

    Returns:
        (chosen indices, scores (examples, choices)).
    """
    contexts, answers, shape = [], [], []
    for example in examples:
        context = example["context"]
        if example.get("question"):
            context = f"{context} {example['question']}"
        contexts += [context] * len(example["choices"])
        answers += list(example["choices"])
        shape.append(len(example["choices"]))
    flat = average_log_probs(scorer, contexts, answers)
    scores, i = [], 0
    for n in shape:
        scores.append(flat[i:i + n])
        i += n
    return [int(np.argmax(s)) for s in scores], np.array(scores)


def sentence_scores(scorer, sentences):
    """CoLA: each sentence's average log-probability of its tokens after the first."""
    ids = scorer.ids(sentences)
    total, count = scorer.log_probs([s[:1] or [0] for s in ids], [s[1:] for s in ids])
    return total / np.maximum(count, 1)


def best_threshold(scores, gold):
    """The threshold on `scores` (predict "1" above it) that maximises MCC against `gold`.

    Every distinct cut is tried: below the lowest score and between neighbouring scores
    (midpoints); ties keep the lowest threshold.

    Examples:
        >>> best_threshold(np.array([-3.0, -1.0, -2.0]), ["0", "1", "1"])
        (-2.5, 1.0)
    """
    values = np.unique(scores)
    cuts = np.concatenate([[values[0] - 1.0], (values[1:] + values[:-1]) / 2])
    best = (-math.inf, None)
    for cut in cuts:
        predicted = ["1" if s > cut else "0" for s in scores]
        mcc = sklearn_metrics.matthews_corrcoef(gold, predicted)
        if mcc > best[0]:
            best = (mcc, float(cut))
    return best[1], float(best[0])


# === zoo evaluate --zero-shot ===


def evaluate(task, checkpoint, data, out=None, threshold=None, batch_size=8):
    """Score `data` (a file in the task's official format) with a language model, zero-shot.

    Args:
        task: one of `TASKS`.
        checkpoint: what `load_language_model` reads (a gpt1/pretrain run directory ...).
        data: the benchmark file (RACE: a directory or file).
        out: the predictions folder; default `<checkpoint>/predictions/zero_shot` for a run
            directory, else `./predictions/zero_shot`.
        threshold: CoLA only: a fixed threshold instead of the one tuned on `data`.
        batch_size: sequences per forward pass.

    Returns:
        The metrics (accuracy, or MCC with the threshold used and how it was chosen), the
        number of examples, and the predictions file written. Predictions files: GLUE tasks a
        submission TSV `index<TAB>prediction` (what `zoo score glue/...` reads), multiple
        choice `id<TAB>prediction` with the chosen index.

    Examples:
        >>> evaluate("glue/sst2", "runs/gpt1_pretrain", "glue/SST-2/dev.tsv")  # doctest: +SKIP
        {'accuracy': ..., 'examples': 872, 'task': 'glue/sst2', ...}
    """
    if task not in TASKS:
        raise config_lib.ConfigError(f"--zero-shot {task}: expected one of {', '.join(TASKS)}")
    heuristic = BENCHMARKS[task].zero_shot
    if threshold is not None and heuristic != "acceptability":
        thresholded = ", ".join(n for n in TASKS if BENCHMARKS[n].zero_shot == "acceptability")
        raise config_lib.ConfigError(f"--threshold: only {thresholded} is thresholded, not {task}")
    examples = list(read_examples(task, data))
    labelled = all(e.get("label") is not None for e in examples)
    if heuristic == "acceptability" and threshold is None and not labelled:
        raise DataError(data, None, "no labels to tune the threshold on",
                        "a labelled file, or --threshold", "unlabelled examples")
    backbone, tokenizer = load_language_model(checkpoint)
    scorer = Scorer(backbone, tokenizer, batch_size)
    if out is None:
        base = checkpoint if files.isfile(os.path.join(checkpoint, "config.yaml")) else "."
        out = os.path.join(base, "predictions", "zero_shot")
    path = os.path.join(out, task.replace("/", "_") + ".tsv")
    result = {"task": task, "examples": len(examples)}
    if heuristic == "multiple_choice":
        chosen, _ = multiple_choice(scorer, examples)
        rows = ["id\tprediction"] + [f"{e['id']}\t{c}" for e, c in zip(examples, chosen)]
        write_text(path, "".join(row + "\n" for row in rows))
        if labelled:  # the fine-tuned tasks' scorer: 0-100, RACE-m and RACE-h apart
            result.update(multiple_choice_metrics.score_choices(task, data, path))
    elif heuristic == "sentiment":
        predicted, _ = sentiment(scorer, [e["sentence1"] for e in examples])
        metrics.write_predictions(path, predicted)
        if labelled:
            result.update(metrics.compute(task, [e["label"] for e in examples], predicted))
    else:
        scores = sentence_scores(scorer, [e["sentence1"] for e in examples])
        gold = [e["label"] for e in examples]
        if threshold is None:
            threshold, _ = best_threshold(scores, gold)
            result["threshold_rule"] = ("tuned on this file to maximise MCC (an oracle "
                                        "threshold: GPT-1 does not give its threshold)")
        else:
            result["threshold_rule"] = "given (--threshold)"
        result["threshold"] = threshold
        predicted = ["1" if s > threshold else "0" for s in scores]
        metrics.write_predictions(path, predicted)
        if labelled:
            result.update(metrics.compute(task, gold, predicted))
    result["predictions"] = path
    return result


__all__ = ["HEURISTICS", "TASKS", "Scorer", "best_threshold", "evaluate", "load_language_model",
           "multiple_choice", "sentence_scores", "sentiment"]
