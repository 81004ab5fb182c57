"""Serving of the pretrained language models: BERT's masked LM fills in the blanks of a text
("[MASK]"), a left-to-right LM (GPT-1, or the causal BERT encoder) continues a prompt, greedy
or sampled, with a key/value cache in a generation loop inside the SavedModel graph."""

import numpy as np
import tensorflow as tf

from zoo import export
from zoo.generation import CachedLM, beam, engine, sampling

MASK = "[MASK]"  # what a served masked-LM text marks its blanks with
TOP_K = 5  # candidates the served masked LM returns per blank
GENERATE_FULL = "serving_generate_full"  # the causal LM's signature with every option


def masked_lm_signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.pretraining.MaskedLMTask`: fill in the
    blanks.

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
    tokenizer, length, k = task.tokenizer, max(task.lengths()), TOP_K
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


def causal_lm_signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.pretraining.CausalLMTask`: text
    generation with a key/value cache (`zoo.generation.CachedLM`).

    Every generating signature runs the same loop in the graph: the prompts are tokenized,
    left-padded to the batch's longest and run through the model once (the prefill); then a
    `tf.while_loop` adds one token a step, each step running the model on that one position
    with the keys and values of the earlier ones cached. The cache is allocated once per
    request, for the longest prompt plus the most new tokens any row may add; each row keeps
    its own absolute positions, so a row's answer does not depend on the rest of the batch.
    A prompt longer than the model's positions (`max_sequence_length`) keeps its last
    `max_sequence_length - 1` tokens, and a row stops after its own `max_new_tokens` or at
    the model's last position, whichever comes first (cut, not refused: one long prompt does
    not fail the batch). `max_new_tokens <= 0`, an empty prompt (no token to continue from)
    and a batch of 0 give "" completions; invalid UTF-8 is read as unknown text by the
    tokenizer. GPT-1 has no end-of-text token: without stop strings a row runs to its
    `max_new_tokens`.

    `serving_default`: `prompt` [batch] string and `max_new_tokens` int32 (a scalar for the
    whole batch, or one value per row as TF Serving's `instances` format sends it) in;
    `completion` [batch] string out: the generated continuation only, detokenized, greedy
    (argmax at every step).
    `serving_sample`: the same plus `top_k` and `seed` (int32, scalar or per row): each
    step samples from the softmax over the row's `top_k` largest logits (ties with the
    k-th are kept; `top_k` clipped to [1, vocabulary]) with
    `tf.random.stateless_categorical`, seeded by (row's seed, step): the same seed gives
    the same completion, whatever else is in the batch.
    `serving_generate`: the generator of `zoo.generation.Generator.generate`, token for
    token. Inputs, each a scalar for the whole batch or one value per row: `prompt`
    [batch] string, `max_new_tokens` int32, `do_sample` int32 (0 greedy, 1 sample),
    `temperature` float32, `top_k` int32 (0: off), `top_p` float32 (1.0: off), `seed`
    int64, and `stop` string, [n] for every row or [batch, n] (stop strings; "" entries
    are ignored, so rows with fewer pad with ""). Greedy rows take the argmax and ignore
    the sampling inputs; sampling rows apply temperature, top-k and top-p as
    transformers' logits warpers do and draw with `zoo.generation.sampling`'s seeded
    uniform numbers (the row's seed, the new token's index). A scalar `seed` S gives row r
    the seed S + r, as `generate(prompts, seed=S)` does; a row with its own seed s equals
    `generate(prompt, seed=s)` alone. A row stops after the token whose text completes one
    of its stop strings (kept in the completion). Outputs `completion` [batch] string and
    `new_tokens` [batch] int32. A sampling row with `temperature` <= 0 or `top_p` outside
    (0, 1], or a `top_k` < 0, fails the request, as does an input with neither one value
    nor one per prompt (InvalidArgumentError naming the input). Where Python's `generate`
    refuses a prompt plus `max_new_tokens` past the positions, the export cuts the row.
    It is `serving_generate_full` with num_beams=1, repetition_penalty=1.0,
    no_repeat_ngram_size=0, min_new_tokens=0 and no stop tokens.
    `serving_generate_full`: every option of `Generator.generate`, per request:
    serving_generate's inputs plus `num_beams` int32 (one for the batch; > 1: beam search,
    which neither samples nor takes stop strings, and returns the best beam),
    `length_penalty` float32, `repetition_penalty` float32 (> 0), `no_repeat_ngram_size`
    int32 (0: off), `min_new_tokens` int32 (stop tokens banned and stop strings ignored
    before it) and `stop_token_ids` int32, [n] for every row or [batch, n] (-1 pads; a row
    stops after one of them, kept). The same outputs as serving_generate.
    Every signature runs `zoo.generation.engine` (and `zoo.generation.beam`), the code of
    the Python generator, in a `tf.while_loop` in the graph.
    `serving_ids`: the model's inputs (`token_ids`, `padding_mask`, ...) in, `logits`
    [batch, sequence, vocabulary] float32 out.
    """
    tokenizer = task.tokenizer
    lm = CachedLM(model)
    positions, vocabulary = lm.max_positions, lm.vocabulary_size

    def logits(inputs):
        return tf.cast(model(inputs, training=False)["lm"], tf.float32)

    def start(prompt, max_new_tokens):
        # The prompts' last positions - 1 tokens (room for one new token), left-padded, and
        # each row's budget of new tokens: 0 without a prompt, never past the last position.
        ids = tf.cast(tokenizer(prompt), tf.int32)
        limits = ids.row_limits()
        starts = limits - tf.minimum(ids.row_lengths(), positions - 1)
        ids = tf.gather(ids.values, tf.ragged.range(starts, limits))
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        budget = tf.clip_by_value(_per_row(max_new_tokens, tf.shape(prompt)[0], tf.int32,
                                           "max_new_tokens"), 0, positions - lengths)
        return _buffers(ids, tf.where(lengths > 0, budget, 0))

    def completion(state):
        new = tf.RaggedTensor.from_tensor(state["new"], lengths=state["count"])
        return {"completion": tokenizer.detokenize(new),
                "new_tokens": tf.cast(state["count"], tf.int32)}

    def greedy(prompt, max_new_tokens):
        buffers = start(prompt, max_new_tokens)
        state = engine.sample(lm, *buffers, _options(tf.shape(prompt)[0]))
        return {"completion": completion(state)["completion"]}

    def sample(prompt, max_new_tokens, top_k, seed):
        buffers = start(prompt, max_new_tokens)
        batch = tf.shape(prompt)[0]
        top_k = tf.clip_by_value(_per_row(top_k, batch, tf.int32, "top_k"), 1, vocabulary)
        seed = _per_row(seed, batch, tf.int32, "seed")

        def choose(last, step):  # the top k (ties kept), then stateless_categorical
            ranked = tf.sort(last, axis=-1, direction="DESCENDING")
            kth = tf.gather(ranked, top_k - 1, batch_dims=1)
            last = tf.where(last >= kth[:, None], last, -np.inf)
            return tf.map_fn(
                lambda row: tf.cast(tf.random.stateless_categorical(
                    row[0][None], 1, tf.stack([row[1], step]))[0, 0], tf.int32),
                (last, seed), fn_output_signature=tf.int32)

        state = engine.sample(lm, *buffers, _options(batch), choose=choose)
        return {"completion": completion(state)["completion"]}

    def generate(prompt, max_new_tokens, do_sample, temperature, top_k, top_p, seed, stop):
        return generate_full(prompt, max_new_tokens, do_sample, temperature, top_k, top_p,
                             seed, stop, 1, 1.0, 1.0, 0, 0, [-1])

    def generate_full(prompt, max_new_tokens, do_sample, temperature, top_k, top_p, seed,
                      stop, num_beams, length_penalty, repetition_penalty,
                      no_repeat_ngram_size, min_new_tokens, stop_token_ids):
        batch = tf.shape(prompt)[0]
        buffers = start(prompt, max_new_tokens)
        options = _options(batch, do_sample, temperature, top_k, top_p, seed,
                           length_penalty, repetition_penalty, no_repeat_ngram_size,
                           min_new_tokens, stop_token_ids)
        stops = _stop_strings(stop, batch)
        minimum = options["min_new_tokens"]
        num_beams = tf.reshape(tf.cast(num_beams, tf.int32), [-1])
        checks = [tf.debugging.assert_equal(tf.reduce_all(num_beams == tf.reduce_max(
            num_beams)), True, message="num_beams: one value for the batch (the same in "
            "every instance)"),
            tf.debugging.assert_greater_equal(num_beams, 1, message="num_beams must be >= 1")]
        with tf.control_dependencies(checks):
            num_beams = tf.reduce_max(tf.concat([num_beams, [1]], 0))
        searching = num_beams > 1
        checks = [tf.debugging.assert_equal(searching & (tf.reduce_any(options["do_sample"])
                                                         | tf.reduce_any(stops != "")),
                                            False, message="beam search (num_beams > 1) "
                                            "does not sample nor take stop strings")]
        with tf.control_dependencies(checks):
            searching = tf.identity(searching)

        def sampled():
            state = engine.sample(lm, *buffers, options, stopped=lambda out, count: _stopped(
                tokenizer, out, count, stops) & (count >= minimum))
            return state["new"], state["count"]

        def beams():
            rows = {name: tf.repeat(value, num_beams, axis=0) for name, value in
                    options.items()}
            kept = tf.maximum(2, 1 + tf.shape(options["stop_token_ids"])[1]) * num_beams
            state = beam.search(lm, *[tf.repeat(b, num_beams, axis=0) for b in buffers],
                                rows, num_beams, tf.minimum(kept, num_beams * vocabulary))
            return state["finished"][:, 0], state["finished_length"][:, 0]

        new, count = tf.cond(searching, beams, sampled)
        return completion({"new": new, "count": count})

    def scalar_or_rows(name, dtype=tf.int32):
        return tf.TensorSpec(None, dtype, name=name)

    inputs = {"prompt": export.text("prompt"),
              "max_new_tokens": scalar_or_rows("max_new_tokens")}
    sampling = dict(inputs, top_k=scalar_or_rows("top_k"), seed=scalar_or_rows("seed"))
    options = dict(inputs, do_sample=scalar_or_rows("do_sample"),
                   temperature=scalar_or_rows("temperature", tf.float32),
                   top_k=scalar_or_rows("top_k"),
                   top_p=scalar_or_rows("top_p", tf.float32),
                   seed=scalar_or_rows("seed", tf.int64),
                   stop=scalar_or_rows("stop", tf.string))
    full = dict(options, num_beams=scalar_or_rows("num_beams"),
                length_penalty=scalar_or_rows("length_penalty", tf.float32),
                repetition_penalty=scalar_or_rows("repetition_penalty", tf.float32),
                no_repeat_ngram_size=scalar_or_rows("no_repeat_ngram_size"),
                min_new_tokens=scalar_or_rows("min_new_tokens"),
                stop_token_ids=scalar_or_rows("stop_token_ids"))
    return {
        export.DEFAULT: export.Signature(inputs, greedy, ("completion",),
                                         "prompt in, its greedy continuation out"),
        "serving_sample": export.Signature(sampling, sample, ("completion",),
                                           "prompt in, a top-k sampled continuation out"),
        "serving_generate": export.Signature(
            options, generate, ("completion", "new_tokens"),
            "prompt and sampling options in (greedy or temperature, top-k, top-p with a "
            "seed; stop strings), its continuation and count of new tokens out; the same as "
            f"{GENERATE_FULL} with num_beams=1, repetition_penalty=1.0, "
            "no_repeat_ngram_size=0, min_new_tokens=0 and no stop tokens"),
        GENERATE_FULL: export.Signature(
            full, generate_full, ("completion", "new_tokens"),
            "prompt and every option of zoo.generation.Generator.generate in (serving_"
            "generate's plus num_beams, length_penalty, repetition_penalty, "
            "no_repeat_ngram_size, min_new_tokens, stop_token_ids), the continuation (the "
            "best beam) and its count of new tokens out"),
        export.IDS: export.Signature(export.model_inputs(model),
                                     lambda **x: {"logits": logits(x)}, ("logits",),
                                     "token ids in, next-token logits out"),
    }


def _per_row(value, batch, dtype, name):
    """A scalar (or [1]) input as the whole batch's, a [batch] vector as one value per row."""
    value = tf.reshape(tf.cast(value, dtype), [-1])
    check = tf.debugging.assert_equal(
        (tf.size(value) == 1) | (tf.size(value) == batch), True,
        message=f"{name}: one value for the batch, or one per prompt")
    with tf.control_dependencies([check]):
        return tf.broadcast_to(value, [batch])


def _buffers(ids, budget):
    """The engine's inputs (`zoo.generation.engine.prefill`) of prompts `ids` [batch, (n)]
    int32 and their budgets: a prompt of n tokens sits in slots [P - n, P) at positions
    0..n-1 of P = the longest prompt, and the cache has P + the largest budget slots."""
    batch = tf.shape(budget)[0]
    lengths = tf.cast(ids.row_lengths(), tf.int32)
    prompt = tf.maximum(tf.reduce_max(tf.concat([lengths, [0]], 0)), 1)  # slots P
    steps = tf.reduce_max(tf.concat([budget, [0]], 0))  # the most new tokens of a row
    dense = ids.to_tensor(0)
    dense = tf.pad(dense, [[0, 0], [0, prompt - tf.shape(dense)[1]]])  # (batch, P)
    index = tf.range(prompt)[None, :] - (prompt - lengths)[:, None]  # < 0: left padding
    real = index >= 0
    tokens = tf.where(real, tf.gather(dense, tf.maximum(index, 0), batch_dims=1), 0)
    key_mask = tf.concat([real, tf.zeros([batch, steps], tf.bool)], axis=1)
    return tokens, tf.maximum(index, 0), key_mask, lengths, budget


def _options(batch, do_sample=0, temperature=1.0, top_k=0, top_p=1.0, seed=0,
             length_penalty=1.0, repetition_penalty=1.0, no_repeat_ngram_size=0,
             min_new_tokens=0, stop_token_ids=(-1,)):
    """The engine's per-row options (`zoo.generation.sampling.options_for`) of a request,
    checked: a sampling row with temperature <= 0, top_p outside (0, 1] or top_k < 0, a
    repetition_penalty <= 0 or a negative no_repeat_ngram_size or min_new_tokens fails it."""
    do_sample = _per_row(do_sample, batch, tf.int32, "do_sample") != 0
    temperature = _per_row(temperature, batch, tf.float32, "temperature")
    top_k = _per_row(top_k, batch, tf.int32, "top_k")
    top_p = _per_row(top_p, batch, tf.float32, "top_p")
    seed = tf.cast(seed, tf.int64)
    # A scalar seed S gives row r the seed S + r, as generate(prompts, seed=S) does.
    seed = tf.cond(tf.size(seed) == 1,
                   lambda: tf.reshape(seed, [-1])[0] + tf.range(batch, dtype=tf.int64),
                   lambda: _per_row(seed, batch, tf.int64, "seed"))
    penalty = _per_row(repetition_penalty, batch, tf.float32, "repetition_penalty")
    ngram = _per_row(no_repeat_ngram_size, batch, tf.int32, "no_repeat_ngram_size")
    minimum = _per_row(min_new_tokens, batch, tf.int32, "min_new_tokens")

    def refuse(bad, message):
        return tf.debugging.assert_equal(tf.reduce_any(bad), False, message=message)

    checks = [refuse(do_sample & ~(temperature > 0), "serving_generate: temperature must be "
                     "> 0 while sampling (do_sample=1)"),
              refuse(do_sample & ~((top_p > 0) & (top_p <= 1)), "serving_generate: top_p "
                     "must be in (0, 1]"),
              refuse(do_sample & (top_k < 0), "serving_generate: top_k must be >= 0 (0: off)"),
              refuse(~(penalty > 0), "serving_generate: repetition_penalty must be > 0"),
              refuse(ngram < 0, "serving_generate: no_repeat_ngram_size must be >= 0"),
              refuse(minimum < 0, "serving_generate: min_new_tokens must be >= 0")]
    with tf.control_dependencies(checks):
        do_sample = tf.identity(do_sample)
    stops = tf.cast(stop_token_ids, tf.int32)
    stops = tf.reshape(stops, tf.concat([tf.ones([tf.maximum(2 - tf.rank(stops), 0)],
                                                 tf.int32), tf.shape(stops)], 0))
    stops = tf.broadcast_to(stops, [batch, tf.shape(stops)[1]])
    return {"do_sample": do_sample,
            "temperature": tf.where(do_sample, temperature, 1.0),
            "top_k": tf.where(do_sample, top_k, 0),
            "top_p": tf.where(do_sample & (top_p < 1),
                              tf.cast(1.0 - tf.cast(top_p, tf.float64), tf.float32), 0.0),
            "seed": tf.cast(tf.math.floormod(seed, sampling.MASK32), tf.uint32),
            "repetition_penalty": penalty, "no_repeat_ngram_size": ngram,
            "min_new_tokens": minimum,
            "length_penalty": _per_row(length_penalty, batch, tf.float32, "length_penalty"),
            "stop_token_ids": stops}


def _stop_strings(stop, batch):
    """`stop` ([n] for every row, or [batch, n]; a scalar is [1]) as [batch, n] strings."""
    stop = tf.convert_to_tensor(stop, tf.string)
    rank = tf.rank(stop)
    stop = tf.reshape(stop, tf.concat([tf.ones([tf.maximum(2 - rank, 0)], tf.int32),
                                       tf.shape(stop)], 0))
    checks = [tf.debugging.assert_less_equal(
        rank, 2, message="serving_generate: stop is [n] or [batch, n] strings")]
    with tf.control_dependencies(checks):
        return tf.broadcast_to(stop, [batch, tf.shape(stop)[1]])


def _stopped(tokenizer, out, count, stops):
    """Whether the text of each row's first `count` tokens contains one of its stop strings
    (by bytes; "" never matches)."""
    def check():
        text = tokenizer.detokenize(tf.RaggedTensor.from_tensor(out, lengths=count))
        size = tf.strings.length(text)  # bytes
        shape = tf.concat([tf.shape(stops), [tf.reduce_max(tf.concat([size, [0]], 0)) + 1]], 0)
        starts = tf.minimum(tf.range(shape[2])[None, None, :], size[:, None, None])
        windows = tf.strings.substr(tf.broadcast_to(text[:, None, None], shape),
                                    tf.broadcast_to(starts, shape),
                                    tf.broadcast_to(tf.strings.length(stops)[:, :, None], shape))
        found = tf.equal(windows, stops[:, :, None]) & (stops != "")[:, :, None]
        return tf.reduce_any(found, axis=[1, 2])

    return tf.cond(tf.reduce_any(stops != ""), check, lambda: tf.zeros_like(count, tf.bool))
