"""zoo's training recipe in transformers and torch: the reference zoo's training steps are
checked against (issue #42), and the "transformers" row of a side-by-side run.

The same batches (zoo's, as numpy), the same starting weights (`zoo.convert.to_huggingface`),
and the recipe of `zoo.optimization.build_optimizer` built from torch's and transformers' own
parts, none of zoo's:

- `torch.optim.AdamW` with decoupled weight decay, no decay on LayerNorm weights or biases
  (the parameter groups transformers' examples make, "bias" and "LayerNorm" in the name);
- transformers' `get_linear_schedule_with_warmup` / `get_cosine_schedule_with_warmup`, stepped
  after each update, so the first update uses lr(0) as in zoo;
- `torch.nn.utils.clip_grad_norm_` to `train.clip_norm`.

One convention differs, and is converted rather than ignored: Keras's Adam adds epsilon to
sqrt(v) before the bias correction (Kingma & Ba's "epsilon hat"), torch after it, so step t
here uses epsilon / sqrt(1 - beta2^t), which makes the two updates the same arithmetic.
torch and transformers are test extras, imported when a function runs.
"""

import json
import math
import os
import sys

import numpy as np

IGNORE = -100  # transformers' label for "no loss here"


def pretraining_batch(x, y, sample_weight):
    """zoo's masked-LM + NSP batch (numpy, `zoo.data.pretraining_dataset`) as the keyword
    arguments of `BertForPreTraining`: the original ids as `labels` at the selected positions
    (IGNORE elsewhere), the same mean over real predictions zoo's loss takes."""
    token_ids = np.asarray(x["token_ids"])
    labels = np.full(token_ids.shape, IGNORE, np.int64)
    weights = np.asarray(sample_weight["mlm"])
    rows, slots = np.nonzero(weights > 0)
    positions = np.asarray(x["mask_positions"])[rows, slots]
    if len(set(zip(rows.tolist(), positions.tolist()))) != len(rows):
        raise ValueError("pretraining_batch: a position is selected twice in one sequence")
    labels[rows, positions] = np.asarray(y["mlm"])[rows, slots]
    batch = _encoder_inputs(x)
    batch["labels"] = labels
    if "nsp" in y:
        batch["next_sentence_label"] = np.asarray(y["nsp"], np.int64)
    return batch


def classification_batch(x, y):
    """zoo's classification batch as `BertForSequenceClassification`'s keyword arguments."""
    batch = _encoder_inputs(x)
    batch["labels"] = np.asarray(y, np.int64)
    return batch


def _encoder_inputs(x):
    return {"input_ids": np.asarray(x["token_ids"], np.int64),
            "token_type_ids": np.asarray(x["segment_ids"], np.int64),
            "attention_mask": np.asarray(x["padding_mask"], np.int64)}


def no_decay(name):
    """transformers' examples' rule: biases and LayerNorm weights get no weight decay."""
    return "bias" in name or "LayerNorm" in name


def optimizer(model, train, total_steps, warmup_steps):
    """(AdamW, its schedule) for `model` (a torch module) as `train` (a zoo TrainConfig)."""
    import torch
    import transformers

    if train.optimizer != "adamw":
        raise ValueError(f"train.optimizer {train.optimizer}: the reference is AdamW only")
    named = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for name, p in named if not no_decay(name)],
               "weight_decay": train.weight_decay},
              {"params": [p for name, p in named if no_decay(name)], "weight_decay": 0.0}]
    adamw = torch.optim.AdamW(groups, lr=train.learning_rate, betas=(0.9, 0.999),
                              eps=train.adam_epsilon)
    make = {"linear": transformers.get_linear_schedule_with_warmup,
            "cosine": transformers.get_cosine_schedule_with_warmup}[train.schedule]
    return adamw, make(adamw, warmup_steps, total_steps)


def train_steps(model, batches, train, total_steps, warmup_steps):
    """Train `model` (a transformers model, in train mode) on `batches` (dicts of numpy
    arrays, its keyword arguments) one update each; returns the loss and the gradients'
    global norm (before clipping) of each step, two lists of floats."""
    adamw, schedule = optimizer(model, train, total_steps, warmup_steps)
    model.train()
    losses, norms = [], []
    for step, batch in enumerate(batches, start=1):
        loss, norm = _update(model, adamw, schedule, batch, train, step)
        losses.append(loss)
        norms.append(norm)
    return losses, norms


def _update(model, adamw, schedule, batch, train, step):
    """One update of step `step` (1-based): (loss, gradient norm before clipping)."""
    import torch

    beta_2 = adamw.param_groups[0]["betas"][1]
    for group in adamw.param_groups:  # Keras's epsilon convention (module docstring)
        group["eps"] = train.adam_epsilon / math.sqrt(1.0 - beta_2 ** step)
    loss = training_loss(model, {key: torch.from_numpy(value) for key, value in batch.items()})
    adamw.zero_grad()
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train.clip_norm or math.inf)
    adamw.step()
    schedule.step()
    return float(loss.detach()), float(norm)


def training_loss(model, batch):
    """The training loss of `model` on `batch` (torch tensors). For `BertForPreTraining` it is
    the model's own loss (cross-entropy over the labelled positions, + NSP's when the batch
    has it) computed from its own parts, `model.bert` then `model.cls`, on the labelled
    positions alone: `BertForPreTraining.forward` projects every position onto the vocabulary
    before dropping the unlabelled ones (128 positions where 20 are labelled), ~3x the work of
    a step for the same loss and gradients. zoo's heads, like BERT's original code, gather
    the masked positions first; this gives both libraries the same work."""
    import torch
    import transformers

    if not isinstance(model, transformers.BertForPreTraining):
        return model(**batch).loss
    labels = batch["labels"]
    sequence, pooled = model.bert(input_ids=batch["input_ids"],
                                  token_type_ids=batch["token_type_ids"],
                                  attention_mask=batch["attention_mask"])[:2]
    chosen = labels != IGNORE
    logits = model.cls.predictions(sequence[chosen])
    loss = torch.nn.functional.cross_entropy(logits, labels[chosen])
    if "next_sentence_label" in batch:
        loss = loss + torch.nn.functional.cross_entropy(
            model.cls.seq_relationship(pooled), batch["next_sentence_label"])
    return loss


# --- The "transformers" row of `zoo reproduce` (configs/reproduce/bert/imdb.yaml) ---
#
# The same experiment config as zoo's row, run by transformers and torch: zoo's starting
# weights (the config's seed, then the task's model, as zoo.training.loop builds it) written
# by `zoo.convert.to_huggingface`; where `model.init_checkpoint` is a Hugging Face folder (or
# a hub name: bert/imdb_pretrained's checkpoint, the transformers pretraining's RUN/model),
# its weights as transformers reads them from it and only the rest (the task head) from zoo's
# start; zoo's batches (its pipeline, its masking), the recipe above
# with dropout on; evaluated on the same batches (pretraining) or file (fine-tuning) as zoo.
# A run directory holds config.yaml, metrics.json (zoo's keys), logs/ (TensorBoard, the
# curves beside zoo's) and, for pretraining, model/ (save_pretrained: what the fine-tuning
# rows start from, `model.init_checkpoint=RUN/model`). A killed run resumes from its backup.pt
# (written atomically every BACKUP_EVERY steps and at each evaluation: the weights, AdamW's
# moments, the schedule, torch's random state, the evaluations so far; the batches already
# trained on are skipped), so the resumed run trains what the uninterrupted one would.

MODEL = "model"
BACKUP = "backup.pt"
BACKUP_EVERY = 500


def _start(config, run_dir, hf_class, labels=None, overwrite=False):
    """(task, transformers model) from zoo's starting weights for `config`; a finished
    `run_dir` (metrics.json) is trained again only with `overwrite`, an unfinished one with a
    backup of the same config resumes (`_train`), one without a backup starts again."""
    import keras
    import yaml

    # lazy: zoo loads TensorFlow; the torch worker imports this module without it
    import zoo_tasks
    from zoo import config as config_lib  # lazy: as above
    from zoo import convert, files  # lazy: as above

    if files.isfile(os.path.join(run_dir, "metrics.json")) and not overwrite:
        raise ValueError(f"{run_dir}: a finished run; use --overwrite to train it again")
    text = yaml.safe_dump(config_lib.to_dict(config), sort_keys=False)
    saved = os.path.join(run_dir, "config.yaml")
    if files.isfile(os.path.join(run_dir, BACKUP)) and not overwrite:
        with files.open(saved) as file:
            different = file.read() != text
        if different:
            raise ValueError(f"{run_dir}: an unfinished run of another config ({saved}); "
                             "use --overwrite to start it again")
    elif files.exists(run_dir):
        files.rmtree(run_dir)  # nothing to resume from: started again from the beginning
    files.makedirs(run_dir)
    files.write_text(saved, text)
    keras.utils.set_random_seed(config.train.seed)
    task = zoo_tasks.create(config.task, config)
    model = task.build_model()
    start = os.path.join(run_dir, "start")
    convert.to_huggingface(model, start, labels=task.labels if labels else None)
    keras.backend.clear_session()
    hf = hf_class.from_pretrained(start)
    folder = _checkpoint_folder(config.model.init_checkpoint)
    if folder is not None:
        hf = _from_checkpoint(hf_class, folder, start, hf)
    files.rmtree(start)
    return task, hf


def _checkpoint_folder(source):
    """The local Hugging Face folder (config.json) of `model.init_checkpoint`: a folder, or a
    hub name (hf://ORG/NAME, a pretrained preset) resolved by zoo.hub; None for anything else
    (none, a zoo run, a .keras file, a Google BERT checkpoint)."""
    from zoo import files, hub  # lazy: as in _start

    if not source:
        return None
    folder = hub.resolve(source) if hub.is_hub(source) else source
    return folder if files.isfile(os.path.join(folder, "config.json")) else None


def _from_checkpoint(hf_class, folder, start, zoo_start):
    """The model as transformers itself reads the checkpoint `folder` (`from_pretrained`,
    with the configuration of zoo's start: its labels and dropout), the weights the
    checkpoint lacks (the task head) taken from zoo's start, so both libraries begin from the
    same head and each reads the checkpoint with its own code."""
    import transformers

    config = transformers.AutoConfig.from_pretrained(start)
    hf, info = hf_class.from_pretrained(folder, config=config, output_loading_info=True)
    if info["mismatched_keys"]:
        raise ValueError(f"{folder}: weights of other shapes than the run's model: "
                         f"{info['mismatched_keys'][:3]}")
    ours = zoo_start.state_dict()
    head = {key: ours[key] for key in info["missing_keys"]}
    unknown = sorted(set(info["missing_keys"]) - set(ours))
    if unknown:
        raise ValueError(f"{folder}: no starting value for {unknown[:3]}")
    hf.load_state_dict(head, strict=False)
    return hf


def _logger(run_dir):
    import tensorflow as tf

    writers = {name: tf.summary.create_file_writer(os.path.join(run_dir, "logs", name))
               for name in ("train", "eval")}

    def log(kind, step, values):
        with writers[kind].as_default():
            for key, value in values.items():
                tf.summary.scalar(key, value, step=step)
        writers[kind].flush()
    return log


def _save_metrics(run_dir, history):
    from zoo import files  # lazy: as in _start

    files.write_text(os.path.join(run_dir, "metrics.json"), json.dumps(history, indent=1) + "\n")


def _train(config, run_dir, hf, batches, total, warmup, evaluate, progress):
    """The update loop: logs loss and learning rate every train.log_every steps, evaluates
    every `eval_every` steps and at the end, backs up (BACKUP) every BACKUP_EVERY steps and at
    each evaluation; `batches(skip)` gives the batches after the first `skip`. Resumes from
    RUN/BACKUP when there is one; returns the evaluations (metrics.json)."""
    import torch

    from zoo import files  # lazy: as in _start
    from zoo.progress import bar  # lazy: as above

    torch.manual_seed(config.train.seed)  # dropout's stream: torch's, not zoo's
    adamw, schedule = optimizer(hf, config.train, total, warmup)
    log, history, done = _logger(run_dir), [], 0
    backup = os.path.join(run_dir, BACKUP)
    if files.isfile(backup):
        with files.open(backup, "rb") as file:
            state = torch.load(file, weights_only=False)
        hf.load_state_dict(state["model"])
        adamw.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        torch.set_rng_state(state["rng"])
        history, done = state["history"], state["step"]
        progress(f"{run_dir}: resuming after step {done} of {total} ({backup})")
    eval_every = min(config.train.eval_every or total, total)
    log_every = config.train.log_every or 100
    hf.train()
    shown = bar(total=total, initial=done, desc=os.path.basename(os.path.normpath(run_dir)),
                unit="step")
    for step, batch in enumerate(batches(done), start=done + 1):
        rate = schedule.get_last_lr()[0]
        loss, norm = _update(hf, adamw, schedule, batch, config.train, step)
        shown.update()
        shown.set_postfix(loss=f"{loss:.4f}", refresh=False)
        if step % log_every == 0 or step == total:
            log("train", step, {"loss": loss, "learning_rate": rate, "gradient_norm": norm})
        evaluated = step % eval_every == 0 or step == total
        if evaluated:
            hf.eval()
            with torch.no_grad():
                metrics = evaluate(hf)
            hf.train()
            history.append({"step": step, **metrics})
            log("eval", step, metrics)
            progress(f"step {step}: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
        if step == total:
            break
        if evaluated or step % BACKUP_EVERY == 0:
            with files.atomic_path(backup) as tmp:
                with files.open(tmp, "wb") as file:
                    torch.save({"step": step, "model": hf.state_dict(),
                                "optimizer": adamw.state_dict(),
                                "schedule": schedule.state_dict(),
                                "rng": torch.get_rng_state(), "history": history}, file)
    shown.close()
    return history


def pretrain(config, run_dir, progress=print, overwrite=False):
    """BertForPreTraining on zoo's masked batches for `train.steps` (a `bert/pretrain`
    config with one sequence length); writes RUN/model, RUN/vocabulary, metrics.json."""
    import numpy as np
    import torch
    import transformers

    from zoo import files  # lazy: as in _start

    if config.data.phases and len(config.data.phases) > 1:
        raise ValueError("the transformers pretraining takes one sequence length: "
                         "data.phases=[] and data.sequence_length")
    task, hf = _start(config, run_dir, transformers.BertForPreTraining, overwrite=overwrite)
    eval_batches = [pretraining_batch(*b) for b in task.eval_dataset().as_numpy_iterator()]

    def evaluate(model):  # zoo's keys: accuracy over the predictions, the loss a batch's mean
        correct = total = nsp_correct = nsp_total = 0
        losses, nsp_losses = [], []
        for batch in eval_batches:
            labels = torch.from_numpy(batch["labels"])
            out = model(**{k: torch.from_numpy(v) for k, v in batch.items()
                           if k not in ("labels", "next_sentence_label")})
            chosen = labels != IGNORE
            logits = out.prediction_logits[chosen]
            losses.append(float(torch.nn.functional.cross_entropy(logits, labels[chosen])))
            correct += int((logits.argmax(-1) == labels[chosen]).sum())
            total += int(chosen.sum())
            if "next_sentence_label" in batch:
                nsp = torch.from_numpy(batch["next_sentence_label"])
                nsp_losses.append(float(torch.nn.functional.cross_entropy(
                    out.seq_relationship_logits, nsp)))
                nsp_correct += int((out.seq_relationship_logits.argmax(-1) == nsp).sum())
                nsp_total += len(nsp)
        metrics = {"mlm_accuracy": correct / total, "mlm_loss": float(np.mean(losses))}
        metrics["mlm_perplexity"] = math.exp(min(metrics["mlm_loss"], 50.0))
        if nsp_total:
            metrics.update(nsp_accuracy=nsp_correct / nsp_total,
                           nsp_loss=float(np.mean(nsp_losses)))
        return metrics

    total = config.train.steps
    if not total:
        raise ValueError("the transformers pretraining needs train.steps")
    warmup = config.train.warmup_steps or 0

    def batches(skip):
        return (pretraining_batch(*b) for b in task.dataset("train", repeat=True)
                .take(total).skip(skip).as_numpy_iterator())

    history = _train(config, run_dir, hf, batches, total, warmup, evaluate, progress)
    files.copytree(config.model.vocabulary, os.path.join(run_dir, "vocabulary"))
    with files.atomic_path(os.path.join(run_dir, MODEL)) as tmp:
        hf.save_pretrained(tmp)
    _finish(run_dir, history)
    return history


def _finish(run_dir, history):
    from zoo import files  # lazy: as in _start

    _save_metrics(run_dir, history)  # marks the run finished
    if files.exists(os.path.join(run_dir, BACKUP)):
        files.remove(os.path.join(run_dir, BACKUP))


def finetune(config, run_dir, progress=print, overwrite=False):
    """BertForSequenceClassification on zoo's batches of a text classification config (its
    `model.init_checkpoint` a transformers pretraining's RUN/model, or none); scored on the
    dev file with zoo.metrics.text_classification; writes metrics.json."""
    import torch
    import transformers

    # lazy: zoo loads TensorFlow; the torch worker imports this module without it
    from zoo.metrics import text_classification as text_classification_metrics
    from zoo.training.loop import StepCounts  # lazy: as above

    task, hf = _start(config, run_dir, transformers.BertForSequenceClassification, labels=True,
                      overwrite=overwrite)
    if task.kind != "single":
        raise ValueError("the transformers fine-tuning takes single-label classification")
    counts = StepCounts(config.train, task.steps_per_epoch())
    gold = task.examples("dev")["label"]

    def evaluate(model):
        logits = [model(**{k: torch.from_numpy(v) for k, v in _encoder_inputs(x).items()}
                        ).logits.numpy()
                  for x, *_ in task.dataset("dev").as_numpy_iterator()]
        predicted = [task.labels[i] for b in logits for i in b.argmax(-1)]
        return text_classification_metrics.compute("single", gold, predicted, task.labels)

    def batches(skip):
        return (classification_batch(x, y["logits"]) for x, y, _ in
                task.dataset("train", repeat=True).take(counts.total).skip(skip)
                .as_numpy_iterator())

    history = _train(config, run_dir, hf, batches, counts.total, counts.warmup, evaluate,
                     progress)
    _finish(run_dir, history)
    return history


def main(argv=None):
    """`python -m zoo_benchmarks.transformers_recipe pretrain|finetune --experiment E --set k=v
    --out DIR`: the commands of a reproduction's transformers row (RUN/commands.sh)."""
    # lazy: loads TensorFlow; the torch worker imports this module without it
    from zoo_benchmarks.commands import row_command

    def train(kind, config, out, overwrite):
        (pretrain if kind == "pretrain" else finetune)(config, out, overwrite=overwrite)

    return row_command("python -m zoo_benchmarks.transformers_recipe", main.__doc__,
                       ("pretrain", "finetune"), train, argv, overwrite=True)


if __name__ == "__main__":
    sys.exit(main())
