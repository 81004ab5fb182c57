"""`zoo benchmark generate`: greedy text generation, tokens/s, zoo with its key/value cache
against zoo without it, transformers, keras-hub and zoo's export (issue #52).

    zoo benchmark generate [--batches 1 8] [--repeats 5]       (also part of `zoo benchmark all`)
    KERAS_BACKEND=jax python -m zoo_benchmarks.generate --device gpu --out gen_gpu.json

The workload: a 64-token prompt of random ids per row, 128 new tokens, greedy, at GPT-1's size
(12 layers, 768 wide, 12 heads, 40,478 tokens, 512 positions), random weights. Every contender
is made to write exactly 128 tokens (GPT-1 has no end-of-text token; transformers' GPT-2 gets
one, id 0, held off by `min_new_tokens`), and the count is checked. zoo, its export and
transformers' OpenAIGPTLMHeadModel load the same weights (zoo's, written as a transformers
checkpoint), so their greedy ids are compared too; transformers' GPT2LMHeadModel and
keras-hub's GPT2CausalLM are GPT-2 at GPT-1's size (the same layers, width, heads and
vocabulary; keras-hub has no GPT-1), on their own random weights.

Each library and backend runs in its own worker process (workers.WorkerProcess, with
generate_contenders.worker as its entry), started one after the other: each warms up
alone, and its first call (tracing and compiling included) is the "first call" column. The
parent then asks the workers in turn for one timed call each, a short pause between two, as
`models` does, so that a drift in machine load falls on all of them alike. No thread settings
are forced: each library runs with its own defaults, as in the other benchmarks. The export's
worker imports only tensorflow and tensorflow_text (and numpy), as a server would.

Without TensorFlow (the GPU machine: JAX and torch only) the module runs zoo on JAX, keras-hub
on JAX and transformers on torch (CUDA with `--device gpu`); zoo's models import without
TensorFlow.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from zoo_benchmarks.common import child_environment, target_cell
from zoo_benchmarks.generate_contenders import (
    EXPORT_MODES,
    GPT1,
    NO_CACHE,
    TINY,
    TRANSFORMERS_MODES,
)
from zoo_benchmarks.gpu import device_name
from zoo_benchmarks.workers import PAUSE, WorkerProcess

_ENTRY = "import zoo_benchmarks.generate_contenders as g; g.worker()"
_PREPARE = "import zoo_benchmarks.generate_contenders as g; g.prepare_main()"

# === The parent: workers, alternated timing, the table ===


def _workers(args):
    """(library, backend, modes) of the worker processes to start, in order."""
    plan = []
    for backend in args.backends:
        modes = ["graph", "xla"] if backend == "tensorflow" else ["jit"]
        # Without the cache, zoo on TensorFlow's graph only: on 2 CPU cores a call costs as
        # much as every cached contender's together, and on JAX every step's longer prefix
        # is a new shape to compile.
        plan.append(("zoo", backend, modes + ["graph" + NO_CACHE] * (backend == "tensorflow")))
        plan.append(("keras-hub", backend, modes))
    plan.append(("transformers", None, list(TRANSFORMERS_MODES)))
    if args.export:
        plan.append(("export", None, list(EXPORT_MODES)))
    return plan


def _has_cache(library, mode):
    return not (mode.endswith(NO_CACHE) or mode in ("OpenAIGPTLMHeadModel", EXPORT_MODES[1]))


def measure(args, progress=print, on_rows=None):
    """Rows (dicts) of every contender at every batch: library, backend, mode, cache, batch,
    seconds (median), first (the first call's seconds), tokens_per_s, new_tokens (per row,
    or None where the output does not say), same_as_openai_gpt (rows whose greedy ids equal
    OpenAIGPTLMHeadModel's, for the contenders on the same weights). `on_rows(rows)` is
    called after each batch size with the rows so far (a run cut short keeps them)."""
    size = dict(TINY if args.tiny else GPT1)
    uncached_batches = args.uncached_batches or [min(args.batches)]
    backend = "tensorflow" if "tensorflow" in args.backends else args.backends[0]
    # On a GPU, JAX takes only what it uses: the torch worker shares the device.
    settings = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if args.device == "gpu" else {}
    env = child_environment(TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND=backend, **settings)
    rows = []
    with tempfile.TemporaryDirectory() as root:
        progress(f"  preparing the weights and prompts ({'tiny' if args.tiny else 'GPT-1'}"
                 f"{', and the export' if args.export else ''})")
        proc = subprocess.run(
            [sys.executable, "-c", _PREPARE,
             json.dumps([root, size, sorted(set(args.batches) | set(uncached_batches)),
                         args.prompt_length, args.export])],
            capture_output=True, text=True, env=env)
        if proc.returncode:
            raise RuntimeError(f"preparing the generate benchmark failed:\n{proc.stderr[-4000:]}")
        spec = dict(root=root, kind="generate", size=size, batches=args.batches,
                    uncached_batches=uncached_batches, new_tokens=args.new_tokens,
                    device="cuda" if args.device == "gpu" else "cpu")
        workers = []
        try:
            for library, backend, modes in _workers(args):
                progress(f"  starting {library}{' ' + backend if backend else ''} "
                         f"({', '.join(modes)}): first calls")
                try:
                    workers.append(WorkerProcess(library, backend, dict(spec, modes=modes),
                                                 entry=_ENTRY, **settings))
                except RuntimeError as error:
                    if not args.keep_going:
                        raise
                    progress(f"  {library} {backend or ''} left out: {str(error)[-600:]}")
            for batch in sorted(set(args.batches) | set(uncached_batches)):
                rows += _time_batch(workers, batch, args, progress,
                                    os.path.isdir(os.path.join(root, "hf")))
                if on_rows:
                    on_rows(rows)
        finally:
            for w in workers:
                w.close()
    return rows


def _time_batch(workers, batch, args, progress, same_weights):
    """Rows of one batch size; `same_weights`: whether OpenAIGPTLMHeadModel has zoo's weights
    (then zoo's greedy ids are compared with its)."""
    calls = [(w, name) for w in workers for name in w.names
             if int(name.rsplit(" ", 1)[1]) == batch]
    counts = {(w, name): args.repeats if _has_cache(w.library, name.rsplit(" ", 1)[0])
              else args.uncached_repeats for w, name in calls}
    times = {key: [] for key in calls}
    progress(f"  batch {batch}: {len(calls)} contenders")
    failed = set()

    def ask(w, op, name):
        """The worker's answer, or None where it died and --keep-going leaves it out."""
        if w in failed:
            return None
        try:
            return w.ask(op, name)
        except RuntimeError as error:
            if not args.keep_going:
                raise
            failed.add(w)
            progress(f"  {w.label} left out: {str(error)[-600:]}")
            return None

    for r in range(max(counts.values(), default=0)):
        for w, name in calls:
            if r < counts[(w, name)]:
                time.sleep(PAUSE)
                answer = ask(w, "time", name)
                if answer:
                    times[(w, name)].append(answer["seconds"])
    outputs = {key: (ask(key[0], "output", key[1]) or {}).get("output") for key in calls}
    firsts = {key: (ask(key[0], "first", key[1]) or {}).get("seconds") for key in calls}
    calls = [(w, name) for w, name in calls if w not in failed]
    times = {key: times[key] for key in calls}
    reference = next((outputs[(w, n)] for w, n in calls
                      if n.startswith("OpenAIGPTLMHeadModel ")), None) if same_weights else None
    rows = []
    for (w, name), seconds in times.items():
        mode = name.rsplit(" ", 1)[0]
        output = outputs[(w, name)]
        if w.library == "export":
            new = output if mode == "serving_generate" else None
        else:
            new = [len(row) for row in output]
        same = None
        if reference is not None and w.library == "zoo":
            same = sum(a == b for a, b in zip(output, reference))
        median = statistics.median(seconds)
        backend = w.label.partition(" ")[2] or ("torch" if w.library == "transformers" else
                                                "tensorflow")
        rows.append(dict(library=w.library, backend=backend, mode=mode,
                         cache=_has_cache(w.library, mode), batch=batch, seconds=median,
                         first=firsts[(w, name)], repeats=len(seconds),
                         tokens_per_s=args.new_tokens * batch / median, new_tokens=new,
                         same_as_openai_gpt=same))
    return rows


_MODELS = {"GPT2LMHeadModel": "GPT-2 (GPT-1's size)", "keras-hub": "GPT-2 (GPT-1's size)"}


def table(rows, new_tokens):
    """Markdown rows, batch by batch, fastest first."""
    lines = ["| library | model | backend | mode | KV cache | batch | tokens/s | s per call "
             "| first call (s) | new tokens per row | greedy ids = OpenAIGPT's |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in sorted(rows, key=lambda r: (r["batch"], -r["tokens_per_s"])):
        model = _MODELS.get(row["mode"], _MODELS.get(row["library"], "GPT-1"))
        counts = row["new_tokens"]
        exact = ("n/a" if counts is None else
                 str(new_tokens) if set(counts) == {new_tokens} else ", ".join(map(str, counts)))
        same, batch = row["same_as_openai_gpt"], row["batch"]
        lines.append(
            f"| {row['library']} | {model} | {row['backend']} | {row['mode']} | "
            f"{'yes' if row['cache'] else 'no'} | {row['batch']} | {row['tokens_per_s']:,.1f} | "
            f"{row['seconds']:.2f} | {row['first']:.1f} | {exact} | "
            f"{'-' if same is None else f'{same}/{batch}'} |")
    return lines


def summary(rows):
    """(comparison, ratio cell) against issue #52's targets."""
    def rate(batch, **match):
        found = [r["tokens_per_s"] for r in rows if r["batch"] == batch
                 and all(r[k] == v for k, v in match.items())]
        return max(found) if found else None

    out = []
    for batch in sorted({r["batch"] for r in rows}):
        ours = rate(batch, library="zoo", cache=True)
        gpt2 = rate(batch, mode="GPT2LMHeadModel")
        if ours and gpt2:
            out.append((f"generate tokens/s, batch {batch}: zoo with the cache (fastest) vs "
                        "transformers' GPT-2 with its cache (#52)", target_cell(ours / gpt2, 1.0)))
        for backend in sorted({r["backend"] for r in rows if r["library"] == "keras-hub"}):
            zoo_here = rate(batch, library="zoo", cache=True, backend=backend)
            hub = rate(batch, library="keras-hub", backend=backend)
            if zoo_here and hub:
                out.append((f"generate tokens/s, batch {batch}: zoo with the cache vs "
                            f"keras-hub GPT2CausalLM ({backend}; #52)",
                            target_cell(zoo_here / hub, 1.0)))
        new, old = (rate(batch, mode=mode) for mode in EXPORT_MODES)
        if new and old:
            out.append((f"generate tokens/s, batch {batch}: export serving_generate (cache) vs "
                        "serving_default before #52 (no cache; #52)",
                        target_cell(new / old, 5.0)))
        uncached = rate(batch, library="zoo", cache=False)
        if ours and uncached:
            out.append((f"generate tokens/s, batch {batch}: zoo with the cache vs without",
                        target_cell(ours / uncached)))
        gpt1 = rate(batch, mode="OpenAIGPTLMHeadModel")
        if ours and gpt1:
            out.append((f"generate tokens/s, batch {batch}: zoo with the cache vs transformers' "
                        "OpenAIGPTLMHeadModel (no cache)", target_cell(ours / gpt1)))
    return out


def describe(args, command="zoo benchmark generate"):
    """The section's heading and its account of the workload."""
    size = TINY if args.tiny else GPT1
    new = args.new_tokens
    zoo_modes = []
    if "tensorflow" in args.backends:
        zoo_modes.append("TensorFlow (`compile=\"graph\"`: tf.function; `\"xla\"`: the same "
                         "with jit_compile), with the cache and, in graph mode, without it "
                         "(`use_cache=False`, which runs the whole prefix every step)")
    if "jax" in args.backends:
        zoo_modes.append("JAX (`compile=\"graph\"`: jax.jit) with the cache")
    text = [
        f"Command: `{command} --repeats {args.repeats}` (batches "
        f"{', '.join(map(str, sorted(args.batches)))}; a {args.prompt_length}-token prompt per "
        f"row, random ids; {new} new tokens, greedy; "
        f"{'--tiny, ' if args.tiny else 'GPT-1: '}{size['num_layers']} layers, "
        f"{size['hidden_dim']} wide, {size['num_heads']} heads, {size['vocabulary_size']:,} "
        f"tokens, {size['max_sequence_length']} positions; random weights; float32"
        f"{'; torch on CUDA, JAX on the GPU' if args.device == 'gpu' else ''}). zoo: "
        "`zoo.generation.Generator(model, compile=...).generate(ids, max_new_tokens=...)` on "
        f"{' and '.join(zoo_modes)}.",
        "transformers: `GPT2LMHeadModel` (GPT-2 at GPT-1's size, random weights, its "
        "cache) and `OpenAIGPTLMHeadModel` (no cache; "
        f"{'zoo' if args.export or 'tensorflow' in args.backends else 'random'}'s weights), "
        f"`generate(do_sample=False, max_new_tokens={new}, min_new_tokens={new})` in eager "
        "torch (GPT-2's end-of-text token is id 0, held off by `min_new_tokens`). keras-hub: "
        "`GPT2CausalLM` at GPT-1's size (random weights, `compile(sampler=\"greedy\")`) on "
        "token ids (no preprocessor): the prompt in a buffer of prompt + new tokens, "
        "`generate(..., stop_token_ids=None)`; on TensorFlow without XLA (Keras' default on a "
        "CPU-only machine) and with it (`compile(jit_compile=True)`)."]
    if args.export:
        text.append(
            "The export: the SavedModel of a `gpt1/pretrain` task on zoo's model (its BPE "
            "learnt to the same vocabulary size on random words; prompts of words that are one "
            "token each, the same length), loaded with tf.saved_model.load in a process that "
            "imports only tensorflow and tensorflow_text: `serving_generate` (the cache, "
            "greedy) and, in another SavedModel of the same model, the `serving_default` zoo "
            "served before #52 (kept in zoo_benchmarks/generate_contenders.py: no cache, the "
            f"model over the whole {size['max_sequence_length']}-position buffer every step).")
    uncached = ", ".join(map(str, args.uncached_batches or [min(args.batches)]))
    text.append(
        f"Every contender writes exactly {new} tokens a row (the column says what each "
        "returned; the old signature returns text only). Each library and backend runs in "
        "its own process with its own thread defaults; its first call (tracing and "
        "compilation included) is timed alone; then the parent asks the processes in turn "
        f"for one timed call each: the median of {args.repeats} calls with a cache, of "
        f"{args.uncached_repeats} without (batch {uncached} only). tokens/s = new tokens x "
        "batch / seconds a call. Greedy ids: the rows where zoo's ids equal "
        "OpenAIGPTLMHeadModel's on the same weights.")
    return ["## Generation: greedy tokens/s, zoo with the cache vs transformers, keras-hub and "
            "the export", "", " ".join(text), ""]


def section_generate(args, progress=print):
    """`zoo benchmark generate` (and its part of `all`): (markdown lines, target summary)."""
    args = _with_defaults(args)
    rows = measure(args, progress)
    return describe(args) + table(rows, args.new_tokens) + [""], summary(rows)


def _with_defaults(args):
    """`all` has none of generate's own flags: their defaults."""
    import importlib.util

    defaults = dict(new_tokens=8 if args.tiny else 128, prompt_length=16 if args.tiny else 64,
                    uncached_batches=None, uncached_repeats=1, device="cpu", keep_going=False,
                    export=None)
    for key, value in defaults.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)
    if args.export is None:  # the export needs TensorFlow (its worker, and writing it)
        args.export = ("tensorflow" in args.backends
                       and importlib.util.find_spec("tensorflow") is not None)
    return args


def _arguments(parser):
    """generate's own flags, as zoo_cli/benchmark.py gives `zoo benchmark generate` them
    (tests/test_benchmark.py holds the two equal)."""
    parser.add_argument("--new-tokens", type=int, default=None,
                        help="new tokens per row (default 128; 8 with --tiny)")
    parser.add_argument("--prompt-length", type=int, default=None,
                        help="prompt tokens per row (default 64; 16 with --tiny)")
    parser.add_argument("--uncached-batches", nargs="+", type=int, default=None,
                        help="batch sizes of the contenders without a cache (default: the "
                             "smallest of --batches)")
    parser.add_argument("--uncached-repeats", type=int, default=1,
                        help="timed calls of each contender without a cache")
    parser.add_argument("--export", action=argparse.BooleanOptionalAction, default=None,
                        help="time zoo's export (default: where TensorFlow is a backend)")


# The flags of `python -m zoo_benchmarks.generate` that `zoo benchmark generate` has not.
STANDALONE_FLAGS = ("--device", "--keep-going", "--no-keep-going", "--out")


def parser():
    """The command line of `python -m zoo_benchmarks.generate`."""
    parser = argparse.ArgumentParser(prog="python -m zoo_benchmarks.generate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8],
                        help="batch sizes (those without a cache: the smallest)")
    parser.add_argument("--repeats", type=int, default=5,
                        help="timed calls or passes per contender (the median is reported)")
    parser.add_argument("--backends", nargs="+", choices=("tensorflow", "jax"), default=None,
                        help="Keras backends of zoo and keras-hub (default: jax with --device "
                             "gpu, else tensorflow and jax)")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu",
                        help="gpu: torch on CUDA, JAX on its GPU without preallocating")
    parser.add_argument("--tiny", action="store_true",
                        help="two-layer models instead of the paper's sizes: checks the "
                             "benchmark itself; the figures mean nothing")
    parser.add_argument("--keep-going", action=argparse.BooleanOptionalAction, default=None,
                        help="leave out a library that fails to start (default: with "
                             "--device gpu)")
    parser.add_argument("--out", help="write the rows and the ratios to this JSON file")
    _arguments(parser)
    return parser


def main(argv=None):
    """`python -m zoo_benchmarks.generate`: the benchmark without `zoo` (no TensorFlow needed
    on JAX); prints the table and the ratios, and with --out writes them as JSON."""
    args = parser().parse_args(argv)
    if args.backends is None:
        args.backends = ["jax"] if args.device == "gpu" else ["tensorflow", "jax"]
    if args.keep_going is None:
        args.keep_going = args.device == "gpu"
    if args.device == "gpu" and args.uncached_batches is None:
        args.uncached_batches = list(args.batches)
    args = _with_defaults(args)
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731
    started = time.time()
    command = " ".join(["python -m zoo_benchmarks.generate",
                        *(sys.argv[1:] if argv is None else argv)])

    def write(rows):  # --out, after every batch size: a run cut short keeps its rows
        if not args.out:
            return
        result = {"command": command, "device": device_name(), "cpu": _cpu(),
                  "started": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
                  "seconds": time.time() - started, "versions": _versions(), "rows": rows,
                  "ratios": summary(rows)}
        with open(args.out + ".tmp", "w", encoding="utf-8") as file:
            json.dump(result, file, indent=1)
        os.replace(args.out + ".tmp", args.out)

    rows = measure(args, progress, on_rows=write)
    write(rows)
    print("\n".join(describe(args, "python -m zoo_benchmarks.generate") + table(
        rows, args.new_tokens)))
    print()
    for what, value in summary(rows):
        print(f"{what}: {value}")
    return 0 if rows else 1


def _cpu():
    """The CPU's model name (/proc/cpuinfo) and its core count."""
    name = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as file:
            name = next((line.split(":", 1)[1].strip() for line in file
                         if line.startswith("model name")), name)
    except OSError:
        pass
    return f"{name}, {os.cpu_count()} cores"


def _versions():
    from importlib import metadata

    found = {}
    for package in ("tensorflow", "keras", "keras-hub", "jax", "jaxlib", "torch",
                    "transformers"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


if __name__ == "__main__":
    sys.exit(main())
