"""Inside the processes of `zoo benchmark generate` (zoo_benchmarks.generate runs them): the
weights and prompts every worker loads (`prepare`), then a worker's contenders (`worker`): zoo's
Generator, keras-hub's GPT2CausalLM, transformers' GPT2LMHeadModel and OpenAIGPTLMHeadModel, and
the export's signatures.

This module imports nothing heavy at its top: the export's worker imports only tensorflow and
tensorflow_text (and numpy), as a server would, and the others their own library.
"""

import json
import os
import sys
import time

# GPT-1 (zoo's "gpt1" preset) and the --tiny size, which checks the benchmark, not the speed.
GPT1 = dict(vocabulary_size=40478, num_layers=12, num_heads=12, hidden_dim=768,
            max_sequence_length=512)
TINY = dict(vocabulary_size=1000, num_layers=2, num_heads=2, hidden_dim=64,
            max_sequence_length=128)
NO_CACHE = ", no cache"  # the suffix of zoo's modes that generate without the cache
# The export's signatures: `serving_generate` (zoo_tasks/serving/pretraining.py, the cache) and
# the `serving_default` zoo served before issue #52 (no cache; `_signatures_before_52`).
EXPORT_MODES = ("serving_generate", "serving_default before #52")
TRANSFORMERS_MODES = ("GPT2LMHeadModel", "OpenAIGPTLMHeadModel")


def prepare(root, size, batches, prompt_length, export):
    """Writes into `root` what every worker loads: zoo's GPT (zoo_config.json,
    zoo.weights.h5), the same weights as a transformers checkpoint (hf/), the prompts of each
    batch size (prompts_B.json: "ids", and "texts" that tokenize to exactly those ids), and
    with `export` the SavedModel of a `gpt1/pretrain` task on that model (export/).

    With `export` (TensorFlow), the vocabulary is a BPE of `size`'s vocabulary size learnt on
    random six-letter words; the prompts are words that are one token each, so that a text
    prompt has exactly `prompt_length` tokens. Otherwise the prompt ids are random.
    """
    import keras
    import numpy as np

    # lazy: loads Keras on the worker's backend, and with `export` TensorFlow
    import zoo

    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    texts = None
    if export:
        task, model = _causal_lm_task(root, size, rng)
        backbone = model.backbone
        words, ids = _one_token_words(task.tokenizer)
    else:
        backbone = zoo.models.create("gpt1", **size)
    with open(os.path.join(root, "zoo_config.json"), "w", encoding="utf-8") as file:
        json.dump({"class_name": type(backbone).__name__, "config": backbone.get_config()},
                  file)
    backbone.save_weights(os.path.join(root, "zoo.weights.h5"))
    try:
        # lazy: zoo.convert imports zoo's tokenizers, hence TensorFlow
        from zoo.convert import to_huggingface
    except ImportError:  # no TensorFlow (the GPU machine): OpenAIGPT gets weights of its own
        to_huggingface = None
    if to_huggingface is not None:
        to_huggingface(backbone, os.path.join(root, "hf"))
    for batch in batches:
        if export:
            chosen = rng.integers(0, len(ids), (batch, prompt_length))
            prompt_ids = np.asarray(ids)[chosen]
            texts = [" ".join(words[i] for i in row) for row in chosen]
            got = task.tokenizer(texts)
            if [list(map(int, row)) for row in got.to_list()] != prompt_ids.tolist():
                raise RuntimeError("the benchmark's text prompts do not tokenize to their ids")
        else:
            prompt_ids = rng.integers(1, size["vocabulary_size"], (batch, prompt_length))
        with open(os.path.join(root, f"prompts_{batch}.json"), "w", encoding="utf-8") as file:
            json.dump({"ids": prompt_ids.tolist(), "texts": texts}, file)
    if export:
        # lazy: TensorFlow only
        from zoo import export as export_lib

        for folder, served in (("export", task), ("export_before_52", _Before52(task))):
            archive, _ = export_lib.build_archive(served, model, None)
            export_lib.write_out(archive, os.path.join(root, folder))


class _Before52:
    """The task as `zoo.export.build_archive` reads it, serving `_signatures_before_52`."""

    def __init__(self, task):
        self.tokenizer = task.tokenizer

    def serving(self, model, run_dir):
        return _signatures_before_52(self.tokenizer, model)


def _signatures_before_52(tokenizer, model):
    """The export's text generation before issue #52 (zoo_tasks/serving/pretraining.py's
    greedy `serving_default` at ef8b9a8), kept here as the baseline of #52's target "the
    export with the cache >= 5x today's signature": no cache, every step runs the model over
    the whole `max_sequence_length` buffer and takes the logits at each row's last token."""
    # lazy: TensorFlow, in the preparing process only
    import tensorflow as tf

    # lazy: as above
    from zoo import export

    buffer = int(model.backbone.max_sequence_length)

    def logits(inputs):
        return tf.cast(model(inputs, training=False)["lm"], tf.float32)

    def generate(prompt, max_new_tokens):
        batch = tf.shape(prompt)[0]
        ids = tf.cast(tokenizer(prompt), tf.int32)
        limits = ids.row_limits()
        starts = limits - tf.minimum(ids.row_lengths(), buffer - 1)
        ids = tf.gather(ids.values, tf.ragged.range(starts, limits))
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        tokens = ids.to_tensor(0, shape=[None, buffer])
        budget = tf.broadcast_to(tf.reshape(max_new_tokens, [-1]), [batch])
        budget = tf.where(lengths > 0, tf.clip_by_value(budget, 0, buffer - lengths), 0)
        positions = tf.range(buffer)[None, :]

        def step(i, tokens, lengths):
            inputs = {"token_ids": tokens,
                      "padding_mask": tf.cast(positions < lengths[:, None], tf.int32)}
            last = tf.gather(logits(inputs), tf.maximum(lengths - 1, 0), batch_dims=1)
            token = tf.argmax(last, axis=-1, output_type=tf.int32)
            active = i < budget
            tokens = tf.where(active[:, None] & (positions == lengths[:, None]),
                              token[:, None], tokens)
            return i + 1, tokens, lengths + tf.cast(active, tf.int32)

        _, tokens, _ = tf.while_loop(
            lambda i, *_: i < tf.reduce_max(tf.concat([budget, [0]], 0)), step,
            (tf.constant(0), tokens, lengths), maximum_iterations=buffer)
        new = tf.gather(tokens, tf.ragged.range(lengths, lengths + budget), batch_dims=1)
        return {"completion": tokenizer.detokenize(new)}

    inputs = {"prompt": export.text("prompt"),
              "max_new_tokens": tf.TensorSpec(None, tf.int32, name="max_new_tokens")}
    return {
        export.DEFAULT: export.Signature(inputs, generate, ("completion",),
                                         "prompt in, its greedy continuation out"),
        export.IDS: export.Signature(export.model_inputs(model),
                                     lambda **x: {"logits": logits(x)}, ("logits",),
                                     "token ids in, next-token logits out")}


def _causal_lm_task(root, size, rng):
    """A `gpt1/pretrain` task of `size` on a BPE vocabulary of exactly its size, learnt on
    random six-letter words (60,000 of them give GPT-1's 40,478 tokens), and its model."""
    # lazy: TensorFlow only, in the preparing process
    import zoo_tasks
    from zoo import config as config_lib  # lazy: as above
    from zoo import tokenizers  # lazy: as above

    letters = list("abcdefghijklmnopqrstuvwxyz")
    words = sorted({"".join(rng.choice(letters, 6)) for _ in range(60_000)})
    # data.dir: the task checks that it holds text (nothing reads it here).
    os.makedirs(os.path.join(root, "corpus"))
    corpus = os.path.join(root, "corpus", "words.txt")
    with open(corpus, "w", encoding="utf-8") as file:
        # documents of 100 lines, a blank line between them (the task holds one out)
        file.writelines(" ".join(words[i:i + 16]) + "\n" + "\n" * (i % 1600 == 1584)
                        for i in range(0, len(words), 16))
    vocabulary = os.path.join(root, "bpe")
    tokenizers.train_vocabulary([corpus], size=size["vocabulary_size"], kind="bpe",
                                out=vocabulary)
    config = config_lib.resolve("gpt1/pretrain", [
        f"model.vocabulary={vocabulary}", f"data.dir={os.path.dirname(corpus)}",
        f"data.sequence_length={size['max_sequence_length']}",
        *(f"model.backbone.{key}={size[key]}" for key in
          ("num_layers", "num_heads", "hidden_dim", "max_sequence_length"))])
    task = zoo_tasks.create("pretrain/causal_lm", config, check_data=False)
    model = task.build_model()
    if model.backbone.vocabulary_size != size["vocabulary_size"]:
        raise RuntimeError(f"the benchmark's BPE has {model.backbone.vocabulary_size} tokens, "
                           f"not {size['vocabulary_size']}")
    return task, model


def _one_token_words(tokenizer):
    """(words, ids): the whole words of the vocabulary that tokenize to one token each."""
    vocabulary = tokenizer.get_vocabulary()
    words = [token[:-4] for token in vocabulary
             if token.endswith("</w>") and token[:-4].isalpha()]
    tokens = tokenizer(words).to_list()
    kept = [(word, int(row[0])) for word, row in zip(words, tokens) if len(row) == 1]
    if len(kept) < 100:
        raise RuntimeError(f"only {len(kept)} one-token words in the benchmark's vocabulary")
    return [word for word, _ in kept], [token for _, token in kept]


def prepare_main():
    """Entry of the preparing process: `prepare(*json.loads(sys.argv[1]))`."""
    prepare(*json.loads(sys.argv[1]))


def worker():
    """A generation worker: builds its contenders, calls each once (the first call, timed),
    then answers requests on stdin (workers._Worker's protocol): "time" (one timed call),
    "first" (the first call's seconds), "output" (the last call's new ids per row, or for
    the export's old signature the completions)."""
    spec = json.loads(sys.argv[1])
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything a library prints goes to stderr, not into the replies
    build = {"zoo": _zoo, "keras-hub": _keras_hub, "transformers": _transformers,
             "export": _export}[spec["library"]]
    fns = build(spec)
    first, last = {}, {}
    for name, fn in fns.items():
        start = time.perf_counter()
        last[name] = fn()
        first[name] = time.perf_counter() - start
    replies.write(json.dumps({"ready": list(fns)}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        name = request["name"]
        if request["op"] == "time":
            start = time.perf_counter()
            last[name] = fns[name]()
            replies.write(json.dumps({"seconds": time.perf_counter() - start}) + "\n")
        elif request["op"] == "first":
            replies.write(json.dumps({"seconds": first[name]}) + "\n")
        else:
            replies.write(json.dumps({"output": last[name]}) + "\n")


def _prompts(spec, batch):
    with open(os.path.join(spec["root"], f"prompts_{batch}.json"), encoding="utf-8") as file:
        return json.load(file)


def _calls(spec, modes, uncached):
    """(mode, batch) pairs: the modes without the cache at the uncached batches only."""
    return [(mode, batch) for mode in modes
            for batch in (spec["uncached_batches"] if mode in uncached else spec["batches"])]


def _zoo(spec):
    """zoo's `generation.Generator` on the worker's backend, per mode: with the cache ("graph",
    "xla" on TensorFlow; "jit" on JAX), and without it (`use_cache=False`)."""
    # lazy: loads Keras on the worker's backend
    import zoo
    from zoo import generation  # lazy: as above

    root = spec["root"]
    with open(os.path.join(root, "zoo_config.json"), encoding="utf-8") as file:
        saved = json.load(file)
    backbone = getattr(zoo.models, saved["class_name"]).from_config(saved["config"])
    backbone.load_weights(os.path.join(root, "zoo.weights.h5"))
    fns = {}
    generators = {}
    uncached = [mode for mode in spec["modes"] if mode.endswith(NO_CACHE)]
    for mode, batch in _calls(spec, spec["modes"], uncached):
        compiled = mode.removesuffix(NO_CACHE)
        if mode not in generators:
            # "graph" is tf.function on TensorFlow, jax.jit on JAX
            generators[mode] = generation.Generator(
                backbone, compile="graph" if compiled == "jit" else compiled)
        ids = _prompts(spec, batch)["ids"]

        def call(gen=generators[mode], ids=ids, cache=mode not in uncached):
            return [list(map(int, row)) for row in gen.generate(
                ids, max_new_tokens=spec["new_tokens"], use_cache=cache)]

        fns[f"{mode} {batch}"] = call
    return fns


def _keras_hub(spec):
    """keras-hub's GPT2CausalLM at GPT-1's size, random weights, greedy sampler, on token ids
    (no preprocessor): the prompt in the first slots of a buffer of prompt + new tokens, its
    padding mask, and no stop token, so that it writes to the buffer's end."""
    import keras
    import keras_hub
    import numpy as np

    size = spec["size"]
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.GPT2Backbone(
        vocabulary_size=size["vocabulary_size"], num_layers=size["num_layers"],
        num_heads=size["num_heads"], hidden_dim=size["hidden_dim"],
        intermediate_dim=4 * size["hidden_dim"], dropout=0.0,
        max_sequence_length=size["max_sequence_length"])
    fns = {}
    for mode, batch in _calls(spec, spec["modes"], ()):
        # keras-hub's generate is a tf.function with the model's `jit_compile` on TensorFlow
        # (Keras turns XLA off on a CPU-only machine unless asked), jax.jit on JAX.
        lm = keras_hub.models.GPT2CausalLM(backbone, preprocessor=None)
        lm.compile(sampler="greedy", **({"jit_compile": mode == "xla"}
                                        if keras.backend.backend() == "tensorflow" else {}))
        prompt = np.asarray(_prompts(spec, batch)["ids"], "int32")
        length = prompt.shape[1]
        token_ids = np.zeros((batch, length + spec["new_tokens"]), "int32")
        token_ids[:, :length] = prompt
        inputs = {"token_ids": token_ids, "padding_mask": token_ids * 0 + (
            np.arange(token_ids.shape[1]) < length)}

        def call(lm=lm, inputs=inputs, length=length):
            out = lm.generate(dict(inputs), stop_token_ids=None)["token_ids"]
            return np.asarray(out)[:, length:].tolist()

        fns[f"{mode} {batch}"] = call
    return fns


def _transformers(spec):
    """transformers' GPT2LMHeadModel (GPT-2 at GPT-1's size, random weights, with its cache)
    and OpenAIGPTLMHeadModel (zoo's weights, or random ones without TensorFlow; no cache),
    `generate(do_sample=False)` with `min_new_tokens = max_new_tokens`, in float32 on the
    spec's device."""
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    size, device, new = spec["size"], spec["device"], spec["new_tokens"]
    torch.manual_seed(0)
    # GPT-2's end-of-text token is given id 0 (its own, 50256, is past this vocabulary), and
    # `min_new_tokens` holds it off: no early stop.
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=size["vocabulary_size"], n_positions=size["max_sequence_length"],
        n_embd=size["hidden_dim"], n_layer=size["num_layers"], n_head=size["num_heads"],
        bos_token_id=0, eos_token_id=0, pad_token_id=0))
    hf = os.path.join(spec["root"], "hf")
    if os.path.isdir(hf):
        gpt1 = transformers.OpenAIGPTLMHeadModel.from_pretrained(hf)
    else:  # zoo's weights could not be converted (no TensorFlow): random ones
        gpt1 = transformers.OpenAIGPTLMHeadModel(transformers.OpenAIGPTConfig(
            vocab_size=size["vocabulary_size"], n_positions=size["max_sequence_length"],
            n_embd=size["hidden_dim"], n_layer=size["num_layers"], n_head=size["num_heads"]))
    models = {"GPT2LMHeadModel": gpt2, "OpenAIGPTLMHeadModel": gpt1}
    fns = {}
    for mode, batch in _calls(spec, spec["modes"], ["OpenAIGPTLMHeadModel"]):
        model = models[mode].to(device).eval()
        ids = torch.tensor(_prompts(spec, batch)["ids"], dtype=torch.long, device=device)

        def call(model=model, ids=ids):
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                     do_sample=False, max_new_tokens=new, min_new_tokens=new,
                                     pad_token_id=0)
            return out[:, ids.shape[1]:].cpu().tolist()

        fns[f"{mode} {batch}"] = call
    return fns


# Per-request inputs of the export's `serving_generate` other than the prompt, set to greedy
# decoding of `new` tokens with nothing else on: a SavedModel signature takes every input.
def _neutral(name, new):
    values = {"max_new_tokens": new, "min_new_tokens": new, "do_sample": 0, "temperature": 1.0,
              "top_k": 0, "top_p": 1.0, "seed": 0, "stop": [""], "num_beams": 1,
              "length_penalty": 1.0, "repetition_penalty": 1.0, "no_repeat_ngram_size": 0}
    if name not in values:
        raise RuntimeError(f"serving_generate takes {name!r}, which the benchmark does not know")
    return values[name]


def _export(spec):
    """The export's `serving_generate` (with the cache) and the `serving_default` zoo served
    before #52 (no cache; another SavedModel of the same model), loaded by
    tf.saved_model.load in a process that imports only tensorflow and tensorflow_text."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the tokenizer's ops)

    loaded = {mode: tf.saved_model.load(os.path.join(spec["root"], folder)) for mode, folder
              in zip(EXPORT_MODES, ("export", "export_before_52")) if mode in spec["modes"]}
    if {"zoo", "zoo_tasks"} & set(sys.modules):  # a server has none of them
        raise RuntimeError("the export's worker imported zoo")
    fns = {}
    new = spec["new_tokens"]
    for mode, batch in _calls(spec, spec["modes"], EXPORT_MODES[1:]):
        signature = loaded[mode].signatures[
            "serving_generate" if mode == EXPORT_MODES[0] else "serving_default"]
        prompt = tf.constant(_prompts(spec, batch)["texts"])
        if mode == EXPORT_MODES[0]:
            _, inputs = signature.structured_input_signature
            feed = {name: tf.constant(_neutral(name, new), dtype=tensor.dtype)
                    for name, tensor in inputs.items() if name != "prompt"}

            def call(signature=signature, prompt=prompt, feed=feed):
                return signature(prompt=prompt, **feed)["new_tokens"].numpy().tolist()
        else:
            def call(signature=signature, prompt=prompt):
                out = signature(prompt=prompt, max_new_tokens=tf.constant(new))
                return [text.decode() for text in out["completion"].numpy()]

        fns[f"{mode} {batch}"] = call
    return fns
