"""Serving of sentence(-pair) classification (GLUE, SNLI, SciTail): raw sentences in, the
class probabilities and label name (STS-B: the score) out, packed in the graph in the run's
style (BERT or GPT-1) by the task's own `inputs`."""

import tensorflow as tf

from zoo import export
from zoo_tasks.base import inference_model
from zoo_tasks.serving.common import probabilities_and_names


def signatures(task, model, run_dir=None):
    """Serving signatures (zoo.export) of a `zoo_tasks.classification.ClassificationTask`:
    `sentence1` (and `sentence2` for pairs) in; `probabilities` [batch, classes] and `label`
    [batch] (the label names of the data) out, or `score` [batch] for STS-B. `serving_ids`
    takes the packed token ids instead.
    """
    inference = inference_model(model)
    outputs = ("score",) if task.regression else ("probabilities", "label")
    names = tf.constant(task.labels or [""])

    def answer(x):
        logits = tf.cast(inference(x, training=False)["logits"], tf.float32)
        if task.regression:
            return {"score": logits[:, 0]}
        return probabilities_and_names(logits, names, "label")

    def raw(sentence1, sentence2=None):
        # Always dynamic padding: a served batch is padded to its longest sequence.
        return answer(task.inputs(sentence1, sentence2, multiple=export.PAD_TO_MULTIPLE_OF))

    inputs = {"sentence1": export.text("sentence1")}
    if not task.single_sentence:
        inputs["sentence2"] = export.text("sentence2")
    return {
        export.DEFAULT: export.Signature(inputs, raw, outputs, "raw sentences in, "
                                         + " and ".join(outputs) + " out"),
        export.IDS: export.Signature(export.model_inputs(inference), lambda **x: answer(x),
                                     outputs, "packed token ids in, "
                                     + " and ".join(outputs) + " out"),
    }
