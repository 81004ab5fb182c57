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
import numpy as np
import tensorflow as tf

from tasks.base import Task, is_gpt
from zoo import config as config_lib
from zoo import files, training
from zoo.data import causal_lm_dataset, causal_lm_shards_dataset, pretraining_dataset
from zoo.data.pretraining import METADATA

EVAL_BATCHES = 8  # batches of the masked-LM evaluation sample
MASK = "[MASK]"  # what a served masked-LM text marks its blanks with
TOP_K = 5  # candidates the served masked LM returns per blank


def _batches_per_step(input_context):
    """Batches one input pipeline gives per training step: one per replica it feeds."""
    if input_context is None:
        return 1
    return input_context.num_replicas_in_sync // input_context.num_input_pipelines


class _Pretraining(Task):
    """What both objectives share: a corpus under `data.dir` instead of official files,
    phases over rounds, evaluation on fixed batches."""

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config)
        self.gpt = is_gpt(config.model.preset)
        self.tokenizer = training.load_tokenizer(config.model, gpt=False) if not self.gpt \
            else _gpt_tokenizer(config.model)
        if not config.data.dir or not files.isdir(config.data.dir):
            raise FileNotFoundError(f"data.dir {config.data.dir}: no such directory")

    def lengths(self):
        phases = self.config.data.phases
        return [p.sequence_length for p in phases] or [self.config.data.sequence_length]

    def phases(self, schedule):
        """The rounds of each `data.phases` entry (BERT A.2: 90 % at 128, 10 % at 512)."""
        fractions = [p.fraction for p in self.config.data.phases] or [1.0]
        bounds, total = [0], 0.0
        for fraction in fractions:
            total += fraction
            bounds.append(min(schedule.rounds, int(round(total * schedule.rounds))))
        bounds[-1] = schedule.rounds
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

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config, check_data)
        if self.gpt:
            raise config_lib.ConfigError(f"task {name}: masked LM needs a BERT preset, found "
                                         f"model.preset {config.model.preset}")
        size = int(self.tokenizer.vocabulary_size())
        for length in self.lengths():
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
        from zoo import models

        overrides = {} if self.config.model.next_sentence else {"pooler": False}
        backbone = training.load_backbone(self.config.model, self.tokenizer, **overrides)
        longest = max(self.lengths())
        if longest > backbone.max_sequence_length:
            raise config_lib.ConfigError(f"data.phases: sequence length {longest} exceeds the "
                                         f"model's {backbone.max_sequence_length} positions")
        return models.BertPretrainer(backbone, next_sentence=self.config.model.next_sentence)

    def serving(self, model, run_dir=None):
        """Serving signatures (zoo.export): fill in the blanks.

        `serving_default`: `text` [batch] string with the literal, case-sensitive "[MASK]"
        where tokens are to be predicted. The text is split on "[MASK]" in the graph, the
        pieces tokenized and joined with the mask token, and packed as `[CLS] ... [SEP]`
        into the longest trained sequence length; a longer text is truncated from the end
        and the masks cut off are not reported. Outputs `tokens` [batch, masks, k] string
        and `scores` [batch, masks, k] float32 (softmax probabilities), the top k = 5 of
        each mask in text order, best first; `masks` is the batch's largest count, and rows
        with fewer masks are padded with "" and 0. A text without "[MASK]" (or empty, or
        invalid UTF-8, which the tokenizer reads as unknown text) gives 0 masks for its row.
        `serving_ids`: the packed `token_ids`, `segment_ids`, `padding_mask` and
        `mask_positions` in, the masked-LM `logits` [batch, masks, vocabulary] out.
        """
        from zoo import export

        tokenizer, length, k = self.tokenizer, max(self.lengths()), TOP_K
        mask_id = tokenizer.mask_token_id
        vocabulary = tf.constant(tokenizer.get_vocabulary())

        def logits(inputs):
            return tf.cast(model(inputs, training=False)["mlm"], tf.float32)

        def raw(text):
            pieces = tf.strings.split(text, sep=MASK)  # [batch, pieces]
            ids = tf.cast(tokenizer(pieces), tf.int32)  # [batch, pieces, tokens]
            # Every piece but the last of its text is followed by a mask token.
            piece = tf.range(tf.size(pieces.values, out_type=tf.int64)) - tf.gather(
                pieces.row_starts(), pieces.value_rowids())
            follows = tf.cast(piece < tf.gather(pieces.row_lengths(), pieces.value_rowids())
                              - 1, tf.int64)
            masks = tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(follows)], tf.constant(mask_id, tf.int32)), follows)
            ids = ids.with_values(tf.concat([ids.values, masks], axis=1)).merge_dims(1, 2)
            ids = ids[:, :length - 2]
            batch = tf.shape(text)[0]
            ids = tf.concat([tf.fill([batch, 1], tokenizer.cls_token_id), ids,
                             tf.fill([batch, 1], tokenizer.sep_token_id)], axis=1)
            token_ids = ids.to_tensor(tokenizer.pad_token_id)
            index = tf.cast(tf.range(tf.size(ids.values, out_type=tf.int64))
                            - tf.gather(ids.row_starts(), ids.value_rowids()), tf.int32)
            positions = tf.ragged.boolean_mask(ids.with_values(index),
                                               tf.equal(ids, mask_id))
            inputs = {"token_ids": token_ids, "segment_ids": tf.zeros_like(token_ids),
                      "padding_mask": tf.cast(ids.with_values(tf.ones_like(ids.values))
                                              .to_tensor(0), tf.int32),
                      "mask_positions": positions.to_tensor(0)}
            probabilities = tf.nn.softmax(logits(inputs), axis=-1)
            scores, indices = tf.math.top_k(probabilities, k=k)
            real = tf.sequence_mask(positions.row_lengths(),
                                    tf.shape(inputs["mask_positions"])[1])[:, :, None]
            real = tf.broadcast_to(real, tf.shape(indices))
            return {"tokens": tf.where(real, tf.gather(vocabulary, indices), ""),
                    "scores": tf.where(real, scores, 0.0)}

        specs = export.model_inputs(model)
        return {
            export.DEFAULT: export.Signature(
                {"text": export.text("text")}, raw, ("tokens", "scores"),
                f"text with [MASK] in, the top {k} tokens and their probabilities per mask out"),
            export.IDS: export.Signature(
                specs, lambda **x: {"logits": logits(x)}, ("logits",),
                "packed token ids and mask positions in, masked-LM logits out"),
        }

    def compile(self, model, total_steps=None, warmup_steps=None):
        sparse = keras.losses.SparseCategoricalCrossentropy
        # The masked-LM loss averages over real predictions only (run_pretraining.py:
        # sum(loss * weights) / sum(weights)).
        losses = {"mlm": sparse(from_logits=True, reduction="mean_with_sample_weight")}
        metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        if self.config.model.next_sentence:
            losses["nsp"] = sparse(from_logits=True)
            metrics["nsp"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        self.compile_with(model, total_steps, warmup_steps, loss=losses,
                          weighted_metrics=metrics)


class CausalLMTask(_Pretraining):
    """Left-to-right language modelling: GPT-1, or a causal BERT encoder (LTR & No NSP)."""

    main_metric = "lm_accuracy"

    def __init__(self, name, config, check_data=True):
        super().__init__(name, config, check_data)
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
        from zoo import models

        overrides = {} if self.gpt else {"causal": True, "pooler": False}
        backbone = training.load_backbone(self.config.model, self.tokenizer, **overrides)
        return models.CausalLanguageModel(backbone)

    def serving(self, model, run_dir=None):
        """Serving signatures (zoo.export): text generation.

        `serving_default`: `prompt` [batch] string and `max_new_tokens` int32 (a scalar for
        the whole batch, or one value per row as TF Serving's `instances` format sends it)
        in; `completion` [batch] string out: the generated continuation only, detokenized,
        greedy (argmax at every step). The graph runs the model on a fixed buffer of the
        model's positions (`max_sequence_length`, no cache) and takes the logits at each
        row's last real token. A prompt longer than the buffer keeps its last
        `max_sequence_length - 1` tokens; a row stops after its own `max_new_tokens` or
        when the buffer is full, whichever comes first. `max_new_tokens <= 0`, an empty
        prompt (no token to continue from) and a batch of 0 give "" completions; invalid
        UTF-8 is read as unknown text by the tokenizer.
        `serving_sample`: the same plus `top_k` and `seed` (int32, scalar or per row): each
        step samples from the softmax over the row's `top_k` largest logits (ties with the
        k-th are kept; `top_k` clipped to [1, vocabulary]) with
        `tf.random.stateless_categorical`, seeded by (row's seed, step): the same seed gives
        the same completion, whatever else is in the batch.
        `serving_ids`: the model's inputs (`token_ids`, `padding_mask`, ...) in, `logits`
        [batch, sequence, vocabulary] float32 out.
        """
        from zoo import export

        tokenizer = self.tokenizer
        backbone = model.backbone
        buffer = int(backbone.max_sequence_length)
        names = [tensor.name.split(":")[0] for tensor in model.inputs]

        def logits(inputs):
            return tf.cast(model(inputs, training=False)["lm"], tf.float32)

        def per_row(value, batch):
            # A scalar (or [1]) is the whole batch's; a [batch] vector is one per row.
            return tf.broadcast_to(tf.reshape(tf.cast(value, tf.int32), [-1]), [batch])

        def generate(prompt, max_new_tokens, top_k=None, seed=None):
            batch = tf.shape(prompt)[0]
            ids = tf.cast(tokenizer(prompt), tf.int32)
            # Keep the last buffer - 1 tokens: room for at least one new token.
            limits = ids.row_limits()
            starts = limits - tf.minimum(ids.row_lengths(), buffer - 1)
            ids = tf.gather(ids.values, tf.ragged.range(starts, limits))
            lengths = tf.cast(ids.row_lengths(), tf.int32)
            tokens = ids.to_tensor(0, shape=[None, buffer])
            budget = tf.clip_by_value(per_row(max_new_tokens, batch), 0, buffer - lengths)
            budget = tf.where(lengths > 0, budget, 0)
            if top_k is not None:
                top_k = tf.clip_by_value(per_row(top_k, batch), 1,
                                         int(backbone.vocabulary_size))
                seed = per_row(seed, batch)
            positions = tf.range(buffer)[None, :]

            def step(i, tokens, lengths):
                inputs = {"token_ids": tokens,
                          "padding_mask": tf.cast(positions < lengths[:, None], tf.int32)}
                if "segment_ids" in names:
                    inputs["segment_ids"] = tf.zeros_like(tokens)
                last = tf.gather(logits(inputs), tf.maximum(lengths - 1, 0), batch_dims=1)
                if top_k is None:
                    token = tf.argmax(last, axis=-1, output_type=tf.int32)
                else:
                    ranked = tf.sort(last, axis=-1, direction="DESCENDING")
                    kth = tf.gather(ranked, top_k - 1, batch_dims=1)
                    last = tf.where(last >= kth[:, None], last, -np.inf)
                    token = tf.map_fn(
                        lambda row: tf.cast(tf.random.stateless_categorical(
                            row[0][None], 1, tf.stack([row[1], i]))[0, 0], tf.int32),
                        (last, seed), fn_output_signature=tf.int32)
                active = i < budget
                tokens = tf.where(active[:, None] & (positions == lengths[:, None]),
                                  token[:, None], tokens)
                return i + 1, tokens, lengths + tf.cast(active, tf.int32)

            _, tokens, _ = tf.while_loop(
                lambda i, *_: i < tf.reduce_max(tf.concat([budget, [0]], 0)), step,
                (tf.constant(0), tokens, lengths), maximum_iterations=buffer)
            new = tf.gather(tokens, tf.ragged.range(lengths, lengths + budget), batch_dims=1)
            return {"completion": tokenizer.detokenize(new)}

        def scalar_or_rows(name):
            return tf.TensorSpec(None, tf.int32, name=name)

        inputs = {"prompt": export.text("prompt"),
                  "max_new_tokens": scalar_or_rows("max_new_tokens")}
        sampling = dict(inputs, top_k=scalar_or_rows("top_k"), seed=scalar_or_rows("seed"))
        return {
            export.DEFAULT: export.Signature(inputs, generate, ("completion",),
                                             "prompt in, its greedy continuation out"),
            "serving_sample": export.Signature(sampling, generate, ("completion",),
                                               "prompt in, a top-k sampled continuation out"),
            export.IDS: export.Signature(export.model_inputs(model),
                                         lambda **x: {"logits": logits(x)}, ("logits",),
                                         "token ids in, next-token logits out"),
        }

    def compile(self, model, total_steps=None, warmup_steps=None):
        losses = {"lm": keras.losses.SparseCategoricalCrossentropy(from_logits=True)}
        metrics = {"lm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}
        self.compile_with(model, total_steps, warmup_steps, loss=losses,
                          weighted_metrics=metrics)


def _gpt_tokenizer(model_config):
    """GPT-1's BPE without the fine-tuning tokens (pretraining never sees them)."""
    from zoo import tokenizers

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
