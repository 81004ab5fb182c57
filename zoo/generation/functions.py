"""Generation as functions of a model: `generate(model, ...)` and `stream(model, ...)` on the
`Generator` kept for that model (`generator_for`), so that a second call does not compile the
step again. The model classes know nothing of generation (models are the lowest floor,
docs/layout.md); these functions are where a model writes text."""

from zoo.generation.generator import Generator

_KEPT = "_zoo_generator"  # the model's attribute that holds its kept Generator


def generator_for(model, tokenizer=None, compile="graph"):
    """The `Generator` of `model` with `tokenizer` and `compile`, kept for the next call.

    The generator is kept on the model (an untracked attribute: not a weight, not saved), so
    it lives as long as the model; a call with another tokenizer or `compile` replaces it.

    Examples:
        >>> import zoo
        >>> from zoo import generation
        >>> model = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                           vocabulary_size=50)
        >>> generation.generator_for(model) is generation.generator_for(model)
        True
        >>> generation.generator_for(model, compile=None).compile is None
        True
    """
    kept = model.__dict__.get(_KEPT)
    if kept is None or kept.tokenizer is not tokenizer or kept.compile != compile:
        kept = Generator(model, tokenizer, compile=compile)
        object.__setattr__(model, _KEPT, kept)  # not a tracked attribute
    return kept


def generate(model, prompts, tokenizer=None, **options):
    """Continue prompts with the key/value cache: `Generator.generate` on the model's kept
    generator (`generator_for(model, tokenizer)`).

    Text prompts and stop strings need the model's `tokenizer`; token ids work without one.

    Examples:
        >>> import zoo
        >>> from zoo import generation
        >>> model = zoo.models.create("gpt1", num_layers=1, hidden_dim=32, num_heads=2,
        ...                           vocabulary_size=50)
        >>> ids = generation.generate(model, [5, 6, 7], max_new_tokens=4)
        >>> len(ids), generation.generate(model, [[5, 6, 7]], max_new_tokens=4)[0] == ids
        (4, True)
    """
    return generator_for(model, tokenizer).generate(prompts, **options)


def stream(model, prompt, tokenizer, **options):
    """Yield the continuation of one text prompt as it is decoded: `Generator.stream` on the
    model's kept generator (`generator_for(model, tokenizer)`)."""
    return generator_for(model, tokenizer).stream(prompt, **options)
