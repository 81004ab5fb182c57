"""Beam search as transformers' `generate(num_beams=...)` runs it (the vectorized search of
transformers 4.50+), in backend ops and fixed shapes: every prompt has num_beams rows
(batch * num_beams in all), and the rows, their tokens and the key/value cache are reordered
by a gather at each step, inside the compiled loop (`zoo.generation.engine`).

Each step keeps the 2 * num_beams best continuations over all beams (more with several stop
tokens), continues the best num_beams that did not stop, and moves a stopped one among the
top num_beams into the finished set, scored sum(log p) / generated_length ** length_penalty.
The search of a prompt ends when no running beam can beat the worst finished one (transformers'
`early_stopping=False` heuristic) or every continuation has stopped; a prompt whose search
ended keeps its state while the others go on.
"""

from keras import ops

from zoo.generation import engine, sampling

FLOOR = -1.0e9  # transformers' "impossible" score


def keep(num_beams, stop_columns):
    """Continuations kept a step: max(2, 1 + stop tokens) * num_beams (transformers');
    `stop_columns` counts the stop-id columns, -1 padding included (more kept than needed
    changes nothing: the best num_beams that did not stop are among them either way)."""
    return max(2, 1 + stop_columns) * num_beams


def _take(x, index):
    """x (batch, m, ...) gathered along axis 1 by index (batch, k)."""
    shape = ops.shape(index) + tuple(1 for _ in range(len(x.shape) - 2))
    index = ops.reshape(index, shape)
    return ops.take_along_axis(x, ops.broadcast_to(
        index, tuple(ops.shape(index)[:2]) + tuple(ops.shape(x)[2:])), axis=1)


def start(state, num_beams):
    """The prefilled state (rows = prompts * num_beams) with the beams' bookkeeping added."""
    state = dict(state)
    rows, steps = ops.shape(state["new"])
    batch = rows // num_beams
    first = ops.arange(num_beams, dtype="int32")[None, :] == 0
    state.update(
        scores=ops.broadcast_to(ops.where(first, 0.0, FLOOR), (batch, num_beams)),
        finished=ops.zeros((batch, num_beams, steps), "int32"),
        finished_length=ops.zeros((batch, num_beams), "int32"),
        finished_scores=ops.full((batch, num_beams), FLOOR, "float32"),
        is_finished=ops.zeros((batch, num_beams), "bool"),
        improvable=ops.ones((batch,), "bool"),
        searching=ops.reshape(~state["done"], (batch, num_beams))[:, 0])
    return state


def step(state, options, num_beams, kept):
    """One token for every beam of the prompts still searching."""
    n, state = num_beams, dict(state)
    t, width, tokens = state["step"], state["width"], state["tokens"]
    rows, steps = ops.shape(state["new"])
    batch = rows // n
    log_probs = sampling.process(sampling.log_softmax(state["logits"]), tokens, t, options,
                                 start=width - state["lengths"], end=width + t - 1)
    vocab = ops.shape(log_probs)[-1]
    total = ops.reshape(ops.reshape(log_probs, (batch, n, vocab))
                        + state["scores"][:, :, None], (batch, n * vocab))
    top_scores, top = ops.top_k(total, kept)  # ties: the lower index first, as a stable sort
    beams, new = top // vocab, top % vocab
    stop_ids = ops.reshape(ops.convert_to_tensor(options["stop_token_ids"]), (batch, n, -1))
    budget = ops.reshape(state["budget"], (batch, n))[:, :1]
    stops = ops.reshape(engine.is_stop(ops.reshape(new, (-1,)), ops.repeat(
        stop_ids[:, 0], kept, axis=0)), (batch, kept)) | (t + 1 >= budget)

    running_scores = top_scores + ops.cast(stops, "float32") * FLOOR
    scores, chosen = ops.top_k(running_scores, n)
    source, token = _take(beams, chosen), _take(new, chosen)

    dtype = "float64" if sampling.float64_ok() else "float32"
    penalty = ops.reshape(ops.convert_to_tensor(options["length_penalty"]), (batch, n))[:, 0]
    scale = ops.cast(ops.power(ops.cast(t + 1, dtype), ops.cast(penalty, dtype)), "float32")
    just = stops & (ops.arange(kept, dtype="int32") < n)[None, :]
    final = top_scores / scale[:, None]
    final = final + ops.where(state["improvable"], 0.0, FLOOR)[:, None]
    final = final + ops.cast(~just, "float32") * FLOOR
    candidates = _take(ops.reshape(state["new"], (batch, n, steps)), beams)
    column = ops.arange(steps, dtype="int32")[None, None, :] == t
    candidates = ops.where(column, new[:, :, None], candidates)
    merged_scores = ops.concatenate([state["finished_scores"], final], axis=1)
    finished_scores, best = ops.top_k(merged_scores, n)
    finished = _take(ops.concatenate([state["finished"], candidates], axis=1), best)
    length = ops.concatenate([state["finished_length"],
                              ops.full((batch, kept), t + 1, "int32")], axis=1)
    finished_length = _take(length, best)
    is_finished = _take(ops.concatenate([state["is_finished"], just], axis=1), best)

    best_running = scores[:, 0] / scale
    worst = ops.where(is_finished, ops.min(finished_scores, axis=1, keepdims=True), FLOOR)
    improvable = state["improvable"] & ops.any(best_running[:, None] > worst, axis=1)
    searching = state["searching"]
    done = ~improvable | ops.all(stops, axis=1)

    def keep_old(name, new_value):  # a prompt whose search ended keeps its state
        old = state[name]
        mask = ops.reshape(searching, (batch,) + (1,) * (len(old.shape) - 1))
        return ops.where(mask, new_value, old)

    state.update(scores=keep_old("scores", scores), finished=keep_old("finished", finished),
                 finished_length=keep_old("finished_length", finished_length),
                 finished_scores=keep_old("finished_scores", finished_scores),
                 is_finished=keep_old("is_finished", is_finished),
                 improvable=keep_old("improvable", improvable),
                 searching=searching & ~done)
    # The rows: each new beam continues its source beam (rows of ended prompts stay).
    rows_of = ops.arange(batch, dtype="int32")[:, None] * n
    order = ops.reshape(ops.where(searching[:, None], rows_of + source,
                                  rows_of + ops.arange(n, dtype="int32")[None, :]), (-1,))
    last = ops.reshape(ops.where(searching[:, None], token, 0), (-1,))
    live = ops.repeat(searching, n, axis=0)
    state["tokens"] = engine.write_column(ops.take(tokens, order, axis=0), width + t, last,
                                          live)
    state["new"] = engine.write_column(ops.take(state["new"], order, axis=0), t, last, live)
    state["cache"] = tuple(ops.take(part, order, axis=0) for part in state["cache"])
    state.update(last=last, done=ops.repeat(~state["searching"], n, axis=0), step=t + 1)
    return state


def search(lm, tokens, positions, key_mask, lengths, budget, options, num_beams, kept):
    """Beam search, prefill and loop: the final state (`finished` (prompts, num_beams,
    steps) best first, `finished_length`)."""
    state = start(engine.prefill(lm, tokens, positions, key_mask, lengths, budget), num_beams)
    state = step(state, options, num_beams, kept)
    return ops.while_loop(
        lambda s: ops.any(s["searching"]),
        lambda s: step(engine.forward_last(lm, s), options, num_beams, kept), state)
