"""The dtype an export serves under: measured on this machine, or warned about.

bfloat16 halves the weights and, on a CPU with bfloat16 matrix hardware (Intel's AMX,
`amx_bf16`; AMD's `avx512_bf16`), cuts the time of a forward pass; on an Intel CPU without
AMX, or with AVX2 alone, a bfloat16 export served about half as many texts a second as the
float32 one (docs/export.md, "Which dtype on which CPU", has the figures and their machines).
`zoo export --mixed-precision auto` times the model's forward pass in both forms here
(`measure`) and serves the faster (`choose`); an export asked to serve bfloat16 on a CPU
where it was slower gets a one-line warning (`bfloat16_warning`).
"""

import time

import tensorflow as tf

FLOAT32, BFLOAT16 = "float32", "mixed_bfloat16"
AUTO = "auto"
# What a served request looks like: a single text (the latency of one request), and a batch of
# 8 texts of up to 128 tokens (`zoo benchmark serving`'s batch).
BATCHES, LENGTH = (1, 8), 128
# bfloat16 is chosen only when faster by more than this at every batch: a smaller difference
# is within the noise of a few calls on a shared machine, and float32 gives the exact answers.
MARGIN = 0.05


def synthetic_inputs(model, batch, length=LENGTH):
    """A batch for `model` made from its input specs alone: {name: tensor} of ones, every free
    dimension (batch aside) `length` long. Ones are valid ids, segments, masks and positions
    of every task's model; the time of a forward pass does not depend on the values."""

    inputs = {}
    for tensor in model.inputs:
        shape = [batch] + [length if d is None else d for d in tensor.shape[1:]]
        inputs[tensor.name.split(":")[0]] = tf.ones(shape, tensor.dtype)
    return inputs


def measure(models, batches=BATCHES, length=LENGTH, calls=3):
    """{form: {batch: milliseconds}}: the shortest time of one forward pass of each model.

    Each model is called in a `tf.function` (the graph mode the export's signatures run in)
    on `synthetic_inputs`; per batch size each is called once to trace and warm up (oneDNN
    makes its kernels for each new shape), then `calls` times more, the forms alternating
    (their order turning round each time) so that a drift in the machine's load falls on all
    of them alike. The shortest, not the median: on a shared machine other processes only
    ever add time, and three calls are few.

    Args:
        models: {form name: Keras model}, e.g. {"float32": model, "mixed_bfloat16":
            zoo.export.with_bfloat16_weights(model)}.
        batches: the batch sizes to time.
        length: the sequence length of the synthetic inputs (where the model's inputs have a
            free dimension besides the batch).
        calls: timed calls per form and batch size.
    """

    forwards = {}
    for name, model in models.items():
        specs = {tensor.name.split(":")[0]: tf.TensorSpec([None, *tensor.shape[1:]],
                                                          tensor.dtype)
                 for tensor in model.inputs}
        # One trace a form, for every batch size; `model` bound now, not at the call.
        forwards[name] = tf.function(lambda inputs, model=model: model(inputs, training=False),
                                     input_signature=[specs], autograph=False)
    timings = {name: {} for name in models}
    for batch in batches:
        inputs = synthetic_inputs(next(iter(models.values())), batch, length)
        seconds = {name: [] for name in models}
        for forward in forwards.values():
            forward(inputs)
        order = list(forwards)
        for _ in range(calls):
            for name in order:
                start = time.perf_counter()
                tf.nest.map_structure(lambda t: t.numpy(), forwards[name](inputs))
                seconds[name].append(time.perf_counter() - start)
            order.reverse()
        for name in models:
            timings[name][batch] = 1000 * min(seconds[name])
    return timings


def choose(timings, margin=MARGIN):
    """The form to serve given `measure`'s timings: bfloat16 if it is faster than float32 by
    more than `margin` at every batch size timed, otherwise float32 (its answers are exact).

    Examples:
        >>> choose({"float32": {1: 228.0, 8: 1830.0}, "mixed_bfloat16": {1: 135.0, 8: 910.0}})
        'mixed_bfloat16'
        >>> choose({"float32": {1: 110.0, 8: 640.0}, "mixed_bfloat16": {1: 100.0, 8: 1150.0}})
        'float32'
    """

    fast = all(timings[BFLOAT16][batch] < (1 - margin) * float32
               for batch, float32 in timings[FLOAT32].items())
    return BFLOAT16 if fast else FLOAT32


def pick(forms, length=LENGTH, progress=print):
    """`zoo export --mixed-precision auto`: time `forms` ({"float32": model, "mixed_bfloat16":
    its bfloat16-weights copy}) with `measure` and `choose` one; returns (the chosen form's
    name, the record of the choice for zoo_export.json). Says the timings in one line."""

    started = time.perf_counter()
    progress("timing the forward pass in float32 and in bfloat16 (--mixed-precision auto)")
    # Rounded before choosing: zoo_export.json records exactly the figures the choice was made
    # on (a near-tie on unrounded figures could otherwise read the other way from the record).
    timings = {name: {batch: round(ms, 2) for batch, ms in times.items()}
               for name, times in measure(forms, length=length).items()}
    if not any(d is None for tensor in next(iter(forms.values())).inputs
               for d in tensor.shape[1:]):
        length = None  # images: no sequence length
    choice = choose(timings)
    seconds = time.perf_counter() - started
    progress(f"{describe(timings, length)} (measured in {seconds:.0f} s): serving {choice}")
    return choice, {"choice": choice, "sequence_length": length, "margin": MARGIN,
                    "milliseconds": {name: {str(batch): ms for batch, ms in
                                            times.items()} for name, times in timings.items()},
                    "seconds": round(seconds, 1)}


def describe(timings, length=LENGTH):
    """One line: the forward pass's time per form at each batch size timed (of `length`
    tokens; None: inputs of a fixed size)."""
    return "; ".join(f"batch {batch}{f' x {length}' if length else ''}: " + ", ".join(
        f"{'bfloat16' if name == BFLOAT16 else name} {times[batch]:.0f} ms"
        for name, times in timings.items()) for batch in next(iter(timings.values())))


def bfloat16_fast(cpu):
    """Whether bfloat16 products are fast on this `zoo.hardware.CPU`: True, False, or None
    when its flags are unknown (not Linux, not x86).

    By the measurements in docs/export.md ("Which dtype on which CPU"): yes with AMX
    (`amx_bf16`), and on AMD with `avx512_bf16` (an EPYC served 1.56x float32's texts); no on
    an Intel CPU with `avx512_bf16` and no AMX (0.49x), nor on AVX2 alone (0.56x)."""

    if cpu.flags is None:
        return None
    return "amx_bf16" in cpu.flags or (cpu.vendor == "AuthenticAMD" and
                                       "avx512_bf16" in cpu.flags)


def bfloat16_warning(cpu):
    """The warning line for serving bfloat16 on this `zoo.hardware.CPU`, or None where
    bfloat16 is fast there or its flags are unknown (`bfloat16_fast`).

    Examples:
        >>> from zoo.hardware import CPU
        >>> bfloat16_warning(CPU("Xeon", "GenuineIntel", {"avx512_bf16", "amx_bf16"})) is None
        True
        >>> bfloat16_warning(CPU("Xeon", "GenuineIntel", {"avx512_bf16"}))[:40]
        'warning: this CPU has no bfloat16 matrix'
    """

    if bfloat16_fast(cpu) is not False:
        return None
    return ("warning: this CPU has no bfloat16 matrix hardware (no amx_bf16 in /proc/cpuinfo), "
            "where a bfloat16 export served about half as many texts a second as float32 "
            "(zoo benchmark serving, batch 8: 24.4 vs 49.6 texts/s on an Intel Xeon with "
            "avx512_bf16 and no AMX, 10.4 vs 18.7 on an AVX2 AMD EPYC; docs/export.md, "
            "\"Which dtype on which CPU\"); --mixed-precision auto measures and picks, float32 "
            "gives the exact answers")


__all__ = ["AUTO", "BATCHES", "LENGTH", "MARGIN", "bfloat16_fast", "bfloat16_warning", "choose",
           "describe", "measure", "pick", "synthetic_inputs"]
