"""Serving beside the task families: one module per family turning a trained model into the
SavedModel signatures of its export.

Each module's `signatures(task, model, run_dir)` (pretraining: `masked_lm_signatures`,
`causal_lm_signatures`) returns the family's `zoo.export.Signature`s: at least
`serving_default` on raw inputs (text, image bytes) and `serving_ids` on token ids or pixels,
built from TensorFlow and tensorflow-text ops only, so that stock TF Serving runs them. A
task class names its family's function (`signatures = serving.tagging.signatures`), the
`serving(model, run_dir)` method of `zoo_tasks.base.BaseTask` calls it, and `zoo.export`
reads the signatures through that method. A module reads what it needs from the task
(tokenizer, config, labels); `common` holds what several families share.
"""

from zoo_tasks.serving import (
    classification,
    common,
    image_classification,
    multiple_choice,
    pretraining,
    sentence_embedding,
    span_qa,
    tagging,
    text_classification,
)

__all__ = ["classification", "common", "image_classification", "multiple_choice",
           "pretraining", "sentence_embedding", "span_qa", "tagging", "text_classification"]
