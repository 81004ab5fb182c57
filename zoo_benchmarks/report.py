"""`run`: the chosen benchmarks in turn, each printing its tables; `all` also writes the file.

For `zoo benchmark all`, the markdown file (--out) holds the machine, the versions, the command
and every ratio against its target, then every benchmark's tables.
"""

import contextlib
import datetime
import os
import platform
import sys
import tempfile
import time

from zoo import files, hardware
from zoo.files import write_text
from zoo_benchmarks.bucketing import section_bucketing
from zoo_benchmarks.common import BACKENDS, FAMILIES
from zoo_benchmarks.data import section_data
from zoo_benchmarks.embeddings import section_embeddings
from zoo_benchmarks.finetune import section_finetune
from zoo_benchmarks.generate import section_generate
from zoo_benchmarks.journey import section_journey
from zoo_benchmarks.merge import merge
from zoo_benchmarks.models import section_models
from zoo_benchmarks.pretrain import section_pretrain
from zoo_benchmarks.serving import section_serving
from zoo_benchmarks.tokenizers import section_tokenizers
from zoo_benchmarks.weights import prepare_in_subprocess
from zoo_benchmarks.workers import close_pool


def _machine():
    """One line on the CPU and one on the library versions."""
    from importlib import metadata

    cpu, _, flags = hardware.cpu()
    flags = flags or set()
    memory = ""
    with contextlib.suppress(OSError, ValueError):
        pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        memory = f", {pages / 2 ** 30:.0f} GiB RAM"
    # The instructions the figures depend on (oneDNN and XLA pick kernels by them): int8 and
    # bfloat16 speed-ups need VNNI / avx512_bf16 / AMX; AVX2-only machines rank differently.
    isa = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16",
                       "avx512_fp16", "amx_bf16", "amx_int8") if f in flags]
    absent = [f for f in ("avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
              if f not in flags]
    versions = []
    for package in ("tensorflow", "tensorflow-text", "keras", "keras-hub", "jax", "torch",
                    "transformers", "onnxruntime"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    return (f"{cpu}, {os.cpu_count()} CPU cores{memory}, no GPU; instructions: "
            f"{', '.join(isa) or 'no avx2'}{'; without ' * bool(absent)}{', '.join(absent)}; "
            f"Python {platform.python_version()}",
            ", ".join(versions))


def _print_section(lines, summary):
    print("\n".join(lines))
    if summary:
        print("Ratios against their targets (issues #10 and #53):")
        for what, value in summary:
            print(f"  {what}: {value}")
    sys.stdout.flush()


def run(args):
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    sections = {"models": section_models, "finetune": section_finetune,
                "pretrain": section_pretrain, "bucketing": section_bucketing,
                "serving": section_serving, "tokenizers": section_tokenizers,
                "data": section_data, "generate": section_generate,
                "journey": section_journey, "embeddings": section_embeddings}
    only = getattr(args, "only", None)
    chosen = (only or list(sections)) if args.target == "all" else [args.target]
    started = datetime.datetime.now()
    outputs = []
    with tempfile.TemporaryDirectory() as root:
        args.root = root
        training = {"finetune", "pretrain"} & set(chosen)
        if {"models", *training} & set(chosen):
            families = list(args.families) if "models" in chosen else []
            families += ["bert"] if training and "bert" not in families else []
            batches = sorted(set(getattr(args, "batches", []))
                             | ({args.batch_size or 8} if training else set()))
            progress(f"preparing weights and inputs for {', '.join(families)}")
            prepare_in_subprocess(root, families, batches, args.sequence_length, args.tiny)
        # --tiny checks the benchmark, not the speed: `models`, `finetune` and `pretrain` share
        # one worker process per library and backend (workers.time_family's pool).
        args.worker_pool = {} if getattr(args, "tiny", False) else None
        try:
            for i, name in enumerate(chosen):
                progress(f"benchmark {name}")
                section_started = time.perf_counter()
                lines, summary = sections[name](args, progress)
                progress(f"benchmark {name}: {time.perf_counter() - section_started:.0f} s")
                _print_section(lines, summary)
                outputs.append((lines, summary))
                if args.worker_pool and not {"models", "finetune", "pretrain"} & set(
                        chosen[i + 1:]):
                    close_pool(args.worker_pool)  # no later section needs them
        finally:
            if args.worker_pool:
                close_pool(args.worker_pool)
    if args.target != "all":
        return 0
    machine, versions = _machine()
    minutes = (datetime.datetime.now() - started).total_seconds() / 60
    command = "zoo benchmark all" + "".join(
        f" --{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in sorted(vars(args).items())
        if k in _DEFAULTS and v != _DEFAULTS[k] and not isinstance(v, bool)) + " --no-bf16" * (
        not args.bf16) + " --tiny" * args.tiny
    doc = ["# Benchmarks", "",
           f"Written by `{command}` on {started:%Y-%m-%d} in {minutes:.0f} minutes; do not "
           "edit by hand, run the command again. Every table compares zoo with another library "
           "on the same machine in the same run, on the same weights and inputs; ratios > 1 "
           "mean zoo is faster. Absolute rates on a shared machine drift from run to run; the "
           "ratios, measured in alternation, are the figures to read.", "",
           f"Machine: {machine}.", "", f"Versions: {versions}.", "",
           "## Targets (issue #10)", "", "| comparison | ratio |", "| --- | --- |"]
    doc += [f"| {what} | {value} |" for _, summary in outputs for what, value in summary]
    doc.append("")
    for lines, _ in outputs:
        doc += lines + [""]
    if only and files.exists(args.out):  # the other sections stay as they were measured
        with files.open(args.out, encoding="utf-8") as file:
            old = file.read()
        write_text(args.out, merge(old, outputs, machine, f"{started:%Y-%m-%d}", command))
        progress(f"merged {', '.join(only)} into {args.out}")
        return 0
    write_text(args.out, "\n".join(doc).rstrip() + "\n")
    progress(f"wrote {args.out}")
    return 0


# Options of `all` left out of the command line written into the file when at their default.
_DEFAULTS = {"families": list(FAMILIES), "batches": [8, 1], "backends": list(BACKENDS),
             "repeats": 5, "sequence_length": 128, "batch_size": None, "bf16": True,
             "tiny": False, "corpus_mb": None, "workers": None, "only": None,
             "checkpoint": None, "train_file": None, "dev_file": None,
             "embeddings_checkpoint": None, "embeddings_texts_file": None, "lora_rank": None}
