"""Serving of sentence embeddings: raw `text` in, `embedding` [batch, dim] (float32) out, the
texts packed in the graph as `[CLS] text [SEP]` by the task's own `inputs`."""

import tensorflow as tf

from zoo import export


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a
    `zoo_tasks.sentence_embedding.SentenceEmbeddingTask`: `serving_default` takes `text`
    [batch] and returns `embedding` [batch, dim], the model's pooled (and, with
    model.normalize, L2-normalized) vectors; `serving_ids` takes packed token ids instead.
    """

    def answer(x):
        return {"embedding": tf.cast(model(x, training=False)["embedding"], tf.float32)}

    def raw(text):
        # Always dynamic padding: a served batch is padded to its longest sequence; padding
        # does not change the pooled vector (it is masked out).
        return answer(task.inputs(text, multiple=export.PAD_TO_MULTIPLE_OF))

    outputs = ("embedding",)
    return {
        export.DEFAULT: export.Signature({"text": export.text("text")}, raw, outputs,
                                         "raw text in, embedding out"),
        export.IDS: export.Signature(export.model_inputs(model), lambda **x: answer(x),
                                     outputs, "packed token ids in, embedding out"),
    }
