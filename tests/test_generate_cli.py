"""`zoo generate` and `zoo_tasks.load_run(...).generate` on a tiny GPT-1 language model run.

The command is held to the Python API it wraps (`zoo.generation.Generator`, whose own tests hold
it to transformers): prompts from flags and from JSON lines, text streamed to the terminal as it
is decoded, JSON lines out, the seeds of the rows, and the one-line errors of bad input.
"""

import json
import os

import keras
import numpy as np
import pytest
from filelock import FileLock

import zoo_tasks
from tests.harness import shared_run
from tests.test_training import TINY, mrpc
from zoo import config as config_lib
from zoo import training
from zoo_cli.main import main as cli
from zoo_tasks import runs

PROMPTS = ["the film is", "a movie about", "it was the best of times"]


@pytest.fixture(scope="session")
def lm_run(sample_data, tmp_path_factory, worker_id):
    """A tiny GPT-1 language model (gpt1/pretrain) trained for a few steps on the samples."""
    config = config_lib.resolve("gpt1/pretrain", TINY["gpt1"] + [
        f"model.vocabulary={sample_data['bpe']}", f"data.dir={sample_data['root'] / 'corpus'}",
        "data.sequence_length=32", "train.batch_size=16", "train.steps=40",
        "train.eval_every=40", "train.warmup_steps=4", "train.learning_rate=3e-3"])
    return str(shared_run(tmp_path_factory, worker_id, "gpt1_pretrain_tiny", config)[0])


@pytest.fixture(scope="session")
def lm_export(lm_run, tmp_path_factory, worker_id):
    """The run's export (`zoo export`: runs.export_run), written once for the session: this
    file's --saved-model test and tests/test_pretraining_export.py read the same one, as
    `shared_run` shares the run (the first worker to ask writes it under a file lock). Returns
    its version folder; tests only read it. A fixed folder, not mktemp, without xdist too:
    the other file imports this fixture, which makes it a second fixture to pytest, set up
    again (it then finds the export done)."""
    shared = tmp_path_factory.getbasetemp()
    base = (shared if worker_id == "master" else shared.parent) / "shared_runs" / "gpt1_export"
    base.mkdir(parents=True, exist_ok=True)
    with FileLock(str(base) + ".lock"):
        if not (base / "done").exists():
            path = runs.export_run(lm_run, str(base / "exports"), progress=lambda line: None)
            (base / "done").write_text(path)
    return (base / "done").read_text()


@pytest.fixture(scope="module")
def run(lm_run):
    """The run loaded in this process (`zoo_tasks.load_run`)."""
    return zoo_tasks.load_run(lm_run)


def test_load_run_generates_with_the_runs_model_and_tokenizer(run, lm_run):
    assert run.config.task == "pretrain/causal_lm" and run.tokenizer is run.task.tokenizer
    one = run.generate(PROMPTS[0], max_new_tokens=5)
    assert isinstance(one, str) and one and run.generate(PROMPTS, max_new_tokens=5)[0] == one
    ids = run.tokenizer([PROMPTS[0]]).to_list()[0]
    assert run.generator.decode(run.generate(ids, max_new_tokens=5)) == one  # ids in, new ids out
    # the run's best checkpoint, read by Keras: its next most likely token is the first
    model = keras.saving.load_model(os.path.join(lm_run, "best.keras"))
    x = np.array([ids], np.int32)
    logits = np.asarray(model({"token_ids": x, "padding_mask": np.ones_like(x)})["lm"])
    assert run.generate(ids, max_new_tokens=1) == [int(np.argmax(logits[0, -1]))]
    sampled = run.generate(PROMPTS, max_new_tokens=8, top_p=0.9, seed=5)
    assert sampled == run.generate(PROMPTS, max_new_tokens=8, top_p=0.9, seed=5)
    assert sampled != run.generate(PROMPTS, max_new_tokens=8, top_p=0.9, seed=6)
    assert "".join(run.stream(PROMPTS[0], max_new_tokens=8, top_p=0.9, seed=5)) == sampled[0]


class Recorder:
    """A stdout that keeps each write, to see the text arrive piece by piece."""

    def __init__(self):
        self.writes = []

    def write(self, text):
        self.writes.append(text)

    def flush(self):
        pass


def test_prompts_stream_to_the_terminal_as_they_are_decoded(run, lm_run, monkeypatch):
    options = ["--max-new-tokens", "8", "--top-k", "20", "--seed", "3"]
    stdout = Recorder()
    monkeypatch.setattr("sys.stdout", stdout)
    assert cli(["generate", "--run-dir", lm_run, "--prompt", PROMPTS[0], "--prompt",
                PROMPTS[1], *options]) == 0
    monkeypatch.undo()
    # row r samples with seed 3 + r, as one call of generate on both prompts
    expected = run.generate(PROMPTS[:2], max_new_tokens=8, top_k=20, seed=3)
    assert "".join(stdout.writes) == (f"{PROMPTS[0]}\n{expected[0]}\n\n"
                                      f"{PROMPTS[1]}\n{expected[1]}\n")
    start = stdout.writes.index(PROMPTS[0]) + 2  # after the prompt and its line's end
    first = stdout.writes[start:stdout.writes.index("\n", start)]
    assert len(first) > 1 and "".join(first) == expected[0]  # pieces, as decoded


def test_json_lines_in_and_out(run, lm_run, tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS + [""])
                       + "\n")  # a blank line is skipped; an empty prompt gives ""
    out = tmp_path / "out.jsonl"
    assert cli(["generate", "--run-dir", lm_run, "--input", str(prompts), "--output", str(out),
                "--max-new-tokens", "6", "--batch-size", "2"]) == 0
    greedy = run.generate(PROMPTS, max_new_tokens=6)
    # GPT-1 has no end-of-text token: without stops every row runs to --max-new-tokens
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"prompt": p, "completion": c, "new_tokens": 6} for p, c in zip(PROMPTS, greedy)] + [
        {"prompt": "", "completion": "", "new_tokens": 0}]
    assert "completions of 4 prompts written" in capsys.readouterr().err
    # several sequences a prompt, the seeds counted over the whole file (batches of one)
    assert cli(["generate", "--run-dir", lm_run, "--input", str(prompts), "--output", str(out),
                "--max-new-tokens", "5", "--do-sample", "--num-return-sequences", "2",
                "--seed", "11", "--batch-size", "1", "--return-prompt"]) == 0
    expected = run.generate(PROMPTS + [""], max_new_tokens=5, do_sample=True,
                            num_return_sequences=2, seed=11, return_prompt=True)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["completions"] for line in lines] == expected
    assert [line["new_tokens"] for line in lines] == [[5, 5]] * 3 + [[0, 0]]


def _error(argv, capsys):
    assert cli(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[1].startswith("(set ZOO_TRACEBACK=1"), err
    return err[0]


def test_bad_input_is_a_one_line_error(lm_run, tmp_path, capsys, sample_data):
    for argv, message in (
            (["--run-dir", lm_run, "--saved-model", "e", "--prompt", "a"], "not allowed with"),
            (["--prompt", "a"], "one of the arguments --run-dir --saved-model --model is required"),
            (["--run-dir", lm_run], "one of the arguments --prompt --input is required"),
            (["--run-dir", lm_run, "--prompt", "a", "--top-k", "many"], "invalid int value")):
        with pytest.raises(SystemExit) as exit_info:
            cli(["generate", *argv])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    bad = tmp_path / "prompts.jsonl"
    for line, found in (('{"text": "a"}', 'expected {"prompt": TEXT}, found {"text": "a"}'),
                        ('{"prompt": 3}', 'expected {"prompt": TEXT}'),
                        ("the film", "not JSON")):
        bad.write_text('{"prompt": "ok"}\n' + line + "\n")
        assert _error(["generate", "--run-dir", lm_run, "--input", str(bad)], capsys) \
            .startswith(f"zoo generate: error: {bad}, line 2: {found}")
    assert "top_p=1.5 is outside (0, 1]" in _error(
        ["generate", "--run-dir", lm_run, "--prompt", "a", "--top-p", "1.5"], capsys)
    assert "128 positions" in _error(
        ["generate", "--run-dir", lm_run, "--prompt", "a", "--max-new-tokens", "500"], capsys)
    assert "not a zoo run directory" in _error(
        ["generate", "--run-dir", str(tmp_path), "--prompt", "a"], capsys)
    assert "no saved_model.pb and no version directory" in _error(
        ["generate", "--saved-model", str(tmp_path), "--prompt", "a"], capsys)


def test_a_run_that_is_not_a_language_models_is_refused(sample_data, tmp_path, capsys):
    # An MRPC run directory as `zoo train` starts it (config, vocabulary, a model), untrained.
    run_dir = str(tmp_path / "mrpc")
    config = config_lib.resolve("bert/glue_mrpc", mrpc(sample_data))
    training.create_run_dir(config, run_dir, overwrite=False)
    training.copy_vocabulary(config.model, run_dir)
    zoo_tasks.create(config.task, config).build_model().save(f"{run_dir}/final.keras")
    line = _error(["generate", "--run-dir", run_dir, "--prompt", "a"], capsys)
    assert line == (f"zoo generate: error: {run_dir}: a glue/mrpc run does not write text; "
                    "generation takes a language model's run (task pretrain/causal_lm: "
                    "gpt1/pretrain, bert/pretrain_ltr)")
    with pytest.raises(ValueError, match="glue/mrpc run does not write text"):
        zoo_tasks.load_run(run_dir).generate("a")


def test_an_export_generates_as_its_run(run, lm_run, lm_export, tmp_path, capsys):
    """--saved-model calls the export's serving_generate: greedy and seeded sampling as the
    run, the options it cannot take refused in one line."""
    path = lm_export
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in PROMPTS))
    for options in (["--max-new-tokens", "6"],
                    ["--max-new-tokens", "9", "--top-k", "20", "--top-p", "0.9", "--seed", "4",
                     "--num-return-sequences", "2", "--stop", "the", "--batch-size", "2"]):
        answers = []
        for source in (["--run-dir", lm_run], ["--saved-model", os.path.dirname(path)]):
            out = tmp_path / "out.jsonl"
            assert cli(["generate", *source, "--input", str(prompts), "--output", str(out),
                        *options]) == 0
            answers.append([json.loads(line) for line in out.read_text().splitlines()])
        assert answers[0] == answers[1]
    assert answers[0][0]["new_tokens"] != [9, 9]  # "the" stopped a row
    capsys.readouterr()
    line = _error(["generate", "--saved-model", path, "--prompt", "a", "--num-beams", "2"],
                  capsys)
    assert line.startswith(f"zoo generate: error: --num-beams: {path}'s serving_generate does "
                           "not take it (its inputs: do_sample, max_new_tokens, prompt, ")
    assert line.endswith("); generate from the run directory (--run-dir) instead")
