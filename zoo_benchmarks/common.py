"""What several benchmarks share: families, backends, result lookups, ratio cells, corpus,
and the environment of the lab's child processes.

The default corpus serves tokenizers and serving; `preset_for` bucketing and serving.
"""

import os

# The clone the lab is in (the folder above zoo_benchmarks/), which its child processes import it
# from.
ROOT = os.path.dirname(os.path.dirname(__file__))

BACKENDS = ("tensorflow", "jax")

FAMILIES = {
    # family: (zoo preset, keras-hub backbone or None, transformers class)
    "bert": ("bert_base", "BertBackbone", "BertModel"),
    "gpt1": ("gpt1", None, "OpenAIGPTModel"),  # keras-hub has no GPT-1
    "vit": ("vit_base16", "ViTBackbone", "ViTModel"),
}


def child_environment(**settings):
    """os.environ with `settings`, and the lab's clone last on PYTHONPATH: a child process (a
    worker, the weights' writer, the GPU script's halves) imports zoo_benchmarks wherever the
    command started, also under `zoo benchmark`, whose editable install maps only zoo's
    packages."""
    path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return dict(os.environ, PYTHONPATH=os.pathsep.join(path + [ROOT]), **settings)


def split_contender(name):
    mode, policy, batch = name.split()
    return mode, policy, int(batch)


def training_rows(results, per_step, spec):
    """Markdown rows of timed training steps, fastest first: library, backend, mode, steps/s,
    items/s (`per_step(batch)` items a step, formatted with `spec`), s per step, last loss."""
    rows = []
    for (label, name), (seconds, loss) in sorted(results.items(), key=lambda kv: kv[1][0]):
        library, _, backend = label.partition(" ")
        mode, _, batch = split_contender(name)
        rows.append(f"| {library} | {backend or 'torch'} | {mode} | {1 / seconds:.3f} "
                    f"| {per_step(batch) / seconds:{spec}} | {seconds:.2f} | {loss:.3f} |")
    return rows


def fastest(results, label, batch, policy="float32"):
    """The fastest (seconds, contender name) of one worker at one batch size and policy."""
    found = [(seconds, name) for (lab, name), (seconds, _) in results.items()
             if lab == label and split_contender(name)[1:] == (policy, batch)]
    return min(found) if found else (None, None)


def target_cell(ratio, goal=None, lower_is_better=False):
    if ratio is None:
        return "n/a"
    if goal is None:
        return f"{ratio:.2f} (no target)"
    met = ratio <= goal if lower_is_better else ratio >= goal
    sign = "≤" if lower_is_better else "≥"
    return f"{ratio:.3f} ({'met' if met else 'missed'}: target {sign} {goal})"


def corpus_lines(paths):
    """The non-blank lines of the --corpus files (any filesystem), or of CPython's reference
    text when none are given."""
    if paths:
        # lazy: loads TensorFlow; the torch worker imports this module
        from zoo import files

        lines = []
        for path in paths:
            with files.open(path, encoding="utf-8") as file:
                lines += [line.rstrip("\r\n") for line in file]
    else:
        import pydoc_data.topics

        lines = "\n".join(pydoc_data.topics.topics.values()).split("\n")
    return [line for line in lines if line.strip()]


def preset_for(args):
    """--preset of bucketing and serving; under `all`, bert_base (bert_tiny with --tiny)."""
    return getattr(args, "preset", "bert_tiny" if getattr(args, "tiny", False) else "bert_base")
