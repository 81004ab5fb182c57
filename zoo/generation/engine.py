"""The generation loop in backend ops: prefill once, then one cached position a step, with the
key/value cache (`CachedLM`) and every row's state in the loop's carry.

keras.ops only, so one definition runs under `jax.jit` (`lax.while_loop`), inside
`tf.function` (`tf.while_loop`, in a graph or under XLA; the SavedModel export builds its graph
from these functions) and eagerly on PyTorch (a host loop over the same step). The state is a
dict of tensors:

- `tokens` (rows, slots) int32: each row's prompt left-padded into slots [width - length,
  width), its t-th new token in slot width + t (and in column t of `new`); `key_mask`
  (rows, slots) marks the real ones;
- `cache`, `logits` (rows, vocab) float32 of the next token, `step` (new tokens so far),
  `last` (rows,) the tokens just picked, `count` (rows,) new tokens a row kept, `done` (rows,);
- `width`, `lengths` (rows,) and `budget` (rows,), each row's most new tokens;
- for beam search (`zoo.generation.beam`), the finished hypotheses of each prompt.
"""

from keras import ops

from zoo.generation import sampling


def prefill(lm, tokens, positions, key_mask, lengths, budget):
    """The state after the prompts' forward pass (nothing picked yet); `new` (rows, slots -
    width) holds the new tokens alone (a shape known when compiling, where `width` is not).

    tokens, positions: (rows, width) left-padded prompts; key_mask: (rows, slots) bool, the
    prompt slots True; lengths, budget: (rows,) int32.
    """
    tokens = ops.cast(tokens, "int32")
    key_mask = ops.cast(key_mask, "bool")
    rows, width, slots = ops.shape(tokens)[0], ops.shape(tokens)[1], ops.shape(key_mask)[1]
    logits, cache = lm.forward(tokens, positions, key_mask, lm.empty_cache(rows, slots), 0,
                               last_only=True)
    lengths, budget = ops.cast(lengths, "int32"), ops.cast(budget, "int32")
    zeros = ops.zeros((rows,), "int32")
    return {"tokens": ops.concatenate([tokens, ops.zeros((rows, slots - width), "int32")], 1),
            "new": ops.zeros((rows, slots - width), "int32"),
            "key_mask": key_mask, "cache": cache, "logits": logits[:, -1, :],
            "step": ops.convert_to_tensor(0, "int32"), "last": zeros, "count": zeros,
            "done": budget <= 0, "width": ops.convert_to_tensor(width, "int32"),
            "lengths": lengths, "budget": budget}


def write_column(buffer, slot, value, where):
    """`buffer` (rows, slots) with `value` (rows,) in column `slot` of the rows `where`."""
    column = ops.arange(ops.shape(buffer)[1], dtype="int32")[None, :] == slot
    return ops.where(column & where[:, None], ops.cast(value, buffer.dtype)[:, None], buffer)


def is_stop(token, stop_ids):
    """(rows,) whether each token is one of its row's stop ids (rows, n; -1 pads)."""
    return ops.any((token[:, None] == stop_ids) & (stop_ids >= 0), axis=-1)


def pick(state, options, choose=None, stopped=None):
    """Pick step `step`'s tokens from `logits` and write them in; rows that stop are done.

    options: `sampling.options_for`'s per-row tensors. choose(logits, step) -> (rows,) int32
    replaces the processors and sampler (the export's `serving_sample`); stopped(new tokens
    (rows, steps), count) -> (rows,) bool adds a stop rule (the export's stop strings).
    """
    state = dict(state)
    t, width, lengths = state["step"], state["width"], state["lengths"]
    if choose is None:
        token = sampling.next_tokens(state["logits"], state["tokens"], t, options,
                                     start=width - lengths, end=width + t - 1)
    else:
        token = choose(state["logits"], t)
    live = ~state["done"]
    token = ops.where(live, ops.cast(token, "int32"), 0)
    state["tokens"] = write_column(state["tokens"], width + t, token, live)
    state["new"] = write_column(state["new"], t, token, live)
    count = state["count"] + ops.cast(live, "int32")
    done = state["done"] | (count >= state["budget"])
    done = done | (live & is_stop(token, ops.convert_to_tensor(options["stop_token_ids"])))
    if stopped is not None:
        done = done | (live & stopped(state["new"], count))
    state.update(last=token, count=count, done=done, step=t + 1)
    return state


def forward_last(lm, state):
    """The state with the tokens picked last run through the model (cache and logits)."""
    state = dict(state)
    t, width = state["step"], state["width"]
    slot = width + t - 1
    key_mask = state["key_mask"] | (ops.arange(ops.shape(state["key_mask"])[1],
                                               dtype="int32")[None, :] == slot)
    position = ops.minimum(state["lengths"] + t - 1, lm.max_positions - 1)
    logits, cache = lm.forward(state["last"][:, None], position[:, None], key_mask,
                               state["cache"], slot, last_only=True)
    state.update(logits=logits[:, -1, :], cache=cache, key_mask=key_mask)
    return state


def advance(lm, state, options, choose=None, stopped=None):
    """One step of the loop: run the last tokens, then pick the next ones."""
    return pick(forward_last(lm, state), options, choose, stopped)


def sample(lm, tokens, positions, key_mask, lengths, budget, options, choose=None,
           stopped=None):
    """Greedy or sampled generation, prefill and loop: the final state (new tokens in
    `new`, `count` of them a row)."""
    state = pick(prefill(lm, tokens, positions, key_mask, lengths, budget), options, choose,
                 stopped)
    return ops.while_loop(lambda s: ops.any(~s["done"]),
                          lambda s: advance(lm, s, options, choose, stopped), state)
