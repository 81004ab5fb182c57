"""Pretraining: BERT's masked LM + next-sentence prediction, and left-to-right language models.

BERT section 3.1 and appendix A.1-A.2: 15 % of the WordPiece tokens are predicted (80 %
[MASK], 10 % random, 10 % unchanged; Table 8 ablates the rates: `data.mask_*`), plus a binary
next-sentence prediction on [CLS] (`model.next_sentence: false` is the "No NSP" row of
Table 5). Batch 256, Adam with lr 1e-4, beta1 0.9, beta2 0.999, L2 weight decay 0.01, warmup
over the first 10,000 steps then linear decay; 90 % of the steps at sequence length 128 and
the last 10 % at 512 (`data.phases`). The shards come from `zoo data pretrain`
(zoo.data.pretraining), masked anew in every batch.

Left-to-right: GPT-1 section 3.1 maximizes sum_i log P(u_i | u_{i-k} ... u_{i-1}) over
contiguous blocks of text (section 4.1: 512 tokens, batch 64, max lr 2.5e-4, warmup over
2,000 updates then cosine annealing to 0). With a BERT preset, the same objective on the BERT
encoder with a causal mask is the "LTR & No NSP" ablation of BERT Table 5. The corpus is
`data.dir/*.txt`: one sentence per line, a blank line between documents (the
`zoo data pretrain` input format); the last 5 % of the documents are held out for evaluation.
At corpus scale `data.dir` is the `causal_lm/` directory of `zoo data pretrain --objective
causal_lm` instead: token-id shards streamed from disk (every 20th document held out).

A pretraining run's final.keras (or the run directory) is what fine-tuning configs take as
`model.init_checkpoint`.
"""

import json
import math
import os

import keras
import tensorflow as tf

from zoo import config as config_lib
from zoo import files, models, tokenizers, training
from zoo.data import causal_lm_dataset, causal_lm_shards_dataset, pretraining_dataset
from zoo.data.pretraining import METADATA
from zoo_tasks import serving
from zoo_tasks.base import BaseTask, is_gpt

EVAL_BATCHES = 8  # batches of the masked-LM evaluation sample


def _batches_per_step(input_context):
    """Batches one input pipeline gives per training step: one per replica it feeds."""
    if input_context is None:
        return 1
    return input_context.num_replicas_in_sync // input_context.num_input_pipelines


class _Pretraining(BaseTask):
    """What both objectives share: a corpus under `data.dir` instead of official files,
    phases over rounds, evaluation on fixed batches."""

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.gpt = is_gpt(config.model.preset)
        self.tokenizer = training.load_tokenizer(config.model, gpt=False) if not self.gpt \
            else _gpt_tokenizer(config.model)
        if check_data and (not config.data.dir or not files.isdir(config.data.dir)):
            raise FileNotFoundError(f"data.dir {config.data.dir}: no such directory")

    def lengths(self):
        phases = self.config.data.phases
        return [p.sequence_length for p in phases] or [self.config.data.sequence_length]

    def phases(self, counts):
        """The rounds of each `data.phases` entry (BERT A.2: 90 % at 128, 10 % at 512)."""
        fractions = [p.fraction for p in self.config.data.phases] or [1.0]
        bounds, total = [0], 0.0
        for fraction in fractions:
            total += fraction
            bounds.append(min(counts.rounds, int(round(total * counts.rounds))))
        bounds[-1] = counts.rounds
        return [training.Phase(bounds[i], bounds[i + 1],
                               lambda skip, input_context=None, length=length:
                               self.train_dataset(length, skip, input_context=input_context))
                for i, length in enumerate(self.lengths())]

    def dataset(self, split, repeat=False, skip_batches=0):
        """Training batches at the first phase's length (the `model.fit` entry point)."""
        ds = self.train_dataset(self.lengths()[0], skip_batches)
        return ds if repeat else ds.take(self.steps_per_epoch())

    def evaluate(self, model, split="dev", path=None, return_predictions=False):
        """Loss and accuracy of each objective on the evaluation batches."""
        if not hasattr(self, "_eval_batches"):  # fixed batches, counted once
            self._eval_batches = self.eval_dataset().cache()
            self._eval_steps = sum(1 for _ in self._eval_batches)
        results = model.evaluate(self._eval_batches, steps=self._eval_steps, verbose=0,
                                 return_dict=True)
        metrics = {key: float(value) for key, value in results.items()}
        if len(model.output) == 1:  # Keras leaves a single output's metrics unprefixed
            name = next(iter(model.output))
            metrics.update({f"{name}_{key}": metrics.pop(key)
                            for key in ("loss", "accuracy") if key in metrics})
        for key in ("mlm_loss", "lm_loss"):  # per-token cross-entropy -> perplexity
            if key in metrics:
                metrics[key.replace("loss", "perplexity")] = math.exp(min(metrics[key], 50.0))
        return (metrics, {}) if return_predictions else metrics

    def describe(self, predictions, limit):
        return ""

    def write_predictions(self, directory, name, predictions):
        raise ValueError(f"{self.name}: pretraining has no predictions file")


class MaskedLMTask(_Pretraining):
    """BERT pretraining on `zoo data pretrain` shards: `mlm` (+ `nsp`), dynamic masking."""

    main_metric = "mlm_accuracy"
    signatures = serving.pretraining.masked_lm_signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config, check_data)
        if self.gpt:
            raise config_lib.ConfigError(f"task {name}: masked LM needs a BERT preset, found "
                                         f"model.preset {config.model.preset}")
        size = int(self.tokenizer.vocabulary_size())
        for length in self.lengths() if check_data else ():  # a checkpoint by name: no data
            meta = self.metadata(length)
            if meta["vocabulary_size"] != size:
                raise config_lib.ConfigError(
                    f"{self.files(length)[0]}: shards made with a vocabulary of "
                    f"{meta['vocabulary_size']} tokens; model.vocabulary has {size}")

    def files(self, length):
        pattern = os.path.join(self.config.data.dir, f"seq{length}", "*.tfrecord")
        shards = files.glob(pattern)
        if not shards:
            raise FileNotFoundError(f"data.dir: no shards {pattern}; write them with "
                                    f"`zoo data pretrain --max-sequence-length {length}`")
        return shards

    def metadata(self, length):
        path = os.path.join(os.path.dirname(self.files(length)[0]), METADATA)
        with files.open(path, encoding="utf-8") as file:
            return json.load(file)

    def steps_per_epoch(self):
        n = self.metadata(self.lengths()[0])["num_instances"]
        return max(1, n // self.config.train.batch_size)

    def train_dataset(self, length, skip_batches=0, seed=None, repeat=True, input_context=None):
        """Training batches at `length`, after `skip_batches` steps (resuming). With an
        `input_context` (`zoo.training.distribution.distributed_dataset`) this worker's
        pipeline: its shard files, one replica's share of each batch."""
        data = self.config.data
        ds = pretraining_dataset(
            self.files(length), self.config.train.batch_size, length,
            mask_selection_rate=data.mask_selection_rate, mask_token_rate=data.mask_token_rate,
            random_token_rate=data.random_token_rate,
            seed=self.config.train.seed if seed is None else seed, repeat=repeat,
            shuffle_buffer=10_000 if repeat else 0, input_context=input_context)
        if not self.config.model.next_sentence:
            ds = ds.map(lambda x, y, w: (x, {"mlm": y["mlm"]}, {"mlm": w["mlm"]}))
        return ds.skip(skip_batches * _batches_per_step(input_context))

    def eval_dataset(self):
        # Fixed masks (a fixed seed, no shuffling) over the first batches of the shards.
        return self.train_dataset(self.lengths()[0], seed=1234, repeat=False).take(EVAL_BATCHES)

    def build_model(self):
        overrides = {} if self.config.model.next_sentence else {"pooler": False}
        backbone = training.load_backbone(self.config.model, self.tokenizer, **overrides)
        longest = max(self.lengths())
        if longest > backbone.max_sequence_length:
            raise config_lib.ConfigError(f"data.phases: sequence length {longest} exceeds the "
                                         f"model's {backbone.max_sequence_length} positions")
        return models.BertMaskedLM(backbone, next_sentence=self.config.model.next_sentence)

    def losses_and_metrics(self, model):
        sparse = keras.losses.SparseCategoricalCrossentropy
        # The masked-LM loss averages over real predictions only (run_pretraining.py:
        # sum(loss * weights) / sum(weights)).
        losses = {"mlm": sparse(from_logits=True, reduction="mean_with_sample_weight")}
        metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        if self.config.model.next_sentence:
            losses["nsp"] = sparse(from_logits=True)
            metrics["nsp"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return dict(loss=losses, weighted_metrics=metrics)


class CausalLMTask(_Pretraining):
    """Left-to-right language modelling: GPT-1, or a causal BERT encoder (LTR & No NSP)."""

    main_metric = "lm_accuracy"
    signatures = serving.pretraining.causal_lm_signatures

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config, check_data)
        if not check_data and not (config.data.dir and files.isdir(config.data.dir)):
            self.shards, self.documents = None, {}  # a checkpoint by name: no corpus
            return
        self.shards = _causal_lm_shards(config.data.dir)
        if self.shards is not None:  # `zoo data pretrain --objective causal_lm`: streamed
            return
        documents = _read_documents(config.data.dir)
        held_out = max(1, len(documents) // 20)
        if len(documents) < 2:
            raise ValueError(f"data.dir {config.data.dir}: needs at least 2 documents (one is "
                             "held out for evaluation), found {len(documents)}")
        self.documents = {"train": documents[:-held_out], "dev": documents[-held_out:]}

    def _blocks(self, split, shuffle, seed, input_context=None):
        length = self.config.data.sequence_length
        separator = None if self.gpt else self.tokenizer.sep_token_id
        if self.shards is not None:
            ds = causal_lm_shards_dataset(
                self.config.data.dir, split, length, self.config.train.batch_size,
                separator_token_id=separator, shuffle_buffer=10_000 if shuffle else 0,
                seed=seed, drop_remainder=shuffle, input_context=input_context)
        else:
            ds = causal_lm_dataset(self.documents[split], self.tokenizer, length,
                                   self.config.train.batch_size, separator_token_id=separator,
                                   shuffle_buffer=10_000 if shuffle else 0, seed=seed,
                                   drop_remainder=shuffle, input_context=input_context)
        if not self.gpt:  # the BERT encoder also takes segment ids
            ds = ds.map(lambda x, y: ({**x, "segment_ids": tf.zeros_like(x["token_ids"])}, y))
        return ds.map(lambda x, y: (x, {"lm": y}, {"lm": tf.ones_like(y, tf.float32)}))

    def steps_per_epoch(self):
        if not hasattr(self, "_steps"):
            if self.shards is not None:  # counted from the metadata, not by reading the corpus
                tokens = self.shards["num_tokens"]["train"]
                if not self.gpt:  # a separator after every document
                    tokens += self.shards["num_documents"]["train"]
                blocks = tokens // (self.config.data.sequence_length + 1)
                self._steps = max(1, blocks // self.config.train.batch_size)
            else:
                self._steps = max(1, sum(1 for _ in self._blocks("train", True, 0)))
        return self._steps

    def train_dataset(self, length, skip_batches=0, input_context=None):
        """Training blocks after `skip_batches` steps; with an `input_context`, this worker's
        blocks, one replica's share of each batch."""
        blocks = self._blocks("train", True, self.config.train.seed, input_context)
        return blocks.repeat().skip(skip_batches * _batches_per_step(input_context))

    def eval_dataset(self):
        return self._blocks("dev", False, None)

    def build_model(self):
        overrides = {} if self.gpt else {"causal": True, "pooler": False}
        backbone = training.load_backbone(self.config.model, self.tokenizer, **overrides)
        return models.CausalLM(backbone)

    def losses_and_metrics(self, model):
        losses = {"lm": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
        metrics = {"lm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        return dict(loss=losses, weighted_metrics=metrics)


def _gpt_tokenizer(model_config):
    """GPT-1's BPE without the fine-tuning tokens (pretraining never sees them)."""

    path = training.vocabulary_path(model_config)
    tokenizer = tokenizers.from_huggingface(path)
    if not isinstance(tokenizer, tokenizers.GPTTokenizer):
        raise config_lib.ConfigError(f"model.vocabulary {path}: GPT-1 needs its BPE vocabulary"
                                     f" (vocab.json + merges.txt)")
    return tokenizer


def _causal_lm_shards(directory):
    """The metadata of `zoo data pretrain --objective causal_lm` shards in `directory`, or None
    when it holds a text corpus."""
    path = os.path.join(directory, METADATA)
    if not files.isfile(path):
        return None
    with files.open(path, encoding="utf-8") as file:
        metadata = json.load(file)
    if metadata.get("objective") != "causal_lm":
        raise ValueError(f"data.dir {directory}: {METADATA} describes sentence-pair shards for "
                         "BERT's masked LM; a left-to-right LM reads `zoo data pretrain "
                         "--objective causal_lm` shards or *.txt")
    return metadata


def _read_documents(directory):
    """Documents of `directory/*.txt`: sentences joined by spaces, blank lines between."""
    corpus = files.glob(os.path.join(directory, "*.txt"))
    if not corpus:
        raise FileNotFoundError(f"data.dir {directory}: no *.txt corpus files")
    documents = []
    for path in corpus:
        current = []
        with files.open(path, encoding="utf-8") as file:
            for line in file:
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    documents.append(" ".join(current))
                    current = []
        if current:
            documents.append(" ".join(current))
    return documents
