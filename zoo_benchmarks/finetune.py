"""`zoo benchmark finetune`: one BERT-base fine-tuning step per library and backend."""

from zoo_benchmarks.common import fastest, target_cell, training_rows
from zoo_benchmarks.workers import time_family


def section_finetune(args, progress=print):
    """One BERT-base fine-tuning step (forward, backward, AdamW) per library and backend."""
    batch_size = args.batch_size or 8
    lines = [
        "## Fine-tuning step: BERT-base classifier, zoo vs keras-hub and transformers", "",
        f"Command: `zoo benchmark finetune --repeats {args.repeats}` (batch "
        f"{batch_size} x {args.sequence_length} tokens, the same weights and inputs as "
        "the forward benchmark, each library's own sequence classifier on the pooled output "
        "with dropout 0.1, AdamW lr 2e-5 and weight decay 0.01, no metric; all three compute "
        "the tanh GELU, the only one keras-hub's BERT has; Keras: `train_on_batch`, "
        "TensorFlow without and with XLA, JAX jit; transformers: "
        "`BertForSequenceClassification` with `torch.optim.AdamW`, eager and `torch.compile` "
        "(inductor; not with --tiny)). Loss: the last "
        "step's loss, a sanity check (the heads start from different random weights).", "",
        "| library | backend | mode | steps/s | examples/s | s per step | loss |",
        "| --- | --- | --- | --- | --- | --- | --- |"]
    results = time_family(args.root, "bert", "train", [batch_size], args.sequence_length,
                          args.backends, False, args.repeats, progress, args.tiny,
                          pool=getattr(args, "worker_pool", None))
    lines += training_rows(results, lambda batch: batch, ".2f") + [""]
    summary = []
    for backend in args.backends:
        ours = fastest(results, f"zoo {backend}", batch_size)[0]
        hub = fastest(results, f"keras-hub {backend}", batch_size)[0]
        summary.append((f"fine-tuning step vs keras-hub {backend}",
                        target_cell(hub / ours, 1.1 if backend == "tensorflow" else None)))
    ours = min(fastest(results, f"zoo {b}", batch_size)[0] for b in args.backends)
    summary.append(("fine-tuning step vs transformers (torch, fastest: eager or compile)",
                    target_cell(fastest(results, "transformers", batch_size)[0] / ours)))
    return lines, summary
