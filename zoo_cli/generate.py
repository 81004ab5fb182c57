"""`zoo generate`: text from a language model's run, or from its export, streamed or as JSON lines.

  zoo generate --run-dir runs/gpt --prompt "the film is" --max-new-tokens 20
  zoo generate --run-dir runs/gpt --prompt "the film is" --top-p 0.9 --temperature 0.8 --seed 1
  zoo generate --run-dir runs/gpt --prompt "a movie" --num-beams 4 --length-penalty 0.6
  zoo generate --run-dir runs/gpt --input prompts.jsonl --output completions.jsonl
  zoo generate --saved-model exports/gpt --prompt "the film is" --top-k 40 --seed 1
  zoo generate --model gpt1_openai --prompt "the film is" --max-new-tokens 20   # no run

--run-dir: a gpt1/pretrain or bert/pretrain_ltr run, in this process (zoo.generation's
Generator, with the key/value cache); --model: a language model by name or folder (gpt1_openai,
hf://ORG/NAME of an OpenAIGPTLMHeadModel, ...), the same way. --saved-model: its `zoo export`
(BASE/N, or BASE for the highest version), through the `serving_generate` signature as TF
Serving runs it; an option the export cannot take per request (beams, repetition penalty, ...)
is an error. --input: JSON lines, one {"prompt": TEXT} a line ('-' for stdin). Without --output,
each prompt is printed, then its completion (from a run directory, streamed as it is decoded);
with it, one JSON object a prompt ({"prompt", "completion", "new_tokens"}; "completions" and a
list of counts with --num-return-sequences above 1) goes to that file, written atomically. With
--seed S, row r of the input (prompt i, return sequence j, r = i * num_return_sequences + j)
samples with the seed S + r, whatever --batch-size, so the run and its export draw the same
tokens. GPT-1 has no end-of-text token: a row stops at --max-new-tokens or after a --stop string
(docs/generate.md).
"""

import json
import sys

from zoo_cli.arguments import add_checkpoint, add_command, add_model, add_run_dir, load_model

# Options: (name, type, metavar, help). The names are zoo.generation.Generator.generate's and
# serving_generate's inputs; the flags are the names with dashes. Unset (None): the
# generator's default.
OPTIONS = (
    ("max_new_tokens", int, "N", "new tokens at most (default 32)"),
    ("min_new_tokens", int, "N", "no stop before this many new tokens (default 0)"),
    ("temperature", float, "T", "sample from softmax(logits / T), T > 0"),
    ("top_k", int, "K", "sample among the K most likely tokens"),
    ("top_p", float, "P", "sample among the most likely tokens whose probability adds to P, "
     "in (0, 1]"),
    ("num_beams", int, "B", "beam search with this many beams (default 1: none)"),
    ("length_penalty", float, "X", "beam search: scores divided by length ** X (default 1.0)"),
    ("repetition_penalty", float, "X", "CTRL's penalty on the tokens already there (default "
     "1.0: none)"),
    ("no_repeat_ngram_size", int, "N", "never repeat an n-gram of this size (default 0: off)"),
    ("num_return_sequences", int, "N", "completions a prompt (default 1)"),
    ("seed", int, "S", "row r samples with seed S + r: the same tokens every time, run or export"),
)
# What serving_generate is given for an option left unset (GEN_SPEC: 0 = top-k off, 1.0 =
# top-p off; the temperature is used only while sampling).
SERVING_DEFAULTS = {"max_new_tokens": 32, "do_sample": 0, "temperature": 1.0, "top_k": 0,
                    "top_p": 1.0}
# Options an export may lack, and their values that ask nothing of it.
NEUTRAL = {"min_new_tokens": 0, "num_beams": 1, "length_penalty": 1.0,
           "repetition_penalty": 1.0, "no_repeat_ngram_size": 0, "return_prompt": False}
SIGNATURE = "serving_generate"


def register(subparsers):
    parser = add_command(subparsers, "generate", "text from a language model's run or export",
                         __doc__, run)
    source = parser.add_mutually_exclusive_group(required=True)
    add_run_dir(source, help="a language model's zoo train run (gpt1/pretrain, "
                "bert/pretrain_ltr)", required=False)
    source.add_argument("--saved-model", metavar="EXPORT", help="its zoo export: a version "
                        "directory (BASE/N), or BASE for its highest version")
    add_model(source, help="a language model by name or folder (gpt1_openai, hf://ORG/NAME, "
              "...)")
    prompts = parser.add_mutually_exclusive_group(required=True)
    prompts.add_argument("--prompt", action="append", metavar="TEXT",
                         help="a prompt (repeatable)")
    prompts.add_argument("--input", metavar="FILE.jsonl",
                         help='JSON lines, one {"prompt": TEXT} a line (\'-\' for stdin)')
    parser.add_argument("--output", metavar="FILE.jsonl", help="write one JSON object a "
                        "prompt here (atomically) instead of streaming text to the terminal")
    for name, kind, metavar, text in OPTIONS:
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None,
                            metavar=metavar, help=text)
    parser.add_argument("--do-sample", action="store_true", default=None,
                        help="sample (default: only if --temperature, --top-k or --top-p is "
                        "given; else greedy, or beam search with --num-beams)")
    parser.add_argument("--stop", action="append", default=[], metavar="TEXT",
                        help="stop a row once its new text contains TEXT, kept (repeatable)")
    parser.add_argument("--return-prompt", action="store_true", default=None,
                        help="the completions start with their prompt")
    parser.add_argument("--batch-size", type=int, default=8,
                        help="prompts generated together (default 8)")
    add_checkpoint(parser, help="--run-dir's model: best (falling back to final) or final")


def read_prompts(path):
    """The prompts of a JSON-lines file, one {"prompt": TEXT} a line; a bad line is a one-line
    error naming the file and the line."""
    from zoo_cli.predict import read_requests  # lazy: loads TensorFlow, as predict's

    prompts = []
    for number, request in read_requests(path):
        if set(request) != {"prompt"} or not isinstance(request["prompt"], str):
            raise ValueError(f'{path}, line {number}: expected {{"prompt": TEXT}}, found '
                             f"{json.dumps(request, ensure_ascii=False)[:80]}")
        prompts.append(request["prompt"])
    return prompts


def options_of(args):
    """The options given on the command line, by the generator's names (unset: left out)."""
    options = {name: getattr(args, name) for name, _, _, _ in OPTIONS}
    options.update(do_sample=args.do_sample, return_prompt=args.return_prompt)
    options = {name: value for name, value in options.items() if value is not None}
    if args.stop:
        options["stop_strings"] = tuple(args.stop)
    return options


class ExportGenerator:
    """An export's `serving_generate`, called in this process: `generate(prompts, **options)`
    gives (completions, new-token counts) a prompt, the options checked against the signature's
    inputs."""

    def __init__(self, saved_model):
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops the graph uses)

        from zoo_cli.predict import resolve_version  # lazy: as above

        self.path = resolve_version(saved_model)
        signatures = tf.saved_model.load(self.path).signatures
        if SIGNATURE not in signatures:
            raise ValueError(f"--saved-model {self.path}: no {SIGNATURE} signature (it has "
                             f"{', '.join(sorted(signatures))}); export a gpt1/pretrain or "
                             "bert/pretrain_ltr run with this version of zoo")
        self.function = signatures[SIGNATURE]
        self.specs = self.function.structured_input_signature[1]

    def inputs(self, prompts, options):
        """The signature's inputs for `prompts` (one a row) and `options` (checked as the
        generator checks them: the same one-line errors)."""
        import numpy as np

        from zoo.generation import Options  # lazy: loads Keras; `zoo --help` imports this

        options = dict(options)
        if options.get("do_sample") is None:  # as the generator: these options sample
            options["do_sample"] = any(options.get(name) is not None
                                       for name in ("temperature", "top_k", "top_p"))
        Options(**{k: v for k, v in options.items() if k != "return_prompt"})
        for name, value in options.items():
            if (("stop" if name == "stop_strings" else name) not in self.specs
                    and name not in ("do_sample", "seed", "num_return_sequences")
                    and value != NEUTRAL.get(name)):
                raise ValueError(f"--{name.replace('_', '-')}: {self.path}'s {SIGNATURE} does "
                                 f"not take it (its inputs: {', '.join(sorted(self.specs))}); "
                                 "generate from the run directory (--run-dir) instead")
        values = {**NEUTRAL, **SERVING_DEFAULTS, **options, "prompt": np.array(prompts, object)}
        values["do_sample"] = int(values["do_sample"])
        seed = options.get("seed")
        if seed is None:  # unseeded: a fresh draw each call, as the generator's
            seed = int(np.random.default_rng().integers(2 ** 31))
        values["seed"] = np.arange(len(prompts), dtype=np.int64) + seed  # row r: S + r
        values["stop"] = np.array(list(options.get("stop_strings", ())) or [""], object)
        missing = sorted(set(self.specs) - set(values))
        if missing:
            raise ValueError(f"--saved-model {self.path}: {SIGNATURE} needs "
                             f"{', '.join(missing)}, which zoo generate does not know")
        return {name: values[name] if spec.dtype.name == "string" else
                np.asarray(values[name], spec.dtype.as_numpy_dtype)
                for name, spec in self.specs.items()}

    def generate(self, prompts, **options):
        import tensorflow as tf

        count = options.pop("num_return_sequences", 1)
        rows = [prompt for prompt in prompts for _ in range(count)]
        try:
            outputs = self.function(**{name: tf.constant(value) for name, value in
                                       self.inputs(rows, options).items()})
        except tf.errors.InvalidArgumentError as error:  # the graph's checks: a bad option
            raise ValueError(f"--saved-model {self.path}: "
                             f"{error.message.strip().splitlines()[0]}") from None
        completions = [c.decode("utf-8", errors="replace")
                       for c in outputs["completion"].numpy().tolist()]
        counts = [int(n) for n in outputs["new_tokens"].numpy().tolist()]
        return [(completions[i * count:(i + 1) * count], counts[i * count:(i + 1) * count])
                for i in range(len(prompts))]


def run_generate(generator, prompts, **options):
    """(completions, new-token counts) a prompt from a run's `zoo.generation.Generator`.

    The prompts go in as ids, so that each row's count of new tokens is known; the text is
    decoded as the generator decodes it for text prompts."""
    ids = [[int(i) for i in row] for row in generator.tokenizer(list(prompts)).to_list()]
    with_prompt = options.pop("return_prompt", False)
    outputs = generator.generate(ids, **options)
    results = []
    for prompt, group in zip(ids, outputs):
        group = group if options.get("num_return_sequences", 1) > 1 else [group]
        results.append(([generator.decode(prompt + new if with_prompt else new)
                         for new in group], [len(new) for new in group]))
    return results


def record(prompt, completions, counts):
    """The JSON object of a prompt's output line."""
    if len(completions) == 1:
        return {"prompt": prompt, "completion": completions[0], "new_tokens": counts[0]}
    return {"prompt": prompt, "completions": completions, "new_tokens": counts}


def run(args):
    if args.batch_size < 1:
        raise ValueError(f"--batch-size {args.batch_size}: give 1 or more")
    prompts = args.prompt if args.input is None else read_prompts(args.input)
    options = options_of(args)
    if args.saved_model is not None:
        generate = ExportGenerator(args.saved_model).generate
    else:
        import zoo_tasks  # lazy: loads TensorFlow and Keras; `zoo --help` imports this module

        if args.model is not None:
            args.task, args.overrides = None, []
            generator = load_model(args).generator
        else:
            generator = zoo_tasks.load_run(args.run_dir, args.checkpoint).generator

        def generate(batch, **options):
            return run_generate(generator, batch, **options)

        if args.output is None and not options.get("return_prompt") and all(
                options.get(name, 1) == 1 for name in ("num_beams", "num_return_sequences")):
            for number, prompt in enumerate(prompts):  # streamed: pieces as they are decoded
                if args.seed is not None:  # row r: seed S + r, as in one call
                    options["seed"] = args.seed + number
                print(("\n" if number else "") + prompt, flush=True)
                for piece in generator.stream(prompt, **options):
                    print(piece, end="", flush=True)
                print(flush=True)
            return 0
    lines = []
    for start in range(0, len(prompts), args.batch_size):
        batch = prompts[start:start + args.batch_size]
        if options.get("seed") is not None:  # row r of the whole input: seed S + r
            options["seed"] = args.seed + start * options.get("num_return_sequences", 1)
        for prompt, (completions, counts) in zip(batch, generate(batch, **options)):
            if args.output is None:  # the prompt, then its completions
                print(("\n" if lines else "") + prompt, flush=True)
                for completion in completions:
                    print(completion, flush=True)
            lines.append(json.dumps(record(prompt, completions, counts), ensure_ascii=False))
    if args.output is not None:
        from zoo.files import write_text  # lazy: as above
        from zoo.storage import storage_operation  # lazy: as above

        with storage_operation("writing the completions", args.output):  # full, read-only
            write_text(args.output, "".join(line + "\n" for line in lines))
        print(f"completions of {len(lines)} prompts written to {args.output}", file=sys.stderr)
    return 0
