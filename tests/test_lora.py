"""LoRA fine-tuning (`train.lora_rank`, zoo.lora): what trains, merging, resume, exports, and
PEFT's LoRA on transformers' BERT as the reference.

Expected values come from outside zoo: PEFT's own trainable count and training steps,
transformers' logits on the `--to hf` folder and on PEFT's adapters, the LoRA paper's 2 r d
per adapted matrix, and the weights of an uninterrupted run.
"""

import json
import os
import warnings

import keras
import numpy as np
import pytest

import zoo
from tests.harness import run_in_backend
from zoo import config as config_lib
from zoo import lora


def _reference():
    """torch, transformers and PEFT, imported where used: the JAX process of
    `test_lora_trains_alike_on_jax` imports this module and needs none of them."""
    return (pytest.importorskip("torch"), pytest.importorskip("transformers"),
            pytest.importorskip("peft"))

RANK, ALPHA = 4, 8.0


def _train_config(*overrides):
    return config_lib.resolve({"task": "glue/mrpc"}, list(overrides)).train


def _tiny_classifier(num_layers=1, hidden=32, vocabulary=60, classes=3):
    # Seeded: its weights and the LoRA A that enable_lora draws after it set the sizes of the
    # steps the tests bound (an unseeded start made a bound of test_lora flaky once).
    keras.utils.set_random_seed(0)
    backbone = zoo.models.create("bert_tiny", num_layers=num_layers, hidden_dim=hidden,
                                 num_heads=2, vocabulary_size=vocabulary, dropout=0.0,
                                 attention_dropout=0.0, max_sequence_length=16)
    return zoo.models.BertClassifier(backbone, classes, dropout=0.0)


def _batch(seed, batch=4, seq=8, vocabulary=60, classes=3):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocabulary, size=(batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[0, seq - 3:] = 0
    ids = ids * mask
    return ({"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask},
            rng.integers(0, classes, size=(batch,)).astype("int32"))


def _far_from_init(model, seed=5):
    """Weights far from BERT's N(0, 0.02) start, so that attention is not uniform and the
    query's adapter gets a gradient worth comparing."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        if "seed_generator" not in variable.path:
            variable.assign(variable + rng.normal(0, 0.3, variable.shape).astype("float32"))


def _logits(model, x):
    out = model(x, training=False)
    return keras.ops.convert_to_numpy(out["logits"] if isinstance(out, dict) else out)


def _torch_logits(model, x):
    torch, transformers, peft = _reference()
    with torch.no_grad():
        return model(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long)
                     ).logits.numpy()


# === Config ===


@pytest.mark.parametrize("overrides, message", [
    (["train.lora_targets=[query, attention]"], "train.lora_targets: unknown layer 'attention'"),
    (["train.lora_alpha=16"], "train.lora_alpha 16.0: only with train.lora_rank"),
    (["train.lora_rank=-1"], "train.lora_rank: must be >= 0"),
    (["train.lora_rank=4", "train.lora_targets=[]"], "train.lora_targets: empty"),
])
def test_bad_lora_settings_are_one_line_naming_the_key(overrides, message):
    with pytest.raises(config_lib.ConfigError, match=message) as error:
        _train_config(*overrides)
    assert "\n" not in str(error.value)


def test_pretraining_with_lora_is_refused():
    with pytest.raises(config_lib.ConfigError, match="train.lora_rank: LoRA is for fine-tuning"):
        config_lib.resolve({"task": "pretrain/masked_lm"}, ["train.lora_rank=8"])


# === What trains ===


def _hf_base(model, folder):
    """transformers' BertForSequenceClassification with `model`'s weights (LoRA not yet on)."""
    torch, transformers, peft = _reference()
    zoo.convert.to_huggingface(model, str(folder))
    hf = transformers.BertForSequenceClassification.from_pretrained(str(folder))
    return hf.eval()


@pytest.mark.parametrize("targets", [None, ["query", "key", "value", "output",
                                            "ffn_intermediate", "ffn_output"]])
def test_the_trainable_count_is_peft_s_and_the_paper_s(tmp_path, targets):
    torch, transformers, peft = _reference()
    model = _tiny_classifier(num_layers=2)
    hf = _hf_base(model, tmp_path / "base")
    sets = [f"train.lora_rank={RANK}"]
    if targets:
        sets.append(f"train.lora_targets=[{', '.join(targets)}]")
    lora.apply(model, _train_config(*sets))
    hf_names = {"query": "attention.self.query", "key": "attention.self.key",
                "value": "attention.self.value", "output": "attention.output.dense",
                "ffn_intermediate": "intermediate.dense", "ffn_output": "output.dense"}
    # "output.dense" alone would also match attention.output.dense: full module names.
    modules = [f"bert.encoder.layer.{i}.{hf_names[t]}" for i in range(2)
               for t in (targets or ["query", "value"])]
    reference = peft.get_peft_model(hf, peft.LoraConfig(
        r=RANK, lora_alpha=RANK, target_modules=modules, lora_dropout=0.0,
        modules_to_save=["classifier", "LayerNorm"], task_type="SEQ_CLS"))
    trainable, _ = reference.get_nb_trainable_parameters()
    assert lora.trainable_count(model) == trainable
    # The paper's count (section 4.1): 2 r d a square matrix adapted, d = 32 here (r (in + out)
    # for the FFN's 32 x 128), in 2 blocks; then the LayerNorms (the embeddings' and two a
    # block) of 2 x 32 each, and the head, 32 x 3 + 3.
    shapes = {"ffn_intermediate": (32, 128), "ffn_output": (128, 32)}
    adapters = sum(RANK * sum(shapes.get(t, (32, 32))) for t in targets or ["query", "value"])
    assert lora.trainable_count(model) == 2 * adapters + (1 + 2 * 2) * 2 * 32 + 32 * 3 + 3


def test_merged_outputs_equal_the_adapted_model_s_and_hold_no_lora_variables():
    model = _tiny_classifier()
    adapted = lora.apply(model, _train_config(f"train.lora_rank={RANK}",
                                              f"train.lora_alpha={ALPHA}"))
    rng = np.random.default_rng(0)
    for layer in adapted:  # B starts at zero: give the adapters something to add
        layer.lora_kernel_b.assign(rng.normal(0, 0.2, layer.lora_kernel_b.shape))
    x, _ = _batch(1)
    plain = lora.merged(model)
    assert not lora.lora_layers(plain)
    assert not [v.path for v in plain.variables if "lora" in v.path]
    delta = np.abs(_logits(model, x) - _logits(lora.merged(model), x)).max()
    assert delta < 1e-5
    kernel = keras.ops.convert_to_numpy(adapted[0]._kernel)
    a, b = (keras.ops.convert_to_numpy(v)
            for v in (adapted[0].lora_kernel_a, adapted[0].lora_kernel_b))
    query = plain.backbone.blocks[0].attention.query_dense
    merged_kernel = keras.ops.convert_to_numpy(query.kernel)
    np.testing.assert_allclose(merged_kernel, kernel + ALPHA / RANK * a @ b, atol=1e-6)


# === PEFT as the reference ===


def test_training_steps_equal_peft_s_lora_on_transformers(tmp_path):
    """From the same start (zoo's A copied into PEFT's lora_A, B zeros in both), the same SGD
    steps on the same batches give the same losses and the same merged weights."""
    torch, transformers, peft = _reference()
    steps, rate = 6, 0.05
    model = _tiny_classifier()
    _far_from_init(model)
    hf = _hf_base(model, tmp_path / "base")
    adapted = lora.apply(model, _train_config(f"train.lora_rank={RANK}",
                                              f"train.lora_alpha={ALPHA}"))
    reference = peft.get_peft_model(hf, peft.LoraConfig(
        r=RANK, lora_alpha=ALPHA, target_modules=["query", "value"], lora_dropout=0.0,
        modules_to_save=["classifier", "LayerNorm"], task_type="SEQ_CLS"))
    names = {"query": "query", "value": "value"}
    modules = dict(reference.named_modules())
    for layer in adapted:
        block = int(layer.path.split("transformer_layer_")[1].split("/")[0])
        module = modules[f"base_model.model.bert.encoder.layer.{block}.attention.self."
                         f"{names[layer.name]}"]
        with torch.no_grad():
            module.lora_A["default"].weight.copy_(torch.tensor(
                keras.ops.convert_to_numpy(layer.lora_kernel_a).T))
            assert not module.lora_B["default"].weight.any()
    model.compile(optimizer=keras.optimizers.SGD(rate),
                  loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    optimizer = torch.optim.SGD([p for p in reference.parameters() if p.requires_grad], lr=rate)
    # Inference before the steps merges the kernels once (zoo.lora.LoraDense's cache) ...
    probe, _ = _batch(50)
    before = model.predict(probe, verbose=0)["logits"]
    lora.merged(model, reuse=True)  # a run's saves: built here, its weights written again below
    np.testing.assert_allclose(before, _torch_logits(reference.eval(), probe), atol=1e-5)
    reference.train()
    ours, theirs = [], []
    for step in range(steps):
        x, y = _batch(100 + step)
        ours.append(float(model.train_on_batch(x, {"logits": y})))
        out = reference(input_ids=torch.tensor(x["token_ids"], dtype=torch.long),
                        token_type_ids=torch.tensor(x["segment_ids"], dtype=torch.long),
                        attention_mask=torch.tensor(x["padding_mask"], dtype=torch.long),
                        labels=torch.tensor(y, dtype=torch.long))
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        theirs.append(float(out.loss.detach()))
    # Measured on this machine (x86 CPU, float32 on both sides): the losses agree within
    # 5e-7 and the merged weights within 2e-7; 1e-5 leaves room for other reduction orders.
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5)
    assert ours[-1] < ours[0]  # it trains
    # ... and the same compiled predict function merges again after them: PEFT's outputs.
    after = model.predict(probe, verbose=0)["logits"]
    assert np.abs(after - before).max() > 1e-3
    np.testing.assert_allclose(after, _torch_logits(reference.eval(), probe), atol=1e-5)
    for layer in adapted:  # ... through both adapters: B left zero
        assert np.abs(keras.ops.convert_to_numpy(layer.lora_kernel_b)).max() > 1e-2, layer.path
    merged_hf = reference.merge_and_unload().state_dict()
    plain = lora.merged(model, reuse=True)
    block = plain.backbone.blocks[0].attention
    for name, dense in (("query", block.query_dense), ("value", block.value_dense)):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(dense.kernel).T,
            merged_hf[f"bert.encoder.layer.0.attention.self.{name}.weight"].numpy(), atol=1e-5)
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(plain.backbone.embeddings_norm.gamma),
        merged_hf["bert.embeddings.LayerNorm.weight"].numpy(), atol=1e-5)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(plain.classifier.dense.kernel).T,
                               merged_hf["classifier.weight"].numpy(), atol=1e-5)


def test_adapters_alone_load_into_peft_with_the_same_outputs(tmp_path):
    torch, transformers, peft = _reference()
    model = _tiny_classifier()
    hf_base = tmp_path / "base"
    zoo.convert.to_huggingface(model, str(hf_base))
    adapted = lora.apply(model, _train_config(f"train.lora_rank={RANK}",
                                              f"train.lora_alpha={ALPHA}"))
    rng = np.random.default_rng(1)
    for variable in model.trainable_variables:  # as if trained: every trainable weight moves
        variable.assign(variable + rng.normal(0, 0.1, variable.shape))
    assert adapted
    # lazy: loads TensorFlow, which test_lora_trains_alike_on_jax's process does without
    from zoo.convert.hf_export import to_peft

    to_peft(model, str(tmp_path / "adapters"))
    config = json.loads((tmp_path / "adapters" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["task_type"]) == (RANK, ALPHA, "SEQ_CLS")
    base = transformers.BertForSequenceClassification.from_pretrained(str(hf_base))
    reference = peft.PeftModel.from_pretrained(base, str(tmp_path / "adapters")).eval()
    x, _ = _batch(7)
    np.testing.assert_allclose(_torch_logits(reference, x), _logits(model, x), atol=1e-5)


def test_inference_follows_a_kernel_loaded_under_unchanged_adapters(tmp_path):
    """The cached merged kernel (zoo.lora.LoraDense) is keyed on A and B; a new W under the
    same A and B comes through `load_weights` and `restore_state`, which drop it."""
    torch, transformers, peft = _reference()
    model = _tiny_classifier()
    zoo.convert.to_huggingface(model, str(tmp_path / "base"))
    adapted = lora.apply(model, _train_config(f"train.lora_rank={RANK}",
                                              f"train.lora_alpha={ALPHA}"))
    rng = np.random.default_rng(2)
    for variable in model.trainable_variables:  # as if trained
        variable.assign(variable + rng.normal(0, 0.1, variable.shape))
    from zoo.convert.hf_export import to_peft  # lazy: TensorFlow

    to_peft(model, str(tmp_path / "adapters"))
    model.save_weights(str(tmp_path / "trained.weights.h5"))  # W + alpha / r A B; A, B dropped
    saved = lora.state(model)
    base = transformers.BertForSequenceClassification.from_pretrained(str(tmp_path / "base"))
    reference = peft.PeftModel.from_pretrained(base, str(tmp_path / "adapters")).eval()
    x, _ = _batch(9)
    expected = _torch_logits(reference, x)
    np.testing.assert_allclose(model.predict(x, verbose=0)["logits"], expected, atol=1e-5)
    # Another W under the same A and B (restore_state), inferred once: the outputs move.
    lora.restore_state(model, {path: value + rng.normal(0, 0.3, value.shape) if "lora" not in
                               path else value for path, value in saved.items()})
    moved = model.predict(x, verbose=0)["logits"]
    assert np.abs(moved - expected).max() > 1e-3  # a stale kernel: within 1e-6
    lora.restore_state(model, saved)
    np.testing.assert_allclose(model.predict(x, verbose=0)["logits"], expected, atol=1e-5)
    # A and B at zero, inferred once; then load_weights writes the merged W and zeros again:
    # the adapters are unchanged, the kernel is new, and the outputs are PEFT's again.
    for layer in adapted:
        layer.lora_kernel_a.assign(np.zeros(layer.lora_kernel_a.shape))
        layer.lora_kernel_b.assign(np.zeros(layer.lora_kernel_b.shape))
    assert np.abs(model.predict(x, verbose=0)["logits"] - expected).max() > 1e-3
    model.load_weights(str(tmp_path / "trained.weights.h5"))
    np.testing.assert_allclose(model.predict(x, verbose=0)["logits"], expected, atol=1e-5)


def lora_steps(folder, steps=3):
    """`steps` SGD steps of the LoRA model of `folder` (model.keras, its adapters' A in
    a.npz, in order) under the current Keras backend: the losses and the merged query kernel."""
    model = keras.saving.load_model(os.path.join(folder, "model.keras"))
    adapted = lora.apply(model, _train_config(f"train.lora_rank={RANK}",
                                              f"train.lora_alpha={ALPHA}"))
    with np.load(os.path.join(folder, "a.npz")) as saved:
        for i, layer in enumerate(adapted):
            layer.lora_kernel_a.assign(saved[str(i)])
    model.compile(optimizer=keras.optimizers.SGD(0.05),
                  loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    losses = [float(model.train_on_batch(*_as_fit(_batch(100 + step))))
              for step in range(int(steps))]
    query = lora.merged(model).backbone.blocks[0].attention.query_dense.kernel
    return {"losses": np.array(losses), "query": keras.ops.convert_to_numpy(query)}


def _as_fit(batch):
    x, y = batch
    return x, {"logits": y}


def test_lora_trains_alike_on_jax(tmp_path):
    model = _tiny_classifier()
    _far_from_init(model)
    model.save(str(tmp_path / "model.keras"))
    rng = np.random.default_rng(3)
    np.savez(tmp_path / "a.npz", **{str(i): rng.uniform(-0.3, 0.3, (32, RANK)).astype("float32")
                                    for i in range(2)})
    ours = lora_steps(str(tmp_path))
    theirs = run_in_backend("jax", "tests.test_lora:lora_steps", str(tmp_path), timeout=600)
    assert np.abs(ours["query"] - keras.ops.convert_to_numpy(
        model.backbone.blocks[0].attention.query_dense.kernel)).max() > 1e-4  # it moved
    np.testing.assert_allclose(theirs["losses"], ours["losses"], atol=1e-5)
    np.testing.assert_allclose(theirs["query"], ours["query"], atol=1e-5)


# === A run: resume, checkpoints, exports ===


def _run_sets(sample_data, base):
    return ["model.preset=bert_tiny", f"model.init_checkpoint={base}",
            f"model.vocabulary={sample_data['wordpiece']}",
            f"data.dir={sample_data['root'] / 'glue' / 'MRPC'}", "data.sequence_length=32",
            "train.batch_size=16", "train.learning_rate=1e-2", "train.steps=4",
            "train.eval_every=2", f"train.lora_rank={RANK}", "train.lora_targets=[query, value]"]


class _Killed(Exception):
    pass


@pytest.fixture(scope="module")
def lora_runs(sample_data, tmp_path_factory):
    """A LoRA run of 4 steps, and the same run stopped at step 3 (after the backup of step 2)
    and resumed."""
    torch, transformers, peft = _reference()
    # lazy: load TensorFlow, which test_lora_trains_alike_on_jax's process does without
    from zoo.training import callbacks as callbacks_lib
    from zoo_tasks import runs

    root = tmp_path_factory.mktemp("lora")
    tokenizer = transformers.BertTokenizerFast(
        os.path.join(sample_data["wordpiece"], "vocab.txt"), do_lower_case=True)
    base = root / "base"
    torch.manual_seed(0)  # the starting point, and so the steps' sizes, are the same each run
    transformers.BertModel(transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64)).save_pretrained(str(base))
    config = config_lib.resolve("bert/glue_mrpc", _run_sets(sample_data, base))
    # Each run as in a fresh process (`zoo train`): Keras' automatic names (the dropout seed
    # generators' in the backup) start again.
    keras.utils.clear_session()
    runs.train(config, str(root / "whole"))
    stop_at = callbacks_lib.StopAt.on_train_batch_end

    def killed_at_step_3(self, batch, logs=None):
        if int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) == 3:
            raise _Killed()
        return stop_at(self, batch, logs)

    callbacks_lib.StopAt.on_train_batch_end = killed_at_step_3
    try:
        keras.utils.clear_session()
        with pytest.raises(_Killed):
            runs.train(config, str(root / "resumed"))
    finally:
        callbacks_lib.StopAt.on_train_batch_end = stop_at
    assert os.listdir(root / "resumed" / "backup") == ["step_2"]
    assert "lora.npz" in os.listdir(root / "resumed" / "backup" / "step_2")
    keras.utils.clear_session()
    runs.train(config, str(root / "resumed"))
    return root


def _weights(path):
    model = keras.saving.load_model(str(path))
    return {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(lora_runs):
    torch, transformers, peft = _reference()
    whole, resumed = (_weights(lora_runs / name / "final.keras")
                      for name in ("whole", "resumed"))
    assert not [name for name in whole if "lora" in name]  # the merged, plain model
    assert whole.keys() == resumed.keys()
    for name in whole:
        np.testing.assert_array_equal(whole[name], resumed[name], err_msg=name)
    # The adapters trained: the merged query kernels moved from the starting point's. Untrained,
    # they would equal it to the bit (B starts at zero). The 4 warmed-up steps move them by 2e-4
    # from this seeded start (7e-5 once, unseeded, under a bound of 1e-4): 1e-6 is far from both.
    start = transformers.BertModel.from_pretrained(str(lora_runs / "base"))
    query = start.encoder.layer[0].attention.self.query.weight.detach().numpy().T
    final = [v for k, v in whole.items() if "transformer_layer_0/attention/query/kernel" in k]
    assert np.abs(final[0] - query).max() > 1e-6


def test_the_run_s_checkpoint_gives_its_metrics_and_exports_equal_answers(lora_runs, tmp_path):
    torch, transformers, peft = _reference()
    import tensorflow as tf

    # lazy: loads TensorFlow, which test_lora_trains_alike_on_jax's process does without
    from zoo_tasks import runs

    run_dir = str(lora_runs / "whole")
    history = json.loads((lora_runs / "whole" / "metrics.json").read_text())
    # The live LoRA model was evaluated at step 4; final.keras (merged) gives the same.
    final = runs.evaluate_run(run_dir, checkpoint="final")
    assert final["accuracy"] == pytest.approx(history[-1]["accuracy"], abs=1e-9)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, task, model = runs.load_task(run_dir, "best")
    assert not [w for w in caught if "Skipping variable loading" in str(w.message)]
    x = next(iter(task.dataset("dev")))[0]
    x = {k: v.numpy() for k, v in x.items()}
    expected = _logits(model, x)
    # zoo export: the SavedModel's probabilities.
    path = runs.export_run(run_dir, str(tmp_path / "export"), progress=lambda line: None)
    loaded = tf.saved_model.load(path)
    assert not [v.name for v in loaded.variables if "lora" in v.name]
    served = loaded.signatures["serving_ids"](**{k: tf.constant(v) for k, v in x.items()})
    np.testing.assert_allclose(served["probabilities"].numpy(),
                               tf.nn.softmax(expected).numpy(), atol=1e-5)
    # zoo convert --to hf: transformers' logits.
    runs.convert_run(run_dir, str(tmp_path / "hf"))
    hf = transformers.BertForSequenceClassification.from_pretrained(str(tmp_path / "hf")).eval()
    np.testing.assert_allclose(_torch_logits(hf, x), expected, atol=1e-4)
    # The adapters alone (run_dir/adapters/, those of best.keras) on the starting checkpoint.
    base = transformers.BertForSequenceClassification.from_pretrained(str(lora_runs / "base"),
                                                                      num_labels=2)
    reference = peft.PeftModel.from_pretrained(base, os.path.join(run_dir, "adapters")).eval()
    np.testing.assert_allclose(_torch_logits(reference, x), expected, atol=1e-4)
