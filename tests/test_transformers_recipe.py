"""zoo's training steps against transformers' on the same recipe (issue #42).

The forward pass is checked against transformers elsewhere (test_convert); this checks the
step: zoo's loss (masked LM averaged over real predictions, + NSP), AdamW with its decay
exclusions, the warmup + linear decay schedule and global-norm clipping, as `task.compile`
builds them, against `BertForPreTraining` / `BertForSequenceClassification` trained by
torch's AdamW, transformers' schedule and torch's clipping (zoo_benchmarks.transformers_recipe,
the measurement lab's) from the same weights (`zoo.convert.to_huggingface`) on the same
batches (zoo's own, masked by its pipeline). Tiny BERT, dropout 0, float32, 30 steps: the
losses of every step agree within 1e-4 relative, and so do the weights after them (the
tolerance measured below).

The recipe is made to show its parts: a learning rate of 1e-3 (steps are clipped,
checked), and weight decay 0.1 so that decaying a LayerNorm gain (1.0) or not differs by
~2e-3 after 30 steps, 100 times the tolerance of the weights.
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import keras  # noqa: E402

import zoo_tasks  # noqa: E402
from zoo import config as config_lib  # noqa: E402
from zoo import convert  # noqa: E402
from zoo_benchmarks import transformers_recipe as recipe  # noqa: E402

STEPS, WARMUP = 30, 5
RECIPE = ["train.steps=30", "train.warmup_steps=5", "train.learning_rate=1e-3",
          "train.weight_decay=0.1", "train.clip_norm=1.0", "train.batch_size=8",
          "model.preset=bert_tiny", "model.backbone={dropout: 0.0, attention_dropout: 0.0}",
          "model.dropout=0.0"]
# Measured on the runs below (max |zoo - transformers| over all weights after 30 steps):
# pretraining 7.1e-7, fine-tuning 3.6e-7, where the largest update of a weight is 1.5e-2 and
# 1.1e-2. Before zoo.optimization.merge_duplicate_rows (Keras's clipping norm over repeated
# embedding rows) the pretraining losses were 1.7e-4 apart by step 8.
WEIGHT_TOLERANCE = 1e-5


def _numpy(batches):
    return [keras.tree.map_structure(lambda t: t.numpy(), batch) for batch in batches]


def _zoo_steps(model, batches):
    return [float(model.train_on_batch(*batch, return_dict=True)["loss"]) for batch in batches]


def _hf_model(cls, folder):
    hf, info = cls.from_pretrained(str(folder), output_loading_info=True,
                                   hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    assert not any(info.values()), info  # nothing missing, unexpected or mismatched
    return hf


def _weights(model, folder):
    """zoo's weights under transformers' names (`zoo.convert.to_huggingface`), numpy."""
    from safetensors.numpy import load_file

    convert.to_huggingface(model, str(folder))
    return load_file(os.path.join(folder, "model.safetensors"))


def _compare(model, start, hf, folder, zoo_losses, hf_losses, hf_norms):
    """The losses of every step within 1e-4, the weights after within WEIGHT_TOLERANCE;
    the clipping exercised, and the weights moved by far more than the tolerance."""
    np.testing.assert_allclose(zoo_losses, hf_losses, rtol=1e-4)
    assert max(hf_norms) > 1.0, hf_norms
    ours = _weights(model, folder)
    theirs = {name: p.detach().numpy() for name, p in hf.state_dict().items()}
    assert set(ours) <= set(theirs), set(ours) - set(theirs)
    distance = max(float(np.max(np.abs(ours[k] - theirs[k]))) for k in ours)
    moved = max(float(np.max(np.abs(ours[k] - start[k]))) for k in ours)
    print(f"max |zoo - transformers| {distance:.3g}, max update {moved:.3g}")
    assert distance < WEIGHT_TOLERANCE < moved / 100, (distance, moved)


@pytest.fixture(scope="module")
def shards(sample_data, tmp_path_factory):
    from zoo.data.pretraining import write_pretraining_data

    out = tmp_path_factory.mktemp("recipe_shards")
    write_pretraining_data([str(sample_data["root"] / "corpus" / "corpus.txt")],
                           sample_data["wordpiece"], str(out), max_sequence_lengths=(32,),
                           shards=1, dupe_factor=1)
    return out


def _both(experiment, task_name, overrides, hf_class, tmp_path):
    """The task, zoo's compiled model, its starting weights (transformers' names), the same
    weights in `hf_class`, and STEPS training batches of zoo's pipeline as numpy."""
    config = config_lib.resolve(experiment, [*RECIPE, *overrides])
    keras.utils.set_random_seed(0)
    task = zoo_tasks.create(task_name, config)
    model = task.build_model()
    task.compile(model, total_steps=STEPS, warmup_steps=WARMUP)
    start = _weights(model, tmp_path / "start")
    hf = _hf_model(hf_class, tmp_path / "start")
    return task, model, start, hf, _numpy(task.dataset("train", repeat=True).take(STEPS))


def _same_as_the_models_own_loss(hf, batch):
    """The recipe's pretraining loss (the labelled positions alone through `hf.cls`) is
    `BertForPreTraining.forward`'s loss (every position projected), and so are its
    gradients, to float32 rounding."""
    tensors = {key: torch.from_numpy(value) for key, value in batch.items()}
    grads = []
    for loss_of in (lambda: hf(**tensors).loss, lambda: recipe.training_loss(hf, tensors)):
        hf.zero_grad()
        loss = loss_of()
        loss.backward()
        grads.append((float(loss.detach()), [p.grad.clone() for p in hf.parameters()]))
    hf.zero_grad()
    (full, full_grads), (gathered, gathered_grads) = grads
    assert gathered == pytest.approx(full, rel=1e-6)
    for a, b in zip(full_grads, gathered_grads):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-7)


def test_pretraining_steps_equal_transformers_bert_for_pretraining(sample_data, shards,
                                                                   tmp_path):
    task, model, start, hf, batches = _both(
        "bert/pretrain", "pretrain/masked_lm",
        [f"model.vocabulary={sample_data['wordpiece']}", f"data.dir={shards}", "data.phases=[]",
         "data.sequence_length=32"], transformers.BertForPreTraining, tmp_path)
    assert len(batches) == STEPS and min(b[2]["mlm"].sum() for b in batches) > 0
    _same_as_the_models_own_loss(hf, recipe.pretraining_batch(*batches[0]))

    hf_losses, hf_norms = recipe.train_steps(
        hf, [recipe.pretraining_batch(*batch) for batch in batches], task.config.train, STEPS,
        WARMUP)
    zoo_losses = _zoo_steps(model, batches)
    _compare(model, start, hf, tmp_path / "end", zoo_losses, hf_losses, hf_norms)
    assert zoo_losses[-1] < zoo_losses[0] - 0.5, zoo_losses  # the masked LM learns


def test_fine_tuning_steps_equal_transformers_bert_for_sequence_classification(sample_data,
                                                                               tmp_path):
    task, model, start, hf, batches = _both(
        "bert/glue_sst2", "glue/sst2",
        [f"model.vocabulary={sample_data['wordpiece']}",
         f"data.dir={sample_data['root'] / 'glue' / 'SST-2'}", "data.sequence_length=32"],
        transformers.BertForSequenceClassification, tmp_path)
    assert all(set(w) == {"logits"} and np.all(w["logits"] == 1) for *_, w in batches)

    hf_losses, hf_norms = recipe.train_steps(
        hf, [recipe.classification_batch(x, y["logits"]) for x, y, _ in batches],
        task.config.train, STEPS, WARMUP)
    zoo_losses = _zoo_steps(model, batches)
    _compare(model, start, hf, tmp_path / "end", zoo_losses, hf_losses, hf_norms)


def test_a_finished_transformers_run_is_kept_unless_overwrite(tmp_path, capsys):
    """`python -m zoo_benchmarks.transformers_recipe` (the transformers row's commands)
    refuses to train over a finished run (its metrics.json), naming it and --overwrite."""
    (tmp_path / "metrics.json").write_text("[]", encoding="utf-8")
    assert recipe.main(["finetune", "--experiment", "bert/text_classification", "--out",
                        str(tmp_path)]) == 1
    assert f"{tmp_path}: a finished run; use --overwrite" in capsys.readouterr().err
    assert (tmp_path / "metrics.json").read_text(encoding="utf-8") == "[]"


def test_a_killed_transformers_pretraining_resumes_to_the_uninterrupted_result(
        sample_data, shards, tmp_path, monkeypatch):
    """The transformers row trains for an hour and more: a run killed after its last backup
    resumes from RUN/backup.pt (weights, AdamW's moments, the schedule, torch's random state
    with dropout on, the evaluations so far; the batches already seen skipped) and ends with
    the weights and evaluations of the run that was never stopped."""
    from safetensors.numpy import load_file

    config = config_lib.resolve("bert/pretrain", [
        "model.preset=bert_tiny", f"model.vocabulary={sample_data['wordpiece']}",
        f"data.dir={shards}", "data.phases=[]", "data.sequence_length=32",
        "train.batch_size=8", "train.steps=7", "train.warmup_steps=2", "train.eval_every=3",
        "train.learning_rate=1e-3", "train.log_every=1"])
    monkeypatch.setattr(recipe, "BACKUP_EVERY", 2)
    whole = recipe.pretrain(config, str(tmp_path / "whole"), progress=lambda line: None)

    update, lines = recipe._update, []

    def killed_at_step_6(model, adamw, schedule, batch, train, step):
        if step == 6:
            raise KeyboardInterrupt  # as a kill: no handler of the recipe's runs
        return update(model, adamw, schedule, batch, train, step)

    monkeypatch.setattr(recipe, "_update", killed_at_step_6)
    run = tmp_path / "killed"
    with pytest.raises(KeyboardInterrupt):
        recipe.pretrain(config, str(run), progress=lines.append)
    assert not (run / "metrics.json").exists() and (run / "backup.pt").exists()
    monkeypatch.setattr(recipe, "_update", update)
    resumed = recipe.pretrain(config, str(run), progress=lines.append)
    assert f"{run}: resuming after step 4 of 7 ({run / 'backup.pt'})" in lines
    assert not (run / "backup.pt").exists()  # a finished run keeps its model, not the backup

    assert [h["step"] for h in resumed] == [3, 6, 7] and resumed == whole
    ours, theirs = (load_file(str(tmp_path / d / "model" / "model.safetensors"))
                    for d in ("killed", "whole"))
    assert ours.keys() == theirs.keys()
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    # the kill was after step 5's update: the backup of step 4 is what was resumed, and the
    # run's config is checked against the one it resumes
    (run / "metrics.json").unlink()
    (run / "backup.pt").write_bytes(b"")
    other = config_lib.resolve("bert/pretrain", [
        "model.preset=bert_tiny", f"model.vocabulary={sample_data['wordpiece']}",
        f"data.dir={shards}", "data.phases=[]", "data.sequence_length=32", "train.steps=8"])
    with pytest.raises(ValueError, match="an unfinished run of another config"):
        recipe.pretrain(other, str(run))


def test_a_checkpoint_folder_is_read_by_transformers_and_the_head_is_zoos(sample_data,
                                                                          tmp_path):
    """`model.init_checkpoint` a Hugging Face folder (bert/imdb_pretrained's checkpoint): the
    transformers row's encoder is what transformers' own `from_pretrained` reads from the
    folder, its classifier zoo's seeded head, so the two rows start with the same outputs."""
    import shutil

    folder = tmp_path / "checkpoint"
    shutil.copytree(sample_data["wordpiece"], folder)
    size = len((folder / "vocab.txt").read_text(encoding="utf-8").splitlines())
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(
        vocab_size=size, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=64)).save_pretrained(folder)
    reviews = tmp_path / "reviews.csv"
    reviews.write_text("text,label\n" + "".join(
        f"{'a great film' if i % 2 else 'a dull film'} {i},{'pos' if i % 2 else 'neg'}\n"
        for i in range(8)), encoding="utf-8")
    config = config_lib.resolve("bert/text_classification", [
        f"data.train_file={reviews}", f"data.dev_file={reviews}", "data.labels=[neg,pos]",
        f"model.init_checkpoint={folder}", "data.sequence_length=16"])
    task, hf = recipe._start(config, str(tmp_path / "run"),
                             transformers.BertForSequenceClassification, labels=True)
    reference = transformers.BertModel.from_pretrained(str(folder)).state_dict()
    ours = hf.bert.state_dict()
    for name, value in reference.items():
        assert torch.equal(ours[name], value), name
    keras.utils.set_random_seed(config.train.seed)  # zoo's start, as its row builds it
    model = zoo_tasks.create(config.task, config).build_model()
    x, *_ = next(iter(task.dataset("dev").as_numpy_iterator()))
    out = model(x, training=False)
    zoo_logits = keras.ops.convert_to_numpy(out["logits"] if isinstance(out, dict) else out)
    hf.eval()
    with torch.no_grad():
        hf_logits = hf(**{k: torch.from_numpy(v) for k, v in recipe._encoder_inputs(x).items()
                          }).logits.numpy()
    np.testing.assert_allclose(hf_logits, zoo_logits, atol=1e-5)
    assert np.abs(hf_logits).max() > 1e-3  # the head is not zero
