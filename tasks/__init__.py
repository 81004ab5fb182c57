"""Tasks: a benchmark's model, data, losses, metrics and evaluation, for `model.fit`.

    task = tasks.create("glue/mrpc", config)       # config: zoo.config.Experiment or a dict
    model = task.build_model()                      # backbone + head, a Keras model
    task.compile(model)                             # losses, metrics, AdamW + schedule
    model.fit(task.dataset("train"), epochs=3)      # batches of (inputs, labels, weights)
    task.evaluate(model, "dev")                     # {"f1": ..., "accuracy": ...}

The registry is this one dict. Adding a task family touches three files: its own file here
(tasks/<family>.py, on the shared plumbing of `tasks.base`), its lines in `TASKS`, and an
experiment YAML (configs/experiments/<family>/<task>.yaml). `tasks.runs` runs an experiment
end to end (`zoo train`, `zoo evaluate`, `zoo export`) on top of this registry.
"""

from tasks import (classification, image_classification, multiple_choice, pretraining,
                   span_qa, tagging)

TASKS = {
    # BERT section 4.1 / GPT-1 section 3.3: sentence(-pair) classification and regression.
    "glue/cola": classification.ClassificationTask,
    "glue/sst2": classification.ClassificationTask,
    "glue/mrpc": classification.ClassificationTask,
    "glue/qqp": classification.ClassificationTask,
    "glue/stsb": classification.ClassificationTask,
    "glue/mnli": classification.ClassificationTask,
    "glue/qnli": classification.ClassificationTask,
    "glue/rte": classification.ClassificationTask,
    "glue/wnli": classification.ClassificationTask,
    "snli": classification.ClassificationTask,
    "scitail": classification.ClassificationTask,
    # BERT sections 4.2 and 4.3: answer spans over doc-stride windows, SQuAD's own scoring.
    "squad_v1": span_qa.SpanQATask,
    "squad_v2": span_qa.SpanQATask,
    # BERT section 4.4 / GPT-1 section 3.3: multiple choice, a softmax over one score a choice.
    "swag": multiple_choice.MultipleChoiceTask,
    "race": multiple_choice.MultipleChoiceTask,
    "story_cloze": multiple_choice.MultipleChoiceTask,
    # BERT section 3.1 (masked LM + next-sentence prediction); GPT-1 section 3.1 and BERT
    # Table 5 "LTR & No NSP" (left-to-right language model).
    "pretrain/masked_lm": pretraining.MaskedLMTask,
    "pretrain/causal_lm": pretraining.CausalLMTask,
    # ViT sections 3.1-3.2: a linear head on the class token, fine-tuned on an image folder.
    "image_folder": image_classification.ImageClassificationTask,
    # BERT section 5.3 and Table 7: CoNLL-2003 NER, fine-tuned or feature-based.
    "conll2003": tagging.TaggingTask,
}


def create(name, config=None, check_data=True):
    """The task `name` built from `config` (an Experiment, a dict of sections, or None).

    Example:
        >>> import tasks
        >>> sorted(tasks.TASKS)[:3]
        ['glue/cola', 'glue/mnli', 'glue/mrpc']
    """
    from zoo import config as config_lib

    if name not in TASKS:
        raise config_lib.ConfigError(f"task: unknown task {name!r}; known tasks: "
                                     f"{', '.join(TASKS)}")
    if config is None or isinstance(config, dict):
        config = config_lib.resolve({**(config or {}), "task": name})
    return TASKS[name](name, config, check_data=check_data)
