"""Choosing the next token: transformers' logits processors, the greedy pick, and a seeded draw.

In backend ops (keras.ops), written once: the Python generator runs them inside its compiled
loop (`zoo.generation.engine`, under `tf.function` or `jax.jit`) and the SavedModel export
(zoo_tasks/serving/pretraining.py) builds its graph from the same functions. The processors
follow transformers' `generation/logits_process.py` (RepetitionPenalty, NoRepeatNGram,
MinNewTokensLength, Temperature, TopK, TopP) in transformers' order, and tests compare them on
the same logits. Written here because keras-hub's samplers have no repetition penalty, n-gram
ban or min length, and they draw with the backend's own random ops, which differ between
backends.

Every processor takes (rows, vocab) float32 logits and options as one value or one per row,
so one compiled program serves every request. The sequences are (rows, length) int buffers
whose real tokens sit in slots [start, end] of each row (left padding before them).

The draw: a counter-based hash of (row seed, step) gives one uniform number u per row and
step, in 32-bit integer ops (uint32 on TensorFlow and JAX, int64 reduced mod 2**32 on
PyTorch, which has no uint32 product): the same bits on every backend. The token is the first
id whose cumulative probability, in id order, passes u. The cumulative sum is in float64 where
the backend has it (TensorFlow, PyTorch, JAX with `jax_enable_x64`), as the NumPy draw did;
JAX's default float32 uses the same rule in float32, which picks the same token unless u
falls within float32 rounding (about 1e-7 of the total) of a boundary.
"""

import keras
import numpy as np
from keras import ops

MASK32 = 2 ** 32
MIX = 0x45D9F3B  # a 32-bit integer hash's multiplier (odd; products stay below 2**63)
NEG_INF = float("-inf")


def _backend():
    return keras.backend.backend()


def float64_ok():
    """Whether the backend computes in float64 (JAX only with `jax_enable_x64`)."""
    if _backend() == "jax":
        import jax  # the JAX backend's setting

        return bool(jax.config.jax_enable_x64)
    return True


def _hash(x):
    """The 32-bit mix of `x` (values in [0, 2**32)): uint32, or int64 on PyTorch."""
    torch = _backend() == "torch"
    for _ in range(2):
        x = ops.bitwise_xor(x, ops.right_shift(x, 16))
        x = ops.mod(x * MIX, MASK32) if torch else ops.multiply(x, ops.cast(MIX, x.dtype))
    return ops.bitwise_xor(x, ops.right_shift(x, 16))


def uniform_bits(seed, step):
    """The 32-bit integers behind `uniform`, as uint32 (int64 on PyTorch)."""
    if _backend() == "torch":
        dtype = "int64"
        seed = ops.mod(ops.cast(seed, dtype), MASK32)
    else:
        dtype = "uint32"
        seed = ops.cast(seed, dtype)  # a 64-bit seed keeps its low 32 bits (seed mod 2**32)
    step = ops.cast(step, dtype)
    return _hash(ops.bitwise_xor(_hash(seed), step))


def uniform(seed, step):
    """The uniform numbers in [0, 1) of rows' seeds at a step: u = bits / 2**32, exact in
    float64 (float32 where the backend has no float64).

    >>> tuple(round(float(u), 6) for u in uniform(np.array([0, 7], "uint32"), 0))
    (0.0, 0.965405)
    """
    dtype = "float64" if float64_ok() else "float32"
    return ops.cast(uniform_bits(seed, step), dtype) / float(MASK32)


def draw(logits, u):
    """For each row, the token whose cumulative softmax probability (id order) first exceeds u.

    Entries of -inf have probability 0 and are never drawn.

    >>> int(draw(np.log(np.array([[0.25, 0.5, 0.25]], "float32")), [0.3])[0])
    1
    """
    dtype = "float64" if float64_ok() else "float32"
    logits = ops.cast(logits, dtype)
    p = ops.exp(logits - ops.max(logits, axis=-1, keepdims=True))
    c = ops.cumsum(p, axis=-1)
    target = ops.cast(ops.convert_to_tensor(u), dtype)[:, None] * c[:, -1:]
    token = ops.sum(ops.cast(c <= target, "int32"), axis=-1)  # searchsorted(side="right")
    return ops.minimum(token, ops.shape(logits)[-1] - 1)


def _per_row(value, logits, dtype):
    """A value for every row, or one per row, as a (rows,) tensor."""
    value = ops.cast(ops.convert_to_tensor(value), dtype)
    return ops.broadcast_to(ops.reshape(value, (-1,)), ops.shape(logits)[:1])


def _counts(logits, ids, weights):
    """(rows, vocab) float32: for each row, the sum of `weights` over its `ids` (rows, n)."""
    rows, n = ops.shape(ids)[0], ops.shape(ids)[1]
    row = ops.broadcast_to(ops.arange(rows, dtype="int32")[:, None], (rows, n))
    index = ops.stack([ops.reshape(row, (-1,)), ops.reshape(ops.cast(ids, "int32"), (-1,))],
                      axis=1)
    return ops.scatter(index, ops.reshape(ops.cast(weights, "float32"), (-1,)),
                       ops.shape(logits))


def _span(sequences, start, end):
    """(start (rows,), end scalar) of the real tokens; all slots when not given."""
    if start is None:
        start = ops.zeros(ops.shape(sequences)[:1], "int32")
    if end is None:
        end = ops.shape(sequences)[1] - 1
    return ops.cast(start, "int32"), ops.cast(end, "int32")


def _real(sequences, start, end):
    slot = ops.arange(ops.shape(sequences)[1], dtype="int32")[None, :]
    return (slot >= start[:, None]) & (slot <= end)


def repetition_penalty(logits, sequences, penalty, start=None, end=None):
    """CTRL's penalty (Keskar et al. 2019) on every token already in the row's sequence
    (prompt included): positive logits divided by `penalty`, negative ones multiplied.

    As transformers' RepetitionPenaltyLogitsProcessor. logits: (rows, vocab) float32;
    sequences: (rows, length) ids, real in slots [start, end]; penalty: one or one a row.
    """
    logits = ops.convert_to_tensor(logits, "float32")
    sequences = ops.convert_to_tensor(sequences, "int32")
    start, end = _span(sequences, start, end)
    penalty = _per_row(penalty, logits, "float32")[:, None]
    seen = _counts(logits, sequences, _real(sequences, start, end)) > 0
    score = ops.where(logits < 0, logits * penalty, logits / penalty)
    return ops.where(seen & (penalty != 1.0), score, logits)


def no_repeat_ngram(logits, sequences, n, start=None, end=None):
    """-inf on every token that would complete an n-gram the row already has (transformers'
    NoRepeatNGramLogitsProcessor; n = 0: off). The same arguments as `repetition_penalty`.

    A slot p holds a banned token when the n - 1 tokens before it equal the row's last n - 1,
    and the n-gram ending at p lies in the real tokens: an (length, length) comparison.
    """
    logits = ops.convert_to_tensor(logits, "float32")
    sequences = ops.convert_to_tensor(sequences, "int32")
    start, end = _span(sequences, start, end)
    n = _per_row(n, logits, "int32")
    length = ops.shape(sequences)[1]
    slot = ops.arange(length, dtype="int32")
    back = ops.arange(1, length + 1, dtype="int32")  # k = 1..length tokens back
    before = ops.take(sequences, ops.maximum(slot[:, None] - back[None, :], 0), axis=1)
    last = ops.take(sequences, ops.clip(end + 1 - back, 0, length - 1), axis=1)
    same = (before == last[:, None, :]) | (back[None, None, :] >= n[:, None, None])
    banned = (ops.all(same, axis=-1) & (slot[None, :] >= start[:, None] + n[:, None] - 1)
              & (slot[None, :] <= end) & (n[:, None] > 0))  # (rows, length)
    return ops.where(_counts(logits, sequences, banned) > 0, NEG_INF, logits)


def min_new_tokens(logits, stop_ids, new_tokens, minimum):
    """-inf on the stop tokens (rows, n; -1 pads) while fewer than `minimum` tokens are new
    (transformers' MinNewTokensLengthLogitsProcessor)."""
    logits = ops.convert_to_tensor(logits, "float32")
    stop_ids = ops.convert_to_tensor(stop_ids, "int32")
    minimum = _per_row(minimum, logits, "int32")
    stops = _counts(logits, ops.maximum(stop_ids, 0), stop_ids >= 0) > 0
    return ops.where(stops & (new_tokens < minimum)[:, None], NEG_INF, logits)


def top_k_filter(logits, k):
    """Keep the k largest logits of each row (ties with the k-th kept); -inf elsewhere
    (k = 0 or None: off; one k, or one a row)."""
    logits = ops.convert_to_tensor(logits, "float32")
    if k is None:
        return logits
    vocab = ops.shape(logits)[-1]
    k = _per_row(k, logits, "int32")
    ranked = -ops.sort(-logits, axis=-1)
    kth = ops.take_along_axis(ranked, ops.clip(k - 1, 0, vocab - 1)[:, None], axis=-1)
    return ops.where((k[:, None] > 0) & (logits < kth), NEG_INF, logits)


def nucleus_limit(p):
    """float32(1 - p) of Python (or NumPy) top_p values, the bound `top_p_filter` compares
    cumulative probabilities with (as transformers does; 0 for p >= 1: off)."""
    p = np.asarray(1.0 if p is None else p, np.float64)
    return np.where(p >= 1.0, 0.0, 1.0 - p).astype(np.float32)


def top_p_filter(logits, p=None, limit=None):
    """Nucleus filtering (Holtzman et al. 2020) as transformers' TopPLogitsWarper: sorted
    ascending, drop the tokens whose cumulative probability is <= 1 - p, keep at least one.

    p: one or one a row (None or >= 1: off); or `limit`, float32(1 - p) as `nucleus_limit`
    gives it (<= 0: off), for a p given as a tensor.
    """
    logits = ops.convert_to_tensor(logits, "float32")
    if limit is None:
        limit = nucleus_limit(p)
    limit = _per_row(limit, logits, "float32")[:, None]
    vocab = ops.shape(logits)[-1]
    order = ops.argsort(logits, axis=-1)
    ranked = ops.take_along_axis(logits, order, axis=-1)
    shifted = ops.exp(ranked - ranked[:, -1:])
    probabilities = shifted / ops.sum(shifted, axis=-1, keepdims=True)
    remove = ops.cumsum(probabilities, axis=-1) <= limit
    remove = remove & (ops.arange(vocab, dtype="int32") < vocab - 1)[None, :]
    remove = ops.take_along_axis(remove, ops.argsort(order, axis=-1), axis=-1)  # id order
    return ops.where(remove & (limit > 0), NEG_INF, logits)


def options_for(options, rows, seeds=None):
    """The per-row option tensors of `process` from a `zoo.generation.Options`.

    seeds: the rows' seeds (None: 0); greedy rows get the sampling warpers' neutral values.
    """
    sample = bool(options.do_sample)
    stops = list(options.stop_token_ids) or [-1]
    return {
        "do_sample": np.full(rows, sample),
        "temperature": np.full(rows, options.temperature if sample and options.temperature
                               else 1.0, np.float32),
        "top_k": np.full(rows, (options.top_k or 0) if sample else 0, np.int32),
        "top_p": np.full(rows, nucleus_limit(options.top_p) if sample else 0.0, np.float32),
        "seed": np.asarray([0] * rows if seeds is None else
                           [int(s) % MASK32 for s in seeds], np.uint32),
        "repetition_penalty": np.full(rows, options.repetition_penalty, np.float32),
        "no_repeat_ngram_size": np.full(rows, options.no_repeat_ngram_size, np.int32),
        "min_new_tokens": np.full(rows, options.min_new_tokens, np.int32),
        "length_penalty": np.full(rows, options.length_penalty, np.float32),
        "stop_token_ids": np.tile(np.asarray(stops, np.int32), (rows, 1)),
    }


def process(logits, sequences, new_tokens, options, start=None, end=None):
    """transformers' processors in its order on (rows, vocab) float32 logits.

    sequences: (rows, length) ids so far, prompt included, real in slots [start, end] (all
    when not given); new_tokens: how many each row has generated (the same for all rows);
    options: `options_for`'s dict of per-row tensors (or a `zoo.generation.Options`). The
    sampling warpers (temperature, top-k, top-p) apply only to sampling rows. A processor
    that no row uses is skipped (`ops.cond`).
    """
    logits = ops.convert_to_tensor(logits, "float32")
    sequences = ops.convert_to_tensor(sequences, "int32")
    if not isinstance(options, dict):
        options = options_for(options, int(ops.shape(logits)[0]))
    o = {k: ops.convert_to_tensor(v) for k, v in options.items()}
    start, end = _span(sequences, start, end)
    new_tokens = ops.convert_to_tensor(new_tokens, "int32")

    def when(active, fn, x):
        return ops.cond(ops.any(active), lambda: fn(x), lambda: x)

    penalty, n = o["repetition_penalty"], o["no_repeat_ngram_size"]
    logits = when(penalty != 1.0, lambda x: repetition_penalty(x, sequences, penalty, start,
                                                               end), logits)
    logits = when(n > 0, lambda x: no_repeat_ngram(x, sequences, n, start, end), logits)
    logits = when((new_tokens < o["min_new_tokens"]) & ops.any(o["stop_token_ids"] >= 0),
                  lambda x: min_new_tokens(x, o["stop_token_ids"], new_tokens,
                                           o["min_new_tokens"]), logits)
    sample = ops.cast(o["do_sample"], "bool")
    temperature = ops.where(sample, ops.cast(o["temperature"], "float32"), 1.0)
    logits = when(temperature != 1.0, lambda x: x / temperature[:, None], logits)
    top_k = ops.where(sample, ops.cast(o["top_k"], "int32"), 0)
    logits = when(top_k > 0, lambda x: top_k_filter(x, top_k), logits)
    limit = ops.where(sample, ops.cast(o["top_p"], "float32"), 0.0)
    return when(limit > 0, lambda x: top_p_filter(x, limit=limit), logits)


def next_tokens(logits, sequences, new_tokens, options, start=None, end=None):
    """Each row's next token: the argmax of the processed logits, or for sampling rows the
    seeded draw (`uniform` of the row's seed at step `new_tokens`)."""
    processed = process(logits, sequences, new_tokens, options, start, end)
    greedy = ops.cast(ops.argmax(processed, axis=-1), "int32")
    sample = ops.cast(ops.convert_to_tensor(options["do_sample"]), "bool")

    def sampled():
        drawn = ops.cast(draw(processed, uniform(options["seed"], new_tokens)), "int32")
        return ops.where(sample, drawn, greedy)

    return ops.cond(ops.any(sample), sampled, lambda: greedy)


def log_softmax(logits):
    """float32 log-probabilities of (rows, vocab) logits."""
    logits = ops.convert_to_tensor(logits, "float32")
    shifted = logits - ops.max(logits, axis=-1, keepdims=True)
    return shifted - ops.log(ops.sum(ops.exp(shifted), axis=-1, keepdims=True))
