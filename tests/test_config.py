"""Experiment configs: defaults <- YAML <- --set, strict keys, types and ranges; every YAML."""

import glob
import os

import pytest
import yaml

from zoo import config as config_lib
from zoo.config import ConfigError, resolve

EXPERIMENTS = sorted(glob.glob(os.path.join(config_lib.CONFIG_ROOT, "*", "*.yaml")))


def test_the_experiments_the_issue_names_exist():
    names = {os.path.relpath(p, config_lib.CONFIG_ROOT)[:-5] for p in EXPERIMENTS}
    assert {"bert/glue_mrpc", "bert/glue_mnli", "bert/pretrain", "gpt1/glue_rte",
            "gpt1/pretrain", "bert/pretrain_ltr"} <= names
    glue = ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli")
    for family in ("bert", "gpt1"):
        assert {f"{family}/glue_{t}" for t in glue} | {f"{family}/snli", f"{family}/scitail"} \
            <= names


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: os.path.relpath(
    p, config_lib.CONFIG_ROOT))
def test_every_experiment_resolves_and_says_how_to_run_it(path):
    config = resolve(path)
    with open(path) as f:
        text = f.read()
    name = os.path.relpath(path, config_lib.CONFIG_ROOT)[:-5]
    assert f"zoo train --experiment {name}" in text  # the header gives the command
    assert "Paper" in text or "paper" in text  # ... and the paper's number
    import zoo_tasks

    assert config.task in zoo_tasks.TASKS


def test_paper_hyperparameters_are_encoded():
    bert = resolve("bert/glue_mrpc").train
    assert (bert.batch_size, bert.epochs, bert.warmup_fraction, bert.schedule) == (
        32, 3.0, 0.1, "linear")
    assert bert.learning_rate in (5e-5, 4e-5, 3e-5, 2e-5)
    gpt = resolve("gpt1/glue_rte").train
    assert (gpt.learning_rate, gpt.batch_size, gpt.epochs, gpt.warmup_fraction,
            gpt.lm_weight) == (6.25e-5, 32, 3.0, 0.002, 0.5)
    pre = resolve("bert/pretrain")
    assert (pre.train.batch_size, pre.train.learning_rate, pre.train.warmup_steps) == (
        256, 1e-4, 10000)
    assert [(p.sequence_length, p.fraction) for p in pre.data.phases] == [(128, 0.9), (512, 0.1)]
    gpt_pre = resolve("gpt1/pretrain").train
    assert (gpt_pre.learning_rate, gpt_pre.warmup_steps, gpt_pre.schedule) == (
        2.5e-4, 2000, "cosine")


def test_order_defaults_then_yaml_then_overrides(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump({"task": "glue/rte", "train": {"learning_rate": 4e-5,
                                                                  "epochs": 2}}))
    config = resolve(str(path), ["train.epochs=5", "model.backbone.num_layers=2",
                                 "train.eval_every=null"])
    assert config.train.learning_rate == 4e-5  # YAML over the default 2e-5
    assert config.train.epochs == 5.0  # --set over YAML, int accepted for a float
    assert config.train.batch_size == 32  # default
    assert config.model.backbone == {"num_layers": 2}
    assert config.train.eval_every is None


@pytest.mark.parametrize("override, message", [
    ("train.learnin_rate=1e-4", "unknown key train.learnin_rate"),
    ("trian.epochs=1", "unknown key trian"),
    ("train.batch_size=many", "train.batch_size: expected int, found str 'many'"),
    ("train.batch_size=2.5", "train.batch_size: expected int, found float"),
    ("train.deterministic=maybe", "train.deterministic: expected bool"),
    ("train.batch_size=0", "train.batch_size: must be >= 1, found 0"),
    ("train.warmup_fraction=1.5", "train.warmup_fraction: must be <= 1.0"),
    ("train.strategy=horovod", "train.strategy: expected one of default"),
    ("train.mixed_precision=fp8", "train.mixed_precision: expected one of"),
    ("data.mask_token_rate=0.95", "mask_token_rate + data.random_token_rate must be <= 1"),
    ("train.epochs", "expected key=value"),
    ("train.epochs.x=1", "train.epochs is a value, not a section"),
])
def test_bad_overrides_name_the_key(override, message):
    with pytest.raises(ConfigError, match=None) as info:
        resolve("bert/glue_mrpc", [override])
    assert message in str(info.value), str(info.value)
    assert "--set" in str(info.value) or "config" in str(info.value)


def test_bad_yaml_names_the_file_and_key(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("task: glue/mrpc\ntrain: {epochs: 3, warmup: 0.1}\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: unknown key train\.warmup"):
        resolve(str(path))
    path.write_text("task: glue/mrpc\ntrain: [1, 2]\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: train: expected a mapping"):
        resolve(str(path))
    with pytest.raises(ConfigError, match="no such file"):
        resolve(str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="known experiments: .*bert/glue_mrpc"):
        resolve("bert/glue_mrcp")


def test_the_resolved_config_round_trips():
    config = resolve("bert/pretrain", ["model.backbone.num_layers=2"])
    data = yaml.safe_load(yaml.safe_dump(config_lib.to_dict(config)))
    assert config_lib.from_dict(data, "config.yaml") == config


def test_dynamic_padding_is_on_by_default_and_wider_where_each_shape_compiles(monkeypatch):
    """`data.pad_to_multiple_of: null` (the default) resolves to 8 in graph mode, to a quarter
    of the sequence length (a multiple of 8) under XLA or on JAX; a value set stays; the
    resolved value is what a run's config.yaml records."""
    import sys

    monkeypatch.delitem(sys.modules, "keras", raising=False)  # read KERAS_BACKEND
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    task = {"task": "glue/mrpc"}
    assert config_lib.resolve(task).data.pad_to_multiple_of == 8
    assert config_lib.resolve(task).data.sort_by_length is True
    for length, multiple in ((128, 32), (512, 128), (100, 32), (16, 8)):
        resolved = config_lib.resolve(task, ["train.jit_compile=true",
                                             f"data.sequence_length={length}"])
        assert resolved.data.pad_to_multiple_of == multiple, length
    assert config_lib.resolve(task, ["data.pad_to_multiple_of=0"]).data.pad_to_multiple_of == 0
    assert config_lib.to_dict(config_lib.resolve(task))["data"]["pad_to_multiple_of"] == 8
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    assert config_lib.resolve(task).data.pad_to_multiple_of == 32
