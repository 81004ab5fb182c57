"""Serving of the pretrained language models: BERT's masked LM fills in the blanks of a text
("[MASK]"), a left-to-right LM (GPT-1, or the causal BERT encoder) continues a prompt, greedy
or top-k sampled, in a generation loop inside the SavedModel graph."""

import numpy as np
import tensorflow as tf

from zoo import export

MASK = "[MASK]"  # what a served masked-LM text marks its blanks with
TOP_K = 5  # candidates the served masked LM returns per blank


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
    generation.

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
    tokenizer = task.tokenizer
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
