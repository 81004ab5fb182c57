"""`zoo benchmark models`: forward throughput and batch-1 latency, every library."""

from zoo_benchmarks.common import FAMILIES, fastest, split_contender, target_cell
from zoo_benchmarks.workers import time_family


def section_models(args, progress=print):
    """Forward throughput and batch-1 latency of BERT-base, GPT-1 and ViT-B/16, all libraries."""
    lines = [
        "## Models: forward pass, zoo vs keras-hub, transformers and ONNX Runtime", "",
        f"Command: `zoo benchmark models --repeats {args.repeats}` (random weights, the same in "
        "every library: keras-hub's backbone is created, saved as a preset, converted to zoo "
        "and written as a transformers checkpoint, which torch and ONNX Runtime load; the same "
        f"inputs; dropout off; BERT and GPT-1 take {args.sequence_length} tokens per sequence, "
        "ViT 224x224 images, i.e. 197 tokens). Each library runs in its own process; the "
        "parent asks each in turn for one timed call and reports the median of "
        f"{args.repeats}; the first two calls of each trace or compile and are not timed. "
        "TensorFlow runs `tf.function` without and with XLA (`jit_compile=True`), JAX "
        "`predict_on_batch` (jit); transformers runs eager torch under `inference_mode`; "
        "ONNX Runtime runs transformers' model exported by `torch.onnx.export(dynamo=True)` "
        "at `ORT_ENABLE_ALL`. Max diff: the largest absolute difference from transformers' "
        "output on two corners of the sequence output (keras-hub's BERT uses the tanh GELU, "
        "the others the exact one). dtype: `mixed_bfloat16` is the Keras policy (float32 "
        "weights, cast to bfloat16 at every call; bfloat16 compute); `bfloat16` is zoo's "
        "`export.with_bfloat16_weights`, what `zoo export` serves: the same computation, bit "
        "for bit, with the dense and embedding weights stored in bfloat16 (LayerNorm keeps "
        "float32 weights and computes in float32 in both).", ""]
    summary = []
    for family in args.families:
        results = time_family(args.root, family, "forward", args.batches, args.sequence_length,
                              args.backends, args.bf16, args.repeats, progress,
                              pool=getattr(args, "worker_pool", None))
        lines += [f"### {FAMILIES[family][0]}{' (--tiny: 2 layers, width 64)' * args.tiny}", "",
                  "| library | backend | mode | dtype | batch | seq/s | ms per call | max diff |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for (label, name), (seconds, diff) in sorted(
                results.items(), key=lambda kv: (split_contender(kv[0][1])[2] != args.batches[0],
                                                 split_contender(kv[0][1])[2], kv[1][0])):
            library, _, backend = label.partition(" ")
            mode, policy, batch = split_contender(name)
            shown = backend or ("torch" if library == "transformers" else "-")
            lines.append(f"| {library} | {shown} "
                         f"| {mode} | {policy} | {batch} | {batch / seconds:.2f} "
                         f"| {1000 * seconds:.1f} | {diff:.1e} |")
        lines.append("")
        big, one = max(args.batches), min(args.batches)
        ours = {b: {bk: fastest(results, f"zoo {bk}", b) for bk in args.backends}
                for b in args.batches}
        zoo_best = {b: min(v for v in ours[b].values() if v[0]) for b in args.batches}
        torch_time = fastest(results, "transformers", big)[0]
        ort_time = fastest(results, "onnxruntime", one)[0]
        for backend in args.backends:
            hub = fastest(results, f"keras-hub {backend}", big)[0]
            if hub:
                summary.append((f"{family} forward vs keras-hub {backend}, batch {big}",
                                target_cell(hub / ours[big][backend][0], 1.05)))
        summary.append((f"{family} forward vs transformers (torch), batch {big}",
                        target_cell(torch_time / zoo_best[big][0], 1.3)))
        if ort_time:
            summary.append((f"{family} batch-{one} latency, zoo / ONNX Runtime",
                            target_cell(zoo_best[one][0] / ort_time, 1.0, lower_is_better=True)))
        if args.bf16 and "tensorflow" in args.backends:
            hub = fastest(results, "keras-hub tensorflow", big)[0]
            bf16 = fastest(results, "zoo tensorflow", big, "bfloat16")[0]
            mixed = fastest(results, "zoo tensorflow", big, "mixed_bfloat16")[0]
            if hub and bf16:
                summary.append((f"{family} zoo bfloat16 forward vs keras-hub float32 "
                                f"(tensorflow), batch {big}", target_cell(hub / bf16, 1.6)))
            if mixed and bf16:
                summary.append((f"{family} zoo bfloat16 weights vs zoo mixed_bfloat16 forward "
                                f"(tensorflow), batch {big}", target_cell(mixed / bf16)))
    return lines, summary
