"""CoNLL-2003 NER: fine-tuned and feature-based training on the samples, frozen encoders,
the six feature combinations against numpy on `return_hidden_states`, and `zoo score`.

CI sweeps two of the six feature combinations in the feature-based experiment (the reduced
form; the full sweep shows as skipped with its reason); each combination's features are
checked against numpy above either way. ZOO_ALL_STYLES=1 sweeps all six (about 3x the time).
"""

import json
import os

import keras
import numpy as np
import pytest

from tests.harness import shared_run
from tests.test_training import TINY, WIDE
from zoo import config as config_lib
from zoo import models
from zoo.data.samples import LAYOUT
from zoo.models.head_models import FEATURES
from zoo_cli.main import main as cli

ALL_STYLES = os.environ.get("ZOO_ALL_STYLES") == "1"
# The reduced sweep, in the experiment's order: the embeddings (the weakest row here and in
# BERT's Table 7) and the weighted sum of the last four layers (the learnt scalar mix; the best
# row here). Measured on the samples (deterministic, bert_tiny's 128 wide: WIDE): F1 embeddings
# 13.4, second_to_last 27.7, last 0.7, sum_last_four 29.5, concat_last_four 27.3, sum_all 29.5,
# so the reduced sweep's best equals the full sweep's and the >= 20 check below keeps its
# margin. (Before every weight had its own initializer, all the frozen encoder's layers were
# the same random layer with query = key = value, and F1 reached 54; a properly random frozen
# encoder mixes the tokens more and its features carry less.) The 10 epochs below are needed:
# at 6, both rows scored F1 0.0 at train.seed 0 (measured for issue #64).
REDUCED = ("embeddings", "sum_last_four")


def overrides(sample_data, *extra, sizes=TINY):
    data_dir = os.path.dirname(sample_data["root"] / LAYOUT["conll2003"]["train"])
    return sizes["bert"] + [
        f"model.vocabulary={sample_data['wordpiece']}", f"data.dir={data_dir}",
        "data.sequence_length=48", "train.batch_size=32", "train.learning_rate=1e-3",
        "train.deterministic=true", "train.eval_every=100000", *extra]


@pytest.fixture(scope="session")
def fine_tuned_run(sample_data, tmp_path_factory, worker_id):
    """(run_dir, metrics) of the fine-tuned CoNLL run: trained once for this file and
    tests/test_tagging_export.py, which exports it."""
    config = config_lib.resolve("bert/conll2003", overrides(sample_data, "train.epochs=6"))
    return shared_run(tmp_path_factory, worker_id, "conll2003_fine_tuned", config)


def test_fine_tuned_ner_beats_all_o_and_zoo_score_reproduces_evaluate(sample_data,
                                                                      fine_tuned_run, capsys):
    run_dir, metrics = fine_tuned_run
    # The all-O baseline finds no entity: F1 0 (conlleval gives 0 when nothing is predicted).
    # Measured at TINY's 64 wide, train.seed 0 / 1: F1 90.0 / 83.5 (100.0 at 128 wide).
    assert metrics["f1"] >= 80.0, metrics
    assert metrics["words_unpredicted"] == 0
    capsys.readouterr()
    assert cli(["evaluate", "--run-dir", str(run_dir)]) == 0
    evaluated = json.loads(capsys.readouterr().out.splitlines()[0])
    gold = sample_data["root"] / LAYOUT["conll2003"]["valid"]
    predictions = run_dir / "predictions" / "valid.txt"
    gold_lines = gold.read_text().splitlines()
    predicted_lines = predictions.read_text().splitlines()
    assert len(gold_lines) == len(predicted_lines)
    assert all(p == g if not g.split() or g.startswith("-DOCSTART-")
               else p.rsplit(" ", 1)[0] == g for g, p in zip(gold_lines, predicted_lines))
    assert cli(["score", "conll2003", "--gold", str(gold), "--predictions",
                str(predictions)]) == 0
    scored = json.loads(capsys.readouterr().out)
    for name in ("f1", "precision", "recall"):
        assert scored[name] == pytest.approx(evaluated[name], abs=1e-9)
    # A predictions file whose predicted column is missing on a line is refused.
    lines = predicted_lines[:]
    bad = next(i for i, line in enumerate(lines) if len(line.split()) == 5)
    lines[bad] = lines[bad].rsplit(" ", 1)[0]
    predictions.write_text("\n".join(lines) + "\n")
    assert cli(["score", "conll2003", "--gold", str(gold), "--predictions",
                str(predictions)]) != 0
    assert f"valid.txt:{bad + 1}:" in capsys.readouterr().err


def tiny_backbone():
    return models.create("bert_tiny", num_layers=5, hidden_dim=16, num_heads=2,
                         intermediate_dim=32, vocabulary_size=40, return_hidden_states=True)


@pytest.mark.parametrize("features", FEATURES)
def test_feature_combinations_are_frozen_and_match_numpy(features):
    keras.utils.set_random_seed(0)
    backbone = tiny_backbone()
    model = models.BertFeatureTagger(backbone, 9, features, lstm_units=4)
    ids = np.array([[2, 7, 8, 9, 3, 0], [2, 10, 11, 3, 0, 0]])
    x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    hidden = keras.ops.convert_to_numpy(backbone(x)["hidden_states"])  # (b, 6, seq, 16)
    if features in ("sum_last_four", "sum_all"):  # give the scalar mix unequal weights
        mix = model.select.layer_weights
        mix.assign(np.linspace(-1.0, 1.0, mix.shape[0]).astype("float32"))
        model.select.gamma.assign(1.5)
    got = keras.ops.convert_to_numpy(model.select(hidden))
    w = lambda n: np.exp(np.linspace(-1, 1, n)) / np.exp(np.linspace(-1, 1, n)).sum()  # noqa
    expected = {
        "embeddings": hidden[:, 0], "second_to_last": hidden[:, -2], "last": hidden[:, -1],
        "concat_last_four": np.concatenate([hidden[:, i] for i in (2, 3, 4, 5)], axis=-1),
        "sum_last_four": 1.5 * np.tensordot(w(4), hidden[:, 2:], axes=(0, 1)),
        "sum_all": 1.5 * np.tensordot(w(5), hidden[:, 1:], axes=(0, 1)),  # not the embeddings
    }[features]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # A training step moves the BiLSTM and classifier but leaves the encoder as it was.
    before = [v.numpy().copy() for v in backbone.weights]
    head_before = [v.numpy().copy() for v in model.classifier.weights]
    # Eagerly: tracing the BiLSTM's training step costs seconds, running one step on two
    # six-token rows milliseconds; what is checked does not depend on the mode.
    model.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=True,
                  loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    model.train_on_batch(x, {"logits": np.ones_like(ids)})
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, backbone.weights))
    assert not all(np.array_equal(b, v.numpy()) for b, v in zip(head_before,
                                                                model.classifier.weights))
    restored = models.BertFeatureTagger.from_config(model.get_config())
    assert restored.features == features and restored.lstm_units == 4


def sweeps():
    yield pytest.param(REDUCED, id="reduced", marks=[pytest.mark.skip(
        reason="ZOO_ALL_STYLES=1 runs the six-combination sweep, which includes these")]
        if ALL_STYLES else [])
    yield pytest.param(FEATURES, id="all-six", marks=[] if ALL_STYLES else [pytest.mark.skip(
        reason="reduced form: CI sweeps 2 of the 6 combinations (the other four cost ~100 s; "
               "all six are checked against numpy above); ZOO_ALL_STYLES=1 sweeps all six")])


@pytest.mark.parametrize("features", sweeps())
def test_feature_based_experiment_writes_the_table(sample_data, tmp_path, capsys, features):
    """BERT Table 7 on the samples: `zoo train` of the feature-based experiment runs its sweep.

    The encoder is a frozen, randomly initialised 4-layer bert_tiny (the last-four
    combinations need four layers); only the BiLSTM and the classifier learn. The reduced form
    sweeps `features`, a subset of the experiment's six, in the experiment's order.
    """
    # The experiment itself sweeps all six, in Table 7's order (the reduced form narrows it).
    assert config_lib.resolve("bert/conll2003_feature_based", []).sweep == {
        "model.features": list(FEATURES)}
    run_dir = tmp_path / "table7"
    args = ["train", "--experiment", "bert/conll2003_feature_based", "--run-dir", str(run_dir)]
    sweep = [] if features == FEATURES else [f"sweep.model.features=[{', '.join(features)}]"]
    for override in overrides(sample_data, "model.backbone.num_layers=4", "model.lstm_units=16",
                              "train.epochs=10", "train.learning_rate=1e-2", *sweep,
                              sizes=WIDE):  # the width REDUCED's numbers were measured at
        args += ["--set", override]
    assert cli(args) == 0
    printed = capsys.readouterr().out
    names = [f"model.features={name}" for name in features]
    table = (run_dir / "table.md").read_text().splitlines()
    assert [row.split(" | ")[0].lstrip("| ") for row in table[2:]] == names
    summary = json.loads((run_dir / "sweep.json").read_text())
    for name, row in zip(names, table[2:]):
        history = json.loads((run_dir / name / "metrics.json").read_text())
        best = max(entry["f1"] for entry in history)
        assert summary["runs"][name]["f1"] == best and f"| {best:.4f} |" in row
        config = json.loads(json.dumps(__import__("yaml").safe_load(
            (run_dir / name / "config.yaml").read_text())))
        assert config["model"]["features"] == name.split("=")[1]
    assert table[0] in printed
    # The all-O baseline finds no entity (F1 0); the best combination is far above it.
    print({name: round(summary["runs"][name]["f1"], 1) for name in names})
    assert max(summary["runs"][name]["f1"] for name in names) >= 20.0, summary


def test_train_stream_resumes_exactly_and_cut_words_are_counted(sample_data):
    import zoo_tasks
    from zoo.data.tagging import _alignment_report

    config = config_lib.resolve("bert/conll2003", overrides(sample_data, "data.sequence_length=8",
                                                            "train.batch_size=4"))
    task = zoo_tasks.create("conll2003", config)
    stream = task.dataset("train", repeat=True).take(7)
    resumed = task.dataset("train", repeat=True, skip_batches=5).take(2)
    first = [x["token_ids"].numpy() for x, _, _ in stream]
    assert all(np.array_equal(a, x["token_ids"].numpy())
               for a, (x, _, _) in zip(first[5:], resumed))
    model = task.build_model()
    predicted, unpredicted = task.predict(model, "dev")
    columns = task.examples("dev")
    expected = _alignment_report(columns["words"], task.tokenizer, 8).words_unlabelled
    assert unpredicted == expected > 0
    assert [len(p) for p in predicted] == [len(w) for w in columns["words"]]


def test_token_classifier_config_round_trips():
    backbone = models.create("bert_tiny", num_layers=1, hidden_dim=16, num_heads=2,
                             intermediate_dim=32, vocabulary_size=40)
    model = models.BertTokenClassifier(backbone, 9, dropout=0.2)
    restored = models.BertTokenClassifier.from_config(model.get_config())
    assert (restored.num_tags, restored.dropout) == (9, 0.2)
    ids = np.array([[2, 7, 3, 0]])
    x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids > 0}
    assert tuple(restored(x)["logits"].shape) == (1, 4, 9)
