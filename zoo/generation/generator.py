"""`Generator`: text generation from a GPT-1 (or causal BERT) language model with a key/value
cache: greedy, sampled (temperature, top-k, top-p) or beam search, with transformers' logits
processors, stop tokens and strings, and streaming.

The whole loop is one compiled program (`zoo.generation.engine`, in keras.ops): prefill, then
`tf.while_loop` inside `tf.function` on TensorFlow (graph, or XLA with `compile="xla"`),
`lax.while_loop` inside `jax.jit` on JAX; PyTorch runs the same step eagerly in a host loop.
The loop runs on the host, one compiled step a call, only for what cannot be compiled:
streaming (`stream`) and stop strings (text matching), and `use_cache=False`. Prompts of a
batch are left-padded into one buffer of `bucket(longest prompt)` slots and the cache holds
`bucket(prompt + max_new_tokens)` slots (powers of two), so that a shape compiles once per
(batch, bucket) and a second call in the bucket reuses it; the options are tensors, so a new
temperature or seed does not compile again. Positions are per row, so a row of a
mixed-length batch gets what it gets alone.
"""

import dataclasses
import time

import keras
import numpy as np
from keras import ops

from zoo.generation import beam, engine, sampling
from zoo.generation.cache import CachedLM

_MIN_BUCKET = 16


def bucket(length):
    """The buffer size of `length` slots: the next power of two, at least 16.

    >>> bucket(1), bucket(16), bucket(17), bucket(192)
    (16, 16, 32, 256)
    """
    size = _MIN_BUCKET
    while size < length:
        size *= 2
    return size


@dataclasses.dataclass(frozen=True)
class Options:
    """What `Generator.generate` was asked for, checked (see `Generator.generate`)."""

    max_new_tokens: int = 32
    min_new_tokens: int = 0
    do_sample: bool = False
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    num_beams: int = 1
    length_penalty: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    stop_token_ids: tuple = ()
    stop_strings: tuple = ()
    num_return_sequences: int = 1
    seed: int | None = None

    def __post_init__(self):
        def fail(message):
            raise ValueError(f"generate: {message}")

        if self.max_new_tokens < 0:
            fail(f"max_new_tokens={self.max_new_tokens} is negative")
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            fail(f"min_new_tokens={self.min_new_tokens} is not in [0, max_new_tokens="
                 f"{self.max_new_tokens}]")
        sampler_options = {"temperature": self.temperature, "top_k": self.top_k,
                           "top_p": self.top_p}
        if not self.do_sample:
            given = [name for name, value in sampler_options.items() if value is not None]
            if given:
                fail(f"{', '.join(given)} apply only when sampling; pass do_sample=True or "
                     "drop them")
        if self.temperature is not None and not self.temperature > 0:
            fail(f"temperature={self.temperature} must be > 0 when sampling (for the most "
                 "likely token, sample with top_k=1 or use greedy decoding)")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            fail(f"top_p={self.top_p} is outside (0, 1]")
        if self.top_k is not None and self.top_k < 0:
            fail(f"top_k={self.top_k} is negative (0 turns top-k off)")
        if self.num_beams < 1:
            fail(f"num_beams={self.num_beams} must be >= 1")
        if self.num_beams > 1 and self.do_sample:
            fail("beam search does not sample: pass num_beams=1 with do_sample=True, or "
                 "num_beams > 1 alone")
        if self.num_beams > 1 and self.stop_strings:
            fail("stop_strings work with greedy decoding and sampling, not with beam search; "
                 "use stop_token_ids")
        if self.num_beams == 1 and self.length_penalty != 1.0:
            fail("length_penalty applies only to beam search (num_beams > 1)")
        if not self.repetition_penalty > 0:
            fail(f"repetition_penalty={self.repetition_penalty} must be > 0")
        if self.no_repeat_ngram_size < 0:
            fail(f"no_repeat_ngram_size={self.no_repeat_ngram_size} is negative")
        if self.num_return_sequences < 1:
            fail(f"num_return_sequences={self.num_return_sequences} must be >= 1")
        if self.num_beams > 1 and self.num_return_sequences > self.num_beams:
            fail(f"num_return_sequences={self.num_return_sequences} is more than num_beams="
                 f"{self.num_beams}")
        if self.num_beams == 1 and not self.do_sample and self.num_return_sequences > 1:
            fail("greedy decoding gives one sequence a prompt: sample (do_sample=True) or "
                 "use beams for num_return_sequences > 1")


class Generator:
    """Generate text (or token ids) from a left-to-right language model.

    Args:
        model: a `GPTBackbone`, `GPTLMHeadModel` or `CausalLM` (GPT-1 or a causal BERT).
        tokenizer: the model's zoo tokenizer, for prompts given as text and for stop strings.
        compile: "graph" (TensorFlow's `tf.function`; `jax.jit` on JAX), "xla" (the same with
            XLA on TensorFlow) or None (eager; PyTorch always runs eagerly).

    Examples:
        >>> import zoo
        >>> from zoo.generation import Generator
        >>> model = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                           vocabulary_size=50)
        >>> generator = Generator(model)
        >>> ids = generator.generate([5, 6, 7], max_new_tokens=4)
        >>> len(ids), generator.generate([[5, 6, 7], [8]], max_new_tokens=4)[0] == ids
        (4, True)
    """

    def __init__(self, model, tokenizer=None, compile="graph"):
        if compile not in ("graph", "xla", None):
            raise ValueError(f"compile={compile!r} is not 'graph', 'xla' or None")
        self.lm = CachedLM(model, xla=compile == "xla")
        self.tokenizer = tokenizer
        self.compile = compile
        self.backend = keras.backend.backend()
        self.traces = 0  # how many times a program was traced (compiled); 0 eagerly
        self.last_stats = {}
        self._programs = {}

    # === The compiled programs ===

    def _program(self, name, fn, **static):
        """`fn(lm, *tensors, **static)` compiled as the backend allows, kept by name and
        `static`: `tf.function` over shapes of unknown size (one trace), `jax.jit` (one compile
        per shape, which the buckets keep few), eager on PyTorch (no autograd)."""
        key = (name,) + tuple(sorted(static.items()))
        if key not in self._programs:
            self._programs[key] = self._compile(fn, static)
        return self._programs[key]

    def _compile(self, fn, static):
        def traced(*args):
            self.traces += 1
            return fn(self.lm, *args, **static)

        if self.compile is None or self.backend == "torch":
            def eager(*args):
                if self.backend == "torch":
                    import torch  # no autograd graph while generating

                    with torch.no_grad():
                        return fn(self.lm, *args, **static)
                return fn(self.lm, *args, **static)
            return eager
        if self.backend == "tensorflow":
            import tensorflow as tf  # the TensorFlow backend's compiler

            kept = {}

            def call(*args):
                if "function" not in kept:
                    signature = tf.nest.map_structure(
                        lambda a: tf.TensorSpec([None] * len(a.shape), a.dtype), args)
                    kept["function"] = tf.function(traced, input_signature=signature,
                                                   jit_compile=self.compile == "xla")
                return kept["function"](*args)
            return call
        if self.backend == "jax":
            import jax  # the JAX backend's compiler

            variables = self.lm.variables

            def stateless(values, *args):
                with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                    return traced(*args)

            jitted = jax.jit(stateless)
            return lambda *args: jitted([v.value for v in variables], *args)
        raise ValueError(f"generation does not support the {self.backend!r} backend")

    def _tensors(self, structure):
        """Arrays (nested in tuples and dicts) as the backend's tensors."""
        if isinstance(structure, dict):
            return {k: self._tensors(v) for k, v in structure.items()}
        if isinstance(structure, tuple):
            return tuple(self._tensors(v) for v in structure)
        return ops.convert_to_tensor(structure)

    # === Prompts in, text out ===

    def _encode(self, prompts):
        """(list of id lists, is text, is one prompt) of the accepted prompt forms."""
        if isinstance(prompts, str):
            return self._tokenize([prompts]), True, True
        if isinstance(prompts, np.ndarray):
            prompts = prompts.tolist()
        prompts = list(prompts)
        if not prompts:
            return [], False, False
        if all(isinstance(p, str) for p in prompts):
            return self._tokenize(prompts), True, False
        if all(isinstance(p, (int, np.integer)) for p in prompts):
            return [[int(p) for p in prompts]], False, True
        if all(isinstance(p, (list, tuple, np.ndarray)) for p in prompts):
            return [[int(i) for i in p] for p in prompts], False, False
        raise ValueError("generate: prompts are a string, a list of strings, a list of token "
                         "ids, or a list of id lists")

    def _tokenize(self, texts):
        if self.tokenizer is None:
            raise ValueError("generate: text prompts need the model's tokenizer "
                             "(Generator(model, tokenizer=...))")
        ids = self.tokenizer(texts)
        return [[int(i) for i in row] for row in ids.to_list()]

    def decode(self, ids):
        """Text of one list of token ids."""
        if self.tokenizer is None:
            raise ValueError("generate: decoding text needs the model's tokenizer")
        if not ids:
            return ""
        return self.tokenizer.detokenize([list(ids)])[0].numpy().decode("utf-8", "replace")

    def _check_lengths(self, prompts, options):
        limit = self.lm.max_positions
        for i, ids in enumerate(prompts):
            if len(ids) > limit:
                raise ValueError(f"generate: prompt {i} has {len(ids)} tokens, more than the "
                                 f"model's {limit} positions")
            if len(ids) + options.max_new_tokens > limit:
                raise ValueError(
                    f"generate: prompt {i} ({len(ids)} tokens) + max_new_tokens="
                    f"{options.max_new_tokens} passes the model's {limit} positions; ask for "
                    f"at most {limit - len(ids)} new tokens or shorten the prompt")

    def generate(self, prompts, max_new_tokens=32, min_new_tokens=0, do_sample=None,
                 temperature=None, top_k=None, top_p=None, num_beams=1, length_penalty=1.0,
                 repetition_penalty=1.0, no_repeat_ngram_size=0, stop_token_ids=(),
                 stop_strings=(), num_return_sequences=1, seed=None, return_prompt=False,
                 use_cache=True):
        """Continue prompts.

        Args:
            prompts: a string, a list of strings, a list of token ids, or a list of id lists.
            max_new_tokens: the most tokens a row generates. A prompt plus max_new_tokens
                must fit the model's positions (512 for GPT-1), or ValueError.
            min_new_tokens: stop tokens are banned (and stop strings ignored) before this.
            do_sample: sample instead of the most likely token; None samples when
                temperature, top_k or top_p is given.
            temperature: sampling from softmax(logits / temperature); > 0.
            top_k: sampling from the k most likely tokens only (0 or None: all).
            top_p: then from the smallest set whose probability passes top_p (None or
                1.0: all); in (0, 1].
            num_beams: beam search with this many beams, as transformers'.
            length_penalty: beam search scores a finished sequence sum(log p) / length **
                length_penalty.
            repetition_penalty: transformers' (CTRL's) penalty on tokens already present.
            no_repeat_ngram_size: bans a token that would repeat an n-gram of this size.
            stop_token_ids: a row stops after one of these tokens (kept in the output).
            stop_strings: a row stops once its generated text contains one of these (kept).
            num_return_sequences: sequences a prompt (sampling or beams).
            seed: makes sampling reproducible: the row r of the output (prompt i, sequence
                j, r = i * num_return_sequences + j) uses seed + r, the same on every
                backend. None: a fresh seed.
            return_prompt: return the prompt followed by its continuation.
            use_cache: False recomputes the whole prefix at each step (for comparisons).

        Returns:
            Text in, text out: a string for one string, a list of strings for a list (each a
            list when num_return_sequences > 1). Ids in, lists of new ids out. What stops a
            row: max_new_tokens, a stop token, a stop string. GPT-1 has no end-of-text token,
            so without stop tokens or strings a row runs to max_new_tokens. An empty prompt
            has nothing to continue and gives "" (no ids).
        """
        options = self._options(locals())
        rows, text, single = self._encode(prompts)
        run = self._run(rows, options, use_cache)
        for _ in run:
            pass
        outputs = self._outputs
        if return_prompt:
            outputs = [[rows[i] + out for out in group] for i, group in enumerate(outputs)]
        if text:
            outputs = [[self.decode(out) for out in group] for group in outputs]
        if options.num_return_sequences == 1:
            outputs = [group[0] for group in outputs]
        return outputs[0] if single else outputs

    def stream(self, prompt, **options):
        """Yield the continuation of one text prompt as it is decoded.

        Takes `generate`'s options except beams, several sequences and return_prompt. The
        pieces joined are the string `generate` returns with the same options and seed. A
        piece ends at a space where it can, so a word is not shown half-decoded.
        """
        if not isinstance(prompt, str):
            raise ValueError("stream: takes one text prompt")
        if options.get("return_prompt"):
            raise ValueError("stream: streams the continuation only (no return_prompt)")
        use_cache = options.pop("use_cache", True)
        options = self._options(dict(options, self=self))
        if options.num_beams > 1 or options.num_return_sequences > 1:
            raise ValueError("stream: streams one sequence (num_beams=1, "
                             "num_return_sequences=1)")
        rows, _, _ = self._encode(prompt)
        shown = ""
        for generated in self._run(rows, options, use_cache, host=True):
            text = self.decode(generated[0])
            cut = text.rfind(" ")
            if cut > len(shown) and text.startswith(shown):
                yield text[len(shown):cut]
                shown = text[:cut]
        text = self.decode(self._outputs[0][0])
        if not text.startswith(shown):  # a tokenizer whose text of a prefix is not a prefix
            raise RuntimeError(f"stream: the decoded text changed after {shown!r} was shown")
        if text[len(shown):]:
            yield text[len(shown):]

    def _options(self, arguments):
        arguments = {k: v for k, v in arguments.items()
                     if k not in ("self", "prompts", "prompt", "return_prompt", "use_cache")}
        unknown = set(arguments) - {f.name for f in dataclasses.fields(Options)}
        if unknown:
            raise TypeError(f"generate: unknown options {sorted(unknown)}")
        if arguments.get("do_sample") is None:
            arguments["do_sample"] = any(arguments.get(k) is not None
                                         for k in ("temperature", "top_k", "top_p"))
        arguments["stop_token_ids"] = tuple(int(i) for i in
                                            arguments.get("stop_token_ids") or ())
        strings = arguments.get("stop_strings") or ()
        strings = (strings,) if isinstance(strings, str) else tuple(strings)
        arguments["stop_strings"] = tuple(s for s in strings if s)  # "" stops nothing
        if arguments["stop_strings"] and self.tokenizer is None:
            raise ValueError("generate: stop_strings need the model's tokenizer")
        return Options(**arguments)

    # === The loop ===

    def _run(self, prompts, options, use_cache, host=False):
        """Generate for `prompts` (id lists) and leave the outputs (one list of id lists a
        prompt) in `self._outputs`. The whole loop is one compiled program, but with `host`
        (streaming), stop strings or without the cache: then the loop runs on the host and
        yields each row's new ids after every step."""
        self._check_lengths(prompts, options)
        started = time.perf_counter()
        if options.num_beams > 1:
            yield from self._beam_search(prompts, options)
        else:
            host = host or bool(options.stop_strings) or not use_cache
            yield from self._sample(prompts, options, use_cache, host)
        self.last_stats = {
            "prompts": len(prompts),
            "prompt_tokens": sum(len(p) for p in prompts),
            "new_tokens": sum(len(o) for group in self._outputs for o in group),
            "seconds": time.perf_counter() - started, "traces": self.traces}

    def _buffers(self, rows, max_new_tokens):
        """Left-padded (tokens, positions) of the prompts, the key mask, each row's budget of
        new tokens (0 without a prompt) and the sizes."""
        lengths = np.array([len(r) for r in rows], np.int32)
        width = bucket(max(lengths.max(initial=0), 1))
        length = bucket(width + max_new_tokens)
        tokens = np.zeros((len(rows), width), np.int32)
        positions = np.zeros((len(rows), width), np.int32)
        key_mask = np.zeros((len(rows), length), bool)
        for i, ids in enumerate(rows):
            if ids:
                tokens[i, width - len(ids):] = ids
                positions[i, width - len(ids):] = np.arange(len(ids))
                key_mask[i, width - len(ids):width] = True
        budget = np.where(lengths > 0, max_new_tokens, 0).astype(np.int32)
        return tokens, positions, key_mask, lengths, budget

    def _stopped_by_text(self, generated, options, new_tokens):
        if not options.stop_strings or new_tokens < options.min_new_tokens:
            return False
        text = self.decode(generated)
        return any(stop in text for stop in options.stop_strings)

    def _sample(self, prompts, options, use_cache, host):
        count = options.num_return_sequences
        rows = [p for p in prompts for _ in range(count)]
        seed = options.seed
        if seed is None and options.do_sample:
            seed = int(np.random.SeedSequence().entropy % (2 ** 62))
        buffers = self._buffers(rows, options.max_new_tokens)
        generated = [[] for _ in rows]
        if rows and buffers[-1].any():
            seeds = None if seed is None else [seed + i for i in range(len(rows))]
            args = self._tensors(buffers + (sampling.options_for(options, len(rows), seeds),))
            if host:
                yield from self._host_loop(args, options, use_cache, generated)
            else:
                new, counts = self._program("sample", _sample_program)(*args)
                new, counts = ops.convert_to_numpy(new), ops.convert_to_numpy(counts)
                generated = [new[i, :counts[i]].tolist() for i in range(len(rows))]
        self._outputs = [generated[i * count:(i + 1) * count] for i in range(len(prompts))]

    def _host_loop(self, args, options, use_cache, generated):
        """The loop on the host, one compiled step a call, for what the compiled loop cannot
        do: yield the tokens after each step (streaming) and stop at stop strings."""
        state = self._program("prefill", _prefill_program)(*args)
        step = (self._program("advance", _advance_program) if use_cache else
                lambda state, opts: _recompute_program(self.lm, state, opts))
        done = ops.convert_to_numpy(args[4]) <= 0
        while True:
            last = ops.convert_to_numpy(state["last"])
            now = ops.convert_to_numpy(state["done"]).copy()
            for i in np.flatnonzero(~done):
                generated[i].append(int(last[i]))
                if self._stopped_by_text(generated[i], options, len(generated[i])):
                    now[i] = True
            done = now
            yield generated
            if done.all():
                return
            state = dict(state, done=ops.convert_to_tensor(done))
            state = step(state, args[-1])

    def _beam_search(self, prompts, options):
        n, count = options.num_beams, options.num_return_sequences
        rows = [p for p in prompts for _ in range(n)]
        self._outputs = [[[] for _ in range(count)] for _ in prompts]
        buffers = self._buffers(rows, options.max_new_tokens)
        if rows and buffers[-1].any():
            opts = sampling.options_for(options, len(rows))
            kept = beam.keep(n, opts["stop_token_ids"].shape[1])
            program = self._program("beam", _beam_program, num_beams=n, kept=kept)
            finished, lengths = program(*self._tensors(buffers + (opts,)))
            finished, lengths = ops.convert_to_numpy(finished), ops.convert_to_numpy(lengths)
            self._outputs = [[finished[p, j, :lengths[p, j]].tolist() for j in range(count)]
                             if prompt else [[] for _ in range(count)]
                             for p, prompt in enumerate(prompts)]
        yield [beam for group in self._outputs for beam in group]


# === The programs (functions of the CachedLM and tensors, compiled by Generator._program) ===

def _sample_program(lm, tokens, positions, key_mask, lengths, budget, options):
    state = engine.sample(lm, tokens, positions, key_mask, lengths, budget, options)
    return state["new"], state["count"]


def _prefill_program(lm, tokens, positions, key_mask, lengths, budget, options):
    return engine.pick(engine.prefill(lm, tokens, positions, key_mask, lengths, budget),
                       options)


def _advance_program(lm, state, options):
    return engine.advance(lm, state, options)


def _recompute_program(lm, state, options):
    """`engine.advance` without the cache: the whole prefix again, in a fresh cache."""
    state = dict(state)
    end = int(state["width"]) + int(state["step"])
    key_mask = ops.convert_to_numpy(state["key_mask"]).copy()
    key_mask[:, end - 1] = True
    lengths = ops.convert_to_numpy(state["lengths"])
    positions = np.maximum(np.arange(end)[None, :] - (int(state["width"]) - lengths)[:, None],
                           0).astype(np.int32)
    tokens = ops.convert_to_numpy(state["tokens"])[:, :end]
    logits, _ = lm.forward(tokens, positions, key_mask[:, :end],
                           lm.empty_cache(tokens.shape[0], end), 0, last_only=True)
    state.update(logits=logits[:, -1, :], key_mask=ops.convert_to_tensor(key_mask))
    return engine.pick(state, options)


def _beam_program(lm, tokens, positions, key_mask, lengths, budget, options, num_beams,
                  kept):
    state = beam.search(lm, tokens, positions, key_mask, lengths, budget, options, num_beams,
                        kept)
    return state["finished"], state["finished_length"]
