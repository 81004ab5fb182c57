"""Serving of your own data's text classification: raw `text` (and `text_pair`) in, whatever
the file's columns were called; the user's label names out (`label` and `probabilities`;
for several labels a row `labels` and a sigmoid's `probabilities`; for a regression `score`),
packed in the graph in the run's style (BERT or GPT-1) by the task's own `inputs`."""

import tensorflow as tf

from zoo import export
from zoo_tasks.base import inference_model
from zoo_tasks.serving.common import probabilities_and_names


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.text_classification.TextClassificationTask`:
    `text` (and `text_pair` for pairs) in; out `probabilities` [batch, labels] and `label`
    [batch]; with data.multi_label `probabilities` (a sigmoid a label) and `labels` [batch,
    labels]: the names at probability >= data.threshold, in label order, then "" to fill the
    row; with data.regression `score` [batch]. `serving_ids` takes packed token ids instead.
    """
    inference = inference_model(model)
    if task.regression:
        outputs = ("score",)
    else:
        outputs = ("probabilities", "labels" if task.multi_label else "label")
    names = tf.constant(task.labels or [""])
    threshold = task.config.data.threshold

    def answer(x):
        logits = tf.cast(inference(x, training=False)["logits"], tf.float32)
        if task.regression:
            return {"score": logits[:, 0]}
        if not task.multi_label:
            return probabilities_and_names(logits, names, "label")
        probabilities = tf.sigmoid(logits)
        chosen = probabilities >= threshold  # [batch, labels]
        every = tf.broadcast_to(names, tf.shape(chosen))
        labels = tf.ragged.boolean_mask(every, chosen).to_tensor(
            default_value="", shape=tf.shape(chosen))
        return {"probabilities": probabilities, "labels": labels}

    def raw(text, text_pair=None):
        # Always dynamic padding: a served batch is padded to its longest sequence.
        return answer(task.inputs(text, text_pair, multiple=export.PAD_TO_MULTIPLE_OF))

    inputs = {"text": export.text("text")}
    if not task.single_sentence:
        inputs["text_pair"] = export.text("text_pair")
    described = " and ".join(outputs) + " out"
    return {
        export.DEFAULT: export.Signature(inputs, raw, outputs, "raw text in, " + described),
        export.IDS: export.Signature(export.model_inputs(inference), lambda **x: answer(x),
                                     outputs, "packed token ids in, " + described),
    }
