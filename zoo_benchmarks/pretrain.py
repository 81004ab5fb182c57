"""`zoo benchmark pretrain`: one BERT pretraining step, zoo against transformers."""

from zoo_benchmarks.common import fastest, target_cell, training_rows
from zoo_benchmarks.contenders import PREDICTIONS
from zoo_benchmarks.workers import time_family


def section_pretrain(args, progress=print):
    """BERT-base masked LM + NSP steps: zoo (TensorFlow graph and XLA, JAX) vs transformers'
    `BertForPreTraining` (eager torch and `torch.compile`), tokens/s."""
    batch_size = args.batch_size or 8
    length = args.sequence_length
    lines = [
        "## Pretraining step: BERT-base masked LM + NSP, zoo vs transformers", "",
        f"Command: `zoo benchmark pretrain --repeats {args.repeats}` (batch {batch_size} x "
        f"{length} tokens, the weights of the forward benchmark with new heads, "
        f"{min(PREDICTIONS, length - 1)} masked positions a sequence and a next-sentence label; "
        "BERT's recipe in both: AdamW lr "
        "1e-4, weight decay 0.01 but not on LayerNorm and biases, clipping to global norm 1, "
        "dropout 0.1, the exact GELU. zoo: `BertMaskedLM` (predicts the masked positions "
        "only, as run_pretraining.py), `train_on_batch` on TensorFlow without and with XLA, "
        "and JAX jit; transformers: `BertForPreTraining` (the vocabulary projection at every "
        "position, its loss ignoring the others) with `torch.optim.AdamW`, eager and "
        "`torch.compile` (inductor; with --tiny dynamo's eager backend, which checks the "
        "contender, not inductor). All in one group, timed in alternation. Loss: the last "
        "step's loss, a sanity check (the heads start from different random weights).", "",
        "| library | backend | mode | steps/s | tokens/s | s per step | loss |",
        "| --- | --- | --- | --- | --- | --- | --- |"]
    results = time_family(args.root, "bert", "pretrain", [batch_size], length, args.backends,
                          False, args.repeats, progress, args.tiny,
                          pool=getattr(args, "worker_pool", None))
    lines += training_rows(results, lambda batch: batch * length, ",.0f") + [""]
    ours = min(fastest(results, f"zoo {b}", batch_size)[0] for b in args.backends)
    eager = [s for (label, name), (s, _) in results.items()
             if label == "transformers" and name.startswith("eager ")]
    summary = [("pretraining tokens/s vs transformers (torch eager)",
                target_cell(min(eager) / ours, 1.0)),
               ("pretraining tokens/s vs transformers (fastest: eager or torch.compile)",
                target_cell(fastest(results, "transformers", batch_size)[0] / ours, 1.0))]
    return lines, summary
