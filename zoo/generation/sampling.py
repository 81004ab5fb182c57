"""Choosing the next token: transformers' logits processors, the greedy pick, and a seeded draw.

In NumPy on the host, so a seed gives the same text on TensorFlow, JAX and PyTorch alike; the
SavedModel export (zoo_tasks/serving/pretraining.py) runs the same arithmetic in TF ops, and
tests hold the two to the same tokens. The processors follow transformers' `generation/
logits_process.py` (RepetitionPenalty, NoRepeatNGram, MinNewTokensLength, Temperature, TopK,
TopP) in transformers' order, and tests compare them on the same logits. Written here because
keras-hub's samplers have no repetition penalty, n-gram ban or min length, and they draw with
the backend's own random ops, which differ between backends.

The draw: a counter-based hash of (row seed, step) gives one uniform number u per row and
step; the token is the first id whose cumulative probability (float64, in id order) passes u.
"""

import numpy as np

MASK32 = 2 ** 32
MIX = 0x45D9F3B  # a 32-bit integer hash's multiplier (odd; products stay below 2**63)


def _mix(x):
    x = ((x ^ (x >> 16)) * MIX) % MASK32
    x = ((x ^ (x >> 16)) * MIX) % MASK32
    return x ^ (x >> 16)


def uniform(seed, step):
    """The uniform number in [0, 1) of a row's seed at a step (int64 arithmetic only).

    >>> round(uniform(0, 0), 6), uniform(7, 3) == uniform(7, 3), uniform(7, 3) == uniform(8, 3)
    (0.0, True, False)
    """
    seed, step = np.int64(int(seed) % MASK32), np.int64(int(step) % MASK32)
    return float(_mix(_mix(seed) ^ step)) / MASK32


def draw(logits, u):
    """The token whose cumulative softmax probability (float64, id order) first exceeds u.

    Entries of -inf have probability 0 and are never drawn.

    >>> draw(np.log(np.array([0.25, 0.5, 0.25], "float32")), 0.3)
    1
    """
    logits = np.asarray(logits, np.float64)
    p = np.exp(logits - np.max(logits))
    c = np.cumsum(p)
    return int(min(np.searchsorted(c, u * c[-1], side="right"), len(c) - 1))


def repetition_penalty(logits, sequences, penalty):
    """CTRL's penalty (Keskar et al. 2019) on every token already in the row's sequence
    (prompt included): positive logits divided by `penalty`, negative ones multiplied.

    As transformers' RepetitionPenaltyLogitsProcessor. logits: (rows, vocab) float32;
    sequences: one list of ids a row.
    """
    if penalty == 1.0:
        return logits
    logits = logits.copy()
    for row, ids in enumerate(sequences):
        ids = np.unique(np.asarray(ids, np.int64))
        if ids.size:
            score = logits[row, ids]
            logits[row, ids] = np.where(score < 0, score * np.float32(penalty),
                                        score / np.float32(penalty))
    return logits


def banned_ngram_tokens(ids, n):
    """The tokens that would repeat an n-gram already in `ids` (transformers'
    NoRepeatNGramLogitsProcessor)."""
    if n <= 0 or len(ids) + 1 < n:
        return []
    ids = list(ids)
    prefix = tuple(ids[len(ids) - n + 1:]) if n > 1 else ()
    return sorted({ids[i + n - 1] for i in range(len(ids) - n + 1)
                   if tuple(ids[i:i + n - 1]) == prefix})


def no_repeat_ngram(logits, sequences, n):
    """-inf on every token that would complete an n-gram the row already has."""
    if n <= 0:
        return logits
    logits = logits.copy()
    for row, ids in enumerate(sequences):
        banned = banned_ngram_tokens(ids, n)
        if banned:
            logits[row, banned] = -np.inf
    return logits


def top_k_filter(logits, k):
    """Keep the k largest logits of each row (ties with the k-th kept); -inf elsewhere."""
    if not k:
        return logits
    k = min(int(k), logits.shape[-1])
    kth = -np.sort(-logits, axis=-1)[:, k - 1:k]
    return np.where(logits < kth, np.float32(-np.inf), logits)


def top_p_filter(logits, p):
    """Nucleus filtering (Holtzman et al. 2020) as transformers' TopPLogitsWarper: sorted
    ascending, drop the tokens whose cumulative probability is <= 1 - p, keep at least one."""
    if p is None or p >= 1.0:
        return logits
    order = np.argsort(logits, axis=-1, kind="stable")
    ranked = np.take_along_axis(logits, order, axis=-1)
    shifted = np.exp(ranked - ranked[:, -1:])
    probabilities = (shifted / shifted.sum(axis=-1, keepdims=True)).astype(np.float32)
    remove = np.cumsum(probabilities, axis=-1, dtype=np.float32) <= np.float32(1 - p)
    remove[:, -1] = False
    out = logits.copy()
    np.put_along_axis(out, order, np.where(remove, np.float32(-np.inf), ranked), axis=-1)
    return out


def process(logits, sequences, new_tokens, options):
    """transformers' processors in its order on (rows, vocab) float32 logits.

    sequences: each row's ids so far, prompt included; new_tokens: how many each row has
    generated (the same for all rows); options: a `zoo.generation.Options`. The sampling
    warpers (temperature, top-k, top-p) apply only when sampling.
    """
    logits = np.asarray(logits, np.float32)
    logits = repetition_penalty(logits, sequences, options.repetition_penalty)
    logits = no_repeat_ngram(logits, sequences, options.no_repeat_ngram_size)
    if new_tokens < options.min_new_tokens and options.stop_token_ids:
        logits = logits.copy()
        logits[:, list(options.stop_token_ids)] = -np.inf
    if options.do_sample:
        if options.temperature is not None and options.temperature != 1.0:
            logits = logits / np.float32(options.temperature)
        logits = top_k_filter(logits, options.top_k)
        logits = top_p_filter(logits, options.top_p)
    return logits


def log_softmax(logits):
    """float32 log-probabilities of (rows, vocab) logits."""
    logits = np.asarray(logits, np.float32)
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
