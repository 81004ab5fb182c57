"""Dynamic padding (`data.pad_to_multiple_of`) and sort-by-length evaluation
(`data.sort_by_length`) in span QA, multiple choice and NER (issue #10, item 4).

The reference is the same task with full padding (every batch `data.sequence_length` long),
the path checked against transformers and the official scorers elsewhere: with the same
weights, cut batches must give the same predictions, in file order, and no labelled token may
be lost. SST-2 stands for the classification tasks (also in tests/test_training.py); the exports are
checked in tests/test_export_*.py (their raw-input signatures always pad dynamically).
"""

import os

import keras
import numpy as np
import pytest

from tests.test_training import TINY
from zoo import config as config_lib
from zoo.data.samples import LAYOUT
from zoo_tasks import base, data_order

MULTIPLE = 8
CUT = [f"data.pad_to_multiple_of={MULTIPLE}", "data.sort_by_length=true"]
# The papers' fixed-length batches in file order (the defaults are dynamic and sorted, #53).
FULL = ["data.pad_to_multiple_of=0", "data.sort_by_length=false"]


def folder(sample_data, task, split="train"):
    return os.path.dirname(sample_data["root"] / LAYOUT[task][split])


# Per case: experiment, task, overrides (full padding), the dev split.
CASES = {
    "squad_v2": ("bert/squad_v2", "squad_v2", lambda d: TINY["bert"] + [
        f"model.vocabulary={d['wordpiece']}", f"data.dir={folder(d, 'squad_v2')}",
        "data.sequence_length=96", "data.doc_stride=48", "data.max_query_length=24",
        # Every position a candidate: -inf at the cut positions then changes no answer.
        "data.n_best_size=96", "train.batch_size=16"]),
    "swag_gpt1": ("gpt1/swag", "swag", lambda d: TINY["gpt1"] + [
        f"model.vocabulary={d['bpe']}", f"data.dir={folder(d, 'swag')}",
        "data.sequence_length=64", "train.batch_size=16"]),
    "sst2": ("bert/glue_sst2", "glue/sst2", lambda d: TINY["bert"] + [
        f"model.vocabulary={d['wordpiece']}", f"data.dir={folder(d, 'glue/sst2')}",
        "data.sequence_length=64", "train.batch_size=16"]),
    "conll2003": ("bert/conll2003", "conll2003", lambda d: TINY["bert"] + [
        f"model.vocabulary={d['wordpiece']}", f"data.dir={folder(d, 'conll2003')}",
        "data.sequence_length=64", "train.batch_size=16"]),
}


def pair(sample_data, case):
    import zoo_tasks

    experiment, name, overrides = CASES[case]
    base = overrides(sample_data)
    full = zoo_tasks.create(name, config_lib.resolve(experiment, base + FULL))
    cut = zoo_tasks.create(name, config_lib.resolve(experiment, base + CUT))
    return full, cut


@pytest.mark.parametrize("case", list(CASES))
def test_cut_batches_keep_every_label_and_the_predictions(sample_data, case):
    full, cut = pair(sample_data, case)
    length = full.config.data.sequence_length
    split = "dev"
    # Batches: widths are multiples of the bucket, never shorter than a row's real tokens,
    # and labels / weights are cut with the inputs.
    widths, weights = set(), []
    for batch in cut.dataset(split):
        x, y = batch[0], batch[1]
        width = int(x["token_ids"].shape[-1])
        widths.add(width)
        assert width % MULTIPLE == 0 or width == length, width
        assert all(v.shape[-1] == width for v in x.values()), {k: v.shape for k, v in x.items()}
        mask = np.asarray(x["padding_mask"])
        assert mask.sum(-1).max() <= width and mask[..., -1].any() or width % MULTIPLE == 0
        if case == "conll2003":
            assert y["logits"].shape == x["token_ids"].shape
            weights.append(float(np.sum(batch[2]["logits"])))
        if case == "squad_v2":
            assert int(np.max(y["start_positions"])) < width
            assert int(np.max(y["end_positions"])) < width
        if "lm" in y:
            assert y["lm"].shape == x["token_ids"].shape
    assert len(widths) >= 2 and min(widths) < length, widths
    assert len(widths) <= length // MULTIPLE  # the traced shapes are bounded by the buckets
    lengths, full_weights = [], []
    for batch in full.dataset(split):
        mask = np.asarray(batch[0]["padding_mask"]) > 0
        lengths.append(mask.sum(-1).reshape(len(mask), -1).max(-1))
        if case == "conll2003":
            full_weights.append(float(np.sum(batch[2]["logits"])))
    assert sum(weights) == sum(full_weights)  # every word's first token is still labelled
    # The evaluation order: a permutation, by ascending real length.
    order = data_order.length_order(cut, split)
    assert data_order.length_order(full, split) is None
    assert sorted(order.tolist()) == list(range(len(order)))
    lengths = np.concatenate(lengths)
    assert (np.diff(lengths[order]) >= 0).all() and (np.diff(lengths) < 0).any()
    # The same weights give the same predictions, in file order. Seeded: the exact comparison
    # of predicted classes is then of one draw of weights, not one per scheduling of the files.
    keras.utils.set_random_seed(0)
    model = full.build_model()
    predictor = model if case in ("squad_v2", "conll2003") else base.inference_model(model)

    def traces():
        return predictor.predict_function.experimental_get_tracing_count()

    expected = full.predict(model, split)
    traced_full = traces()
    actual = cut.predict(model, split)
    # Predict traced once per padding form, for the dataset's spec (zoo_tasks.base.traced_for):
    # not again for each new batch shape (Keras alone traces the first shape, then relaxes).
    assert (traced_full, traces()) == (1, 2)
    if case == "squad_v2":
        assert expected.keys() == actual.keys()
        for key, (text, s_best, s_null) in expected.items():
            assert actual[key][0] == text, key
            assert actual[key][1:] == pytest.approx((s_best, s_null), abs=1e-4), key
    else:
        assert actual == expected
