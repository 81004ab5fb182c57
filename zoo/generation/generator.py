"""`Generator`: text generation from a GPT-1 (or causal BERT) language model with a key/value
cache: greedy, sampled (temperature, top-k, top-p) or beam search, with transformers' logits
processors, stop tokens and strings, and streaming.

The loop runs on the host and calls one compiled forward pass a step (`CachedLM.forward`):
TensorFlow's `tf.function` (graph, or XLA with `compile="xla"`), `jax.jit` on JAX, eager on
PyTorch. Prompts of a batch are left-padded into one buffer of `bucket(longest prompt)` slots
and the cache holds `bucket(prompt + max_new_tokens)` slots (powers of two), so that a shape
compiles once per (batch, bucket) and a second call in the bucket reuses it. Positions are per
row, so a row of a mixed-length batch gets what it gets alone.
"""

import dataclasses
import time

import keras
import numpy as np
from keras import ops

from zoo.generation import sampling
from zoo.generation.beam import BeamSearch
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
        self.traces = 0  # how many times the forward pass was traced (compiled); 0 eagerly
        self.last_stats = {}
        self._compiled = None

    # === The compiled forward pass ===

    def _traced_forward(self, token_ids, positions, key_mask, cache, index):
        self.traces += 1
        return self.lm.forward(token_ids, positions, key_mask, cache, index, last_only=True)

    def _build(self):
        if self.compile is None or self.backend == "torch":
            return self._eager
        if self.backend == "tensorflow":
            import tensorflow as tf  # the TensorFlow backend's compiler

            dtype = self.lm.dtype
            signature = [
                tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None], tf.int32),
                tf.TensorSpec([None, None], tf.bool),
                tuple(tf.TensorSpec([None] * 4, dtype)
                      for _ in range(2 * self.lm.num_layers)),
                tf.TensorSpec([], tf.int32)]
            function = tf.function(self._traced_forward, input_signature=signature,
                                   jit_compile=self.compile == "xla")
            return function
        if self.backend == "jax":
            import jax  # the JAX backend's compiler

            variables = self.lm.variables

            def stateless(values, token_ids, positions, key_mask, cache, index):
                with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                    return self._traced_forward(token_ids, positions, key_mask, cache, index)

            jitted = jax.jit(stateless, donate_argnums=(4,))
            return lambda *args: jitted([v.value for v in variables], *args)
        raise ValueError(f"generation does not support the {self.backend!r} backend")

    def _eager(self, *args):
        if self.backend == "torch":
            import torch  # no autograd graph while generating

            with torch.no_grad():
                return self.lm.forward(*args, last_only=True)
        return self.lm.forward(*args, last_only=True)

    def _forward(self, token_ids, positions, key_mask, cache, index):
        """(last logits (batch, vocab) as float32 NumPy, updated cache)."""
        if self._compiled is None:
            self._compiled = self._build()
        args = (np.asarray(token_ids, np.int32), np.asarray(positions, np.int32),
                np.asarray(key_mask, bool), cache, np.int32(index))
        if self.backend != "tensorflow" or self._compiled is self._eager:
            args = tuple(ops.convert_to_tensor(a) for a in args[:3]) + (cache, args[4])
        logits, cache = self._compiled(*args)
        return ops.convert_to_numpy(logits)[:, -1, :], cache

    def _reorder(self, cache, rows):
        return self.lm.reorder(cache, ops.convert_to_tensor(np.asarray(rows, np.int32)))

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
        for generated in self._run(rows, options, use_cache):
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

    def _run(self, prompts, options, use_cache):
        """Generate for `prompts` (id lists); yields each row's new ids after every step and
        leaves the outputs (one list of id lists a prompt) in `self._outputs`."""
        self._check_lengths(prompts, options)
        started = time.perf_counter()
        if options.num_beams > 1:
            yield from self._beam_search(prompts, options)
        else:
            yield from self._sample(prompts, options, use_cache)
        self.last_stats = {
            "prompts": len(prompts),
            "prompt_tokens": sum(len(p) for p in prompts),
            "new_tokens": sum(len(o) for group in self._outputs for o in group),
            "seconds": time.perf_counter() - started, "traces": self.traces}

    def _buffers(self, rows, max_new_tokens):
        """Left-padded (tokens, positions) of the prompts, the key mask and the sizes."""
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
        return tokens, positions, key_mask, lengths, width, length

    def _stopped_by_text(self, generated, options, new_tokens):
        if not options.stop_strings or new_tokens < options.min_new_tokens:
            return False
        text = self.decode(generated)
        return any(stop in text for stop in options.stop_strings)

    def _sample(self, prompts, options, use_cache):
        count = options.num_return_sequences
        rows = [p for p in prompts for _ in range(count)]
        if not rows:
            self._outputs = []
            return
        seed = options.seed
        if seed is None and options.do_sample:
            seed = int(np.random.SeedSequence().entropy % (2 ** 62))
        tokens, positions, key_mask, lengths, width, length = self._buffers(
            rows, options.max_new_tokens)
        generated = [[] for _ in rows]
        done = np.array([not r or options.max_new_tokens == 0 for r in rows])
        if not done.all():
            if use_cache:
                cache = self.lm.empty_cache(len(rows), length)
                logits, cache = self._forward(tokens, positions, key_mask, cache, 0)
            else:
                logits = self._recompute(tokens, positions, key_mask, width)
        for step in range(options.max_new_tokens):
            if done.all():
                break
            sequences = [r + g for r, g in zip(rows, generated)]
            processed = sampling.process(logits, sequences, step, options)
            chosen = np.zeros(len(rows), np.int32)
            for i in np.flatnonzero(~done):
                if options.do_sample:
                    chosen[i] = sampling.draw(processed[i], sampling.uniform(seed + i, step))
                else:
                    chosen[i] = int(np.argmax(processed[i]))
                generated[i].append(int(chosen[i]))
                if (int(chosen[i]) in options.stop_token_ids
                        or len(generated[i]) >= options.max_new_tokens
                        or self._stopped_by_text(generated[i], options, step + 1)):
                    done[i] = True
            yield generated
            if done.all():
                break
            slot = width + step
            key_mask[:, slot] = True
            if use_cache:
                logits, cache = self._forward(chosen[:, None], (lengths + step)[:, None],
                                              key_mask, cache, slot)
            else:
                tokens = np.concatenate([tokens, chosen[:, None]], axis=1)
                positions = np.concatenate([positions, (lengths + step)[:, None]], axis=1)
                logits = self._recompute(tokens, positions, key_mask, slot + 1)
        self._outputs = [generated[i * count:(i + 1) * count] for i in range(len(prompts))]

    def _recompute(self, tokens, positions, key_mask, length):
        """The last logits of the whole prefix, without a cache (a fresh one each call)."""
        cache = self.lm.empty_cache(tokens.shape[0], length)
        logits, _ = self._forward(tokens, positions, key_mask[:, :length], cache, 0)
        return logits

    def _beam_search(self, prompts, options):
        n = options.num_beams
        rows = [p for p in prompts for _ in range(n)]
        searches = [BeamSearch(p, n, options) for p in prompts]
        for search, prompt in zip(searches, prompts):
            search.done = not prompt or options.max_new_tokens == 0
        if rows and not all(s.done for s in searches):
            tokens, positions, key_mask, lengths, width, length = self._buffers(
                rows, options.max_new_tokens)
            cache = self.lm.empty_cache(len(rows), length)
            logits, cache = self._forward(tokens, positions, key_mask, cache, 0)
            for step in range(options.max_new_tokens):
                order = np.arange(len(rows))
                chosen = np.zeros(len(rows), np.int32)
                for p, search in enumerate(searches):
                    if search.done:
                        continue
                    beams, new = search.step(logits[p * n:(p + 1) * n], step)
                    order[p * n:(p + 1) * n] = p * n + beams
                    chosen[p * n:(p + 1) * n] = new
                yield [beam for s in searches for beam in s.running]
                if all(s.done for s in searches):
                    break
                cache = self._reorder(cache, order)
                slot = width + step
                key_mask[:, slot] = True
                logits, cache = self._forward(chosen[:, None], (lengths + step)[:, None],
                                              key_mask, cache, slot)
        self._outputs = [s.best(options.num_return_sequences) if prompt else
                         [[] for _ in range(options.num_return_sequences)]
                         for s, prompt in zip(searches, prompts)]
