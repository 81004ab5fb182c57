"""Serving of multiple choice (SWAG, RACE, Story Cloze): a context and its choices in, the
probabilities of the choices and the chosen one out; the graph packs every choice as the
task's `dataset` does, in the run's style (BERT or GPT-1), with the same truncation."""

import tensorflow as tf

from zoo import export
from zoo.data import packing
from zoo_tasks.base import inference_model
from zoo_tasks.serving.common import valid_utf8


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.multiple_choice.MultipleChoiceTask`: a
    context and its choices in, the choice out.

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
        the options as written. The graph composes BERT's sentence B as the task's
        `_sentence_b` does (`sentence_b_graph`: a cloze question gets the option in its `_`
        blanks, another gets `question + " " + option`); GPT-1 puts the question after the
        article, which is cut from its end so the question and the longest option fit.

    Defined outputs for odd input: empty strings are empty segments (the special tokens
    alone still make a sequence, which gets a score); invalid UTF-8 bytes are read as
    U+FFFD (as the tokenizer reads them); a long context is truncated as in training; a
    batch of 0 gives [0, k] and [0]. A non-empty batch with k = 0 is an
    InvalidArgumentError ("choices: at least one choice per question").

    `serving_ids`: the packed ids, [batch, k, sequence] int32 (`token_ids`,
    `padding_mask`, and `segment_ids` in BERT style), k free -> the same outputs.
    """
    inference = inference_model(model)
    n = task.num_choices

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
            x = packed_inputs(task, context, choices)
        # Dynamic padding: each choice is scored on its own real tokens, so cutting the
        # batch to its longest sequence changes no score.
        x = packing.trim_padding(x, export.PAD_TO_MULTIPLE_OF)
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


def packed_inputs(task, context, choices):
    """`serving_default`'s packing (TF ops): raw `context` [batch] and `choices` [batch, k]
    strings (as `signatures` documents them) -> packed model inputs, each
    (batch * k, 1, sequence_length), question-major; the task's `_encode` packing of the
    same question, choice by choice."""
    tok, length = task.tokenizer, task.config.data.sequence_length
    context, choices = valid_utf8(context), valid_utf8(choices)
    batch, k = tf.shape(choices)[0], tf.shape(choices)[1]
    options = tf.reshape(choices, [-1])  # (batch * k,)
    owner = tf.repeat(tf.range(batch), k)  # the question of each flat choice
    question = tf.fill(tf.shape(context), "")
    if task.name == "race":  # the question is the context's last line
        split = tf.strings.regex_full_match(context, r"(?s).*\n.*")
        question = tf.where(split, tf.strings.regex_replace(context, r"(?s)^.*\n", ""), "")
        context = tf.where(split, tf.strings.regex_replace(context, r"(?s)\n[^\n]*$", ""),
                           context)
    if not task.gpt:
        second = sentence_b_graph(tf.gather(question, owner), options)
        return packing.pack_bert_multiple_choice(
            tf.gather(tok(context), owner), [tok(second)], length, tok.cls_token_id,
            tok.sep_token_id, tok.pad_token_id)
    start, delimiter, extract = (tok.token_to_id(t) for t in tok.special_tokens)
    answers, document, asked = tok(options), tok(context), tok(question)
    # As the task's `_encode`: the document loses its end so the question and the longest
    # answer of its question fit.
    lengths = tf.reshape(tf.cast(answers.row_lengths(), tf.int32), tf.stack([batch, k]))
    longest = tf.reduce_max(tf.concat([lengths, tf.zeros([batch, 1], tf.int32)], axis=1),
                            axis=1)
    keep = tf.maximum(length - 3 - tf.cast(asked.row_lengths(), tf.int32) - longest, 0)
    positions = tf.ragged.range(tf.cast(document.row_lengths(), tf.int32))
    document = tf.ragged.boolean_mask(document, positions < keep[:, tf.newaxis])
    return packing.pack_gpt_multiple_choice(
        tf.gather(tf.concat([document, asked], axis=1), owner), [answers], length, start,
        delimiter, extract)


def sentence_b_graph(question, option):
    """`zoo_tasks.multiple_choice`'s `_sentence_b` (BERT style's sentence B) on string tensors of
    one shape (TF ops): the option in the question's `_` blanks, after the question and a
    space, or alone when the question is empty."""
    parts = tf.strings.split(question, "_")  # (n, parts); one part when there is no blank
    last = tf.ragged.range(parts.row_lengths()).flat_values == tf.gather(
        parts.row_lengths() - 1, parts.value_rowids())
    filler = tf.where(last, "", tf.gather(option, parts.value_rowids()))
    filled = tf.strings.reduce_join(parts.with_flat_values(
        tf.strings.join([parts.flat_values, filler])), axis=1)
    blank = tf.strings.regex_full_match(question, "(?s).*_.*")
    spaced = tf.where(question == "", option, tf.strings.join([question, option], " "))
    return tf.where(blank, filled, spaced)
