"""`zoo benchmark bucketing`: fine-tuning examples/s, dynamic padding vs pad-to-length."""

import os
import tempfile
import time

import zoo_tasks
from zoo import config as config_lib
from zoo.data.samples import LAYOUT, write_samples
from zoo.tokenizers import train_vocabulary
from zoo_benchmarks.common import preset_for, target_cell


def section_bucketing(args, progress=print):
    """Fine-tuning throughput on the sample data's length mix, dynamic padding vs fixed.

    The same model, optimizer and batches; only `data.pad_to_multiple_of` differs (0: every
    batch padded to --sequence-length). The first steps of each setting trace and are not
    timed; each bucket width traces once more (the TF trainer relaxes shapes), so the timed
    steps start after one pass over --steps warm-up batches.
    """
    import keras

    preset = preset_for(args)
    # `zoo benchmark all --tiny` checks the section on one task.
    names = getattr(args, "tasks", None) or (
        ["glue/mrpc"] if getattr(args, "tiny", False) else ["glue/mrpc", "glue/sst2"])
    steps, multiple = getattr(args, "steps", 4), getattr(args, "multiple", 16)
    batch_size = args.batch_size or 32
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_samples(os.path.join(tmp, "samples"))
        files = [os.path.join(tmp, "samples", LAYOUT[t]["train"]) for t in names]
        vocab = os.path.join(tmp, "vocab")
        train_vocabulary(files, size=2000, kind="wordpiece", out=vocab)
        for name in names:
            data_dir = os.path.dirname(os.path.join(tmp, "samples", LAYOUT[name]["train"]))
            rates, widths = {}, {}
            for pad in (0, multiple):
                progress(f"  {name}, data.pad_to_multiple_of={pad}")
                config = config_lib.resolve(f"bert/{name.replace('/', '_')}", [
                    f"model.preset={preset}", f"model.vocabulary={vocab}",
                    f"data.dir={data_dir}", f"data.sequence_length={args.sequence_length}",
                    f"data.pad_to_multiple_of={pad}", f"train.batch_size={batch_size}"])
                task = zoo_tasks.create(name, config, check_data=False)
                keras.utils.set_random_seed(0)
                model = task.build_model()
                task.compile(model, total_steps=1000, warmup_steps=10)
                stream = task.dataset("train", repeat=True)
                model.fit(stream, steps_per_epoch=steps, epochs=1, verbose=0)  # warm-up
                start = time.perf_counter()
                model.fit(stream, steps_per_epoch=steps, epochs=1, verbose=0)
                rates[pad] = steps * batch_size / (time.perf_counter() - start)
                widths[pad] = sorted({int(x["token_ids"].shape[-1])
                                      for x, *_ in stream.take(2 * steps)})
                keras.backend.clear_session()
            rows.append((name, rates, widths))
    out = [
        f"## Dynamic padding: fine-tuning examples/s, pad to the batch's longest vs pad to "
        f"{args.sequence_length}", "",
        f"Command: `zoo benchmark bucketing --steps {steps}` ({preset}, batch {batch_size}, "
        f"`data.sequence_length={args.sequence_length}`, the sample training files, a "
        "2,000-token WordPiece vocabulary learnt on them; the same model, optimizer and "
        f"batches, only `data.pad_to_multiple_of` 0 vs {multiple}; {steps} warm-up steps, then "
        f"{steps} timed steps per setting, one setting after the other). The gain is the "
        "padding removed: the sample sentences are short; real GLUE text is longer, so expect "
        "less there. The exported SavedModels always pad each request batch to its longest "
        "sequence (rounded up to 16).", "",
        f"| task | pad to {args.sequence_length} examples/s | pad to longest (multiple of "
        f"{multiple}) examples/s | ratio | widths seen |", "| --- | --- | --- | --- | --- |"]
    summary = []
    for name, rates, widths in rows:
        ratio = rates[multiple] / rates[0]
        out.append(f"| {name} (sample) | {rates[0]:.1f} | {rates[multiple]:.1f} | {ratio:.2f} "
                   f"| {', '.join(map(str, widths[multiple]))} |")
        summary.append((f"fine-tuning examples/s, dynamic padding vs pad-to-"
                        f"{args.sequence_length}, {name} sample", target_cell(ratio, 2.0)))
    return out + [""], summary
