"""What `zoo_tasks.base.BaseTask` does for every family: the example tables of TensorBoard
(`describe`: the first examples of the first evaluation set, gold beside predicted, as markdown;
the predictions written out here in the form `evaluate(return_predictions=True)` gives them, the
tables by hand) and `serving`, the call of the family's serving function.
"""

import types

import pytest

import zoo_tasks
from zoo_tasks.classification import ClassificationTask
from zoo_tasks.image_classification import ImageClassificationTask
from zoo_tasks.multiple_choice import MultipleChoiceTask
from zoo_tasks.span_qa import SpanQATask
from zoo_tasks.tagging import TaggingTask
from zoo_tasks.text_classification import TextClassificationTask


def _lines(*rows):
    return "\n".join(rows)


def test_classification_shows_the_first_set_alone():
    predictions = {
        "dev_matched": ({"sentence1": ["A cat sat.", "It rained.", "x"],
                         "sentence2": ["A cat | sat.", "It was dry.", "y"],
                         "label": ["entailment", "contradiction", "neutral"]},
                        ["entailment", "neutral", "neutral"]),
        "dev_mismatched": ({"sentence1": ["other"], "sentence2": ["set"], "label": ["neutral"]},
                           ["neutral"])}
    assert ClassificationTask.describe(None, predictions, 2) == _lines(
        "| sentence 1 | sentence 2 | gold | predicted |",
        "|---|---|---|---|",
        "| A cat sat. | A cat \\| sat. | entailment | entailment |",
        "| It rained. | It was dry. | contradiction | neutral |")


def test_a_limit_past_the_examples_shows_them_all():
    predictions = {"dev": ({"words": [["EU", "rejects"]], "tags": [["B-ORG", "O"]]},
                           [["B-ORG", "B-MISC"]])}
    assert TaggingTask.describe(None, predictions, 5) == _lines(
        "| words | gold | predicted |",
        "|---|---|---|",
        "| EU rejects | B-ORG O | B-ORG B-MISC |")


def test_images_show_the_file_name_and_class_names():
    task = types.SimpleNamespace(labels=["circle", "square"])
    predictions = {"dev": ({"path": ["/d/circle/1.png", "/d/square/7.png"], "label": [0, 1]},
                           ["circle", "circle"])}
    assert ImageClassificationTask.describe(task, predictions, 2) == _lines(
        "| image | gold | predicted |",
        "|---|---|---|",
        "| 1.png | circle | circle |",
        "| 7.png | square | circle |")


def test_multiple_choice_shows_the_chosen_answers():
    predictions = {"dev": ({"context": ["Tom plays the " + "piano " * 60, "Ann ran."],
                            "question": ["What does Tom play?", ""],
                            "choices": [["piano", "drums"], ["fast", "slow"]],
                            "label": [0, None]},
                           [1, 0])}
    context = ("Tom plays the " + "piano " * 60)[:300]
    assert MultipleChoiceTask.describe(None, predictions, 3) == _lines(
        "| context | question | gold | predicted |",
        "|---|---|---|---|",
        f"| {context} | What does Tom play? | piano | drums |",
        "| Ann ran. |  |  | fast |")


def test_span_qa_shows_each_gold_answer_once_and_no_answer():
    examples = [{"id": "q1", "question": "Where?", "answers": [{"text": "Paris"},
                                                               {"text": "Paris"},
                                                               {"text": "in Paris"}]},
                {"id": "q2", "question": "Who?", "answers": []}]
    predictions = {"dev": (examples, {"q1": "Paris", "q2": ""}, None)}
    assert SpanQATask.describe(None, predictions, 2) == _lines(
        "| question | gold | predicted |",
        "|---|---|---|",
        "| Where? | Paris / in Paris | Paris |",
        "| Who? | (no answer) | (no answer) |")


def test_text_classification_pairs_and_several_labels():
    pairs = types.SimpleNamespace(multi_label=False, single_sentence=False)
    predictions = {"dev": ({"sentence1": ["good"], "sentence2": ["fine"], "label": ["yes"]},
                           ["no"])}
    assert TextClassificationTask.describe(pairs, predictions, 1) == _lines(
        "| text | text pair | gold | predicted |",
        "|---|---|---|---|",
        "| good | fine | yes | no |")
    several = types.SimpleNamespace(multi_label=True, single_sentence=True)
    predictions = {"test": ({"sentence1": ["a b"], "label": [["x", "y"]]}, [["y"]])}
    assert TextClassificationTask.describe(several, predictions, 1) == _lines(
        "| text | gold | predicted |",
        "|---|---|---|",
        "| a b | x, y | y |")


def test_every_task_serves_through_its_familys_serving_module():
    for name, cls in zoo_tasks.TASKS.items():
        assert cls.signatures.__module__.startswith("zoo_tasks.serving."), name


def test_serving_calls_the_signatures_function_with_the_task(monkeypatch):
    task = object.__new__(ClassificationTask)  # no config or data: serving only
    task.name = "glue/mrpc"
    calls = []
    monkeypatch.setattr(ClassificationTask, "signatures",
                        lambda *args: calls.append(args) or {"serving_default": "f"})
    assert task.serving("model", "run") == {"serving_default": "f"}
    assert task.serving("model") == {"serving_default": "f"}
    assert calls == [(task, "model", "run"), (task, "model", None)]
    monkeypatch.setattr(ClassificationTask, "signatures", None)
    with pytest.raises(ValueError, match="task glue/mrpc: no serving description"):
        task.serving("model")
