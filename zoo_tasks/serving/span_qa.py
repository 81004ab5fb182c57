"""Serving of span question answering (SQuAD v1.1 and v2.0): a raw question and context in,
the answer out, computed in the SavedModel graph as `evaluate` computes it: the doc-stride
windows of `zoo.data.span_qa.span_qa_windows_graph`, the model CHUNK windows at a time, the
post-processing of `zoo_tasks.span_qa_decoding.best_spans_graph` (both tested equal to their Python
versions) and, for v2.0, the run's tuned null threshold τ."""

import tensorflow as tf

from zoo import export
from zoo.data import packing
from zoo.data.span_qa import span_qa_windows_graph
from zoo_tasks.span_qa_decoding import best_spans_graph, logits_at_full_length

CHUNK = 32  # windows per model call in serving


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.span_qa.SpanQATask`: raw question and
    context in, the answer out.

    `serving_default`: inputs `question`, `context` [batch] string; outputs `answer`
    [batch] string, `start_char`, `end_char` [batch] int64, `score` [batch] float32. The
    context is cut into the training windows (`data.sequence_length`, `data.doc_stride`,
    `data.max_query_length`) in the graph; the answer is `best_spans`' (n_best_size,
    max_answer_length, max-context rule, stable tie order): the span of the highest
    start + end logit sum `score` (s_best), `answer` = context[start_char:end_char] in
    Unicode code points (the tokenizer's offsets and SQuAD's answer_start). SQuAD 2.0: no
    answer unless s_best >= s_null + τ (s_null: the smallest [CLS] score over the
    windows; float64 comparison, as the Python pipeline's), τ read at export from
    `run_dir/null_threshold.json` (0.0 when that file is missing, e.g. a run never
    evaluated on dev). "No answer" is `answer` "", `start_char` = `end_char` = -1 and
    `score` s_best (0.0 when no span qualifies at all).

    Bad input: a context without tokens (empty, or only whitespace or control
    characters) has no window: no answer, `score` 0.0 (training refuses such a context;
    serving answers); so does a question that leaves no room for context (possible only
    when sequence_length - max_query_length - 3 < 1). An empty question packs as
    [CLS] [SEP] context [SEP]. A context of any length is cut into as many windows as it
    needs, run through the model CHUNK windows at a time (a 100,000-character context
    works; time grows with its length). Invalid UTF-8 bytes are read as U+FFFD, as the
    tokenizer reads them, one character each: the answer is then a substring of the
    context with those bytes replaced by U+FFFD, and the offsets count that text's
    characters. A batch of 0 gives empty outputs.

    With `data.pad_to_multiple_of` set, each chunk of windows is cut to its longest
    window rounded up to it, as `predict` cuts its batches (`logits_at_full_length`), so
    the served answers stay those of `evaluate`.

    `serving_ids`: `token_ids`, `segment_ids`, `padding_mask` [batch, sequence_length] of
    packed windows in; `start_logits`, `end_logits` [batch, sequence_length] float32 out
    (the model's logits at every position, whatever `data.pad_to_multiple_of`).
    """
    data, tok = task.config.data, task.tokenizer
    tau = task.null_threshold(run_dir)
    version = task.version

    def logits(x, multiple=0):
        # Dynamic padding as in `predict` (data.pad_to_multiple_of), so serving answers
        # as `evaluate` does; padding gets -inf there.
        x = packing.trim_padding(x, multiple)
        return logits_at_full_length(model(x, training=False), data.sequence_length,
                                     x["padding_mask"] if multiple else None)

    def chunked_logits(x):
        # A long context has hundreds of windows: run them CHUNK at a time, so memory
        # stays that of one batch of CHUNK windows (padding the last chunk).
        total = tf.shape(x["token_ids"])[0]
        chunks = (total + CHUNK - 1) // CHUNK
        pad = chunks * CHUNK - total
        length = data.sequence_length
        x = {key: tf.reshape(tf.pad(value, [[0, pad], [0, 0]]), [chunks, CHUNK, length])
             for key, value in x.items()}
        # Static output shapes: a batch without windows maps over no chunk at all.
        spec = tf.TensorSpec([CHUNK, length], tf.float32)
        start, end = tf.map_fn(lambda chunk: logits(chunk, data.pad_to_multiple_of), x,
                               fn_output_signature=(spec, spec))
        return tuple(tf.reshape(t, [chunks * CHUNK, length])[:total] for t in (start, end))

    def raw(question, context):
        # One decode for the tokenizer and the answer text: both see the same code points
        # (invalid bytes -> U+FFFD).
        chars = tf.strings.unicode_decode(context, "UTF-8", errors="replace")
        context = tf.strings.unicode_encode(chars, "UTF-8")
        question_ids = tok(question)
        context_ids, starts, ends = tok.tokenize_with_offsets(context)
        windows = span_qa_windows_graph(
            question_ids, context_ids, starts, ends, data.sequence_length,
            data.doc_stride, data.max_query_length, tok.cls_token_id, tok.sep_token_id,
            tok.pad_token_id)
        start, end = chunked_logits({key: windows[key] for key in task.model_inputs})
        span = best_spans_graph(windows, start, end, tf.shape(context)[0],
                                data.n_best_size, data.max_answer_length)
        found = span["found"]
        if version == 2:
            found &= (tf.cast(span["score"], tf.float64)
                      >= tf.cast(span["null"], tf.float64) + tau)
        first = tf.where(found, span["start_char"], -1)
        last = tf.where(found, span["end_char"], -1)
        text = tf.gather(chars.flat_values,
                         tf.ragged.range(tf.maximum(first, 0), tf.maximum(last, 0))
                         + chars.row_splits[:-1, None])
        answer = tf.strings.unicode_encode(
            tf.RaggedTensor.from_row_splits(text.flat_values, text.row_splits), "UTF-8")
        return {"answer": answer, "start_char": first, "end_char": last,
                "score": span["score"]}

    def ids(token_ids, segment_ids, padding_mask):
        start, end = logits({"token_ids": token_ids, "segment_ids": segment_ids,
                             "padding_mask": padding_mask})
        return {"start_logits": start, "end_logits": end}

    inputs = {"question": export.text("question"), "context": export.text("context")}
    outputs = ("answer", "start_char", "end_char", "score")
    return {
        export.DEFAULT: export.Signature(
            inputs, raw, outputs, "question and context in; the answer (a substring of "
            "the context, \"\" for none), its character span (-1 for none) and score out"),
        export.IDS: export.Signature(
            export.model_inputs(model), ids, ("start_logits", "end_logits"),
            "packed window token ids in, start and end logits out"),
    }
