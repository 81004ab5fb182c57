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

import math

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
    import torch

    adamw, schedule = optimizer(model, train, total_steps, warmup_steps)
    beta_2 = adamw.param_groups[0]["betas"][1]
    model.train()
    losses, norms = [], []
    for step, batch in enumerate(batches, start=1):
        for group in adamw.param_groups:  # Keras's epsilon convention (module docstring)
            group["eps"] = train.adam_epsilon / math.sqrt(1.0 - beta_2 ** step)
        out = model(**{key: torch.from_numpy(value) for key, value in batch.items()})
        adamw.zero_grad()
        out.loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), train.clip_norm or math.inf)
        adamw.step()
        schedule.step()
        losses.append(float(out.loss.detach()))
        norms.append(float(norm))
    return losses, norms
