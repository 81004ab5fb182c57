"""The transformers side of `zoo benchmark journey`: fine-tune a Hugging Face BERT folder on a
CSV with transformers' `Trainer`, as its documentation's text-classification example does,
then evaluate on the dev file once and write the metrics.

    python -m zoo_benchmarks.journey_trainer --checkpoint FOLDER --train-file train.csv \\
        --dev-file dev.csv --labels neg pos --out metrics.json [--batch-size 32 ...] \\
        [--lora-rank 8]

With `--lora-rank R` the model is wrapped with PEFT (`get_peft_model`, `LoraConfig` r = alpha = R
on query and value, no dropout, the classifier and the LayerNorms in `modules_to_save`): what
zoo's `train.lora_rank=R` trains, as tests/test_lora.py's reference.

`AutoModelForSequenceClassification` and the folder's fast tokenizer, `DataCollatorWithPadding`
(each batch padded to its longest text, transformers' default), `TrainingArguments` with the
recipe given (linear warmup then decay, AdamW with weight decay, gradient clipping), no
checkpoints saved, no integrations, on the CPU, the data loader at its defaults. The CSV is
read with the standard library (`datasets` is not installed here; Trainer takes any sized
dataset of dicts).

The output file (JSON, written when the run ends): the dev accuracy and loss, the optimizer
steps, and the wall-clock moments (time.time(), the parent's clock) of the phases: imports
done, model and data ready, training begun, each optimizer step ended, training ended,
evaluation ended. This module imports neither TensorFlow nor zoo: the process is a
transformers user's.
"""

import argparse
import csv
import json
import os
import sys
import time


def parser():
    """The flags, which `zoo_benchmarks.journey` passes."""
    parser = argparse.ArgumentParser(prog="python -m zoo_benchmarks.journey_trainer",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a Hugging Face BERT folder")
    parser.add_argument("--train-file", required=True, help="CSV with text and label columns")
    parser.add_argument("--dev-file", required=True, help="CSV with text and label columns")
    parser.add_argument("--labels", nargs="+", required=True, help="label names, in id order")
    parser.add_argument("--out", required=True, help="the metrics JSON to write")
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--warmup-fraction", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip-norm", type=float, default=1.0)
    parser.add_argument("--adam-epsilon", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lora-rank", type=int, default=None,
                        help="wrap the model with PEFT's LoRA of this rank (alpha the rank, "
                             "query and value; the classifier and LayerNorms train)")
    return parser


def read_rows(path, labels):
    """(texts, label ids) of a CSV with `text` and `label` columns."""
    ids = {name: i for i, name in enumerate(labels)}
    texts, targets = [], []
    with open(path, encoding="utf-8", newline="") as file:
        for line, row in enumerate(csv.DictReader(file), start=2):
            if row.get("label") not in ids:
                raise ValueError(f"{path}:{line}: label {row.get('label')!r} is not one of "
                                 f"{labels}")
            texts.append(row["text"])
            targets.append(ids[row["label"]])
    return texts, targets


def main(argv=None):
    args = parser().parse_args(argv)
    # lazy: the imports are part of what the journey times, from the process's start
    import numpy as np
    import transformers
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainerCallback,
        TrainingArguments,
    )

    moments = {"imported": time.time()}
    transformers.logging.set_verbosity_error()  # the new head's "newly initialized" warning
    tokenizer = AutoTokenizer.from_pretrained(args.checkpoint)
    model = AutoModelForSequenceClassification.from_pretrained(
        args.checkpoint, num_labels=len(args.labels),
        id2label=dict(enumerate(args.labels)), label2id={n: i for i, n in enumerate(args.labels)})
    if args.lora_rank:  # PEFT as tests/test_lora.py's reference: what zoo's train.lora_rank trains
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(
            r=args.lora_rank, lora_alpha=args.lora_rank, target_modules=["query", "value"],
            lora_dropout=0.0, modules_to_save=["classifier", "LayerNorm"], task_type="SEQ_CLS"))

    def dataset(path):
        texts, targets = read_rows(path, args.labels)
        encoded = tokenizer(texts, truncation=True, max_length=args.sequence_length)
        return [{**{k: v[i] for k, v in encoded.items()}, "labels": targets[i]}
                for i in range(len(texts))]

    train, dev = dataset(args.train_file), dataset(args.dev_file)
    moments["ready"] = time.time()

    class PhaseMoments(TrainerCallback):
        def on_train_begin(self, *_, **__):
            moments["train_begin"] = time.time()

        def on_step_end(self, *_, **__):
            moments.setdefault("steps", []).append(time.time())

    def accuracy(prediction):
        return {"accuracy": float(np.mean(
            np.argmax(prediction.predictions, axis=-1) == prediction.label_ids))}

    output_dir = os.path.join(os.path.dirname(os.path.abspath(args.out)), "trainer_output")
    training_args = TrainingArguments(
        output_dir=output_dir, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=args.batch_size,
        learning_rate=args.learning_rate, lr_scheduler_type="linear",
        warmup_steps=args.warmup_fraction,  # a float below 1: a fraction of the steps
        weight_decay=args.weight_decay, max_grad_norm=args.clip_norm,
        adam_epsilon=args.adam_epsilon, seed=args.seed, save_strategy="no", eval_strategy="no",
        report_to=[], use_cpu=True, disable_tqdm=True, logging_strategy="no")
    trainer = Trainer(model=model, args=training_args, train_dataset=train, eval_dataset=dev,
                      data_collator=DataCollatorWithPadding(tokenizer),
                      compute_metrics=accuracy, callbacks=[PhaseMoments()])
    result = trainer.train()
    moments["train_end"] = time.time()
    metrics = trainer.evaluate()
    moments["evaluated"] = time.time()
    out = {"accuracy": metrics["eval_accuracy"], "loss": metrics["eval_loss"],
           "steps": result.global_step, "train_runtime": result.metrics["train_runtime"],
           "moments": moments}
    staging = args.out + ".new"
    with open(staging, "w", encoding="utf-8") as file:
        json.dump(out, file)
    os.replace(staging, args.out)
    print(json.dumps({k: v for k, v in out.items() if k != "moments"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
