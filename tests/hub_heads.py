"""Small fine-tuned Hugging Face checkpoints, made by transformers (torch), for the tests that
compare zoo with transformers' pipelines on the same folders.

Owned here: one tiny lower-case WordPiece vocabulary (`VOCAB`) that every BERT shares, a GPT-1
`</w>` BPE vocabulary of the same words, synthetic labelled data built from those words, the
label names (`SENTIMENT`, `TAGS`, `COLOURS`), the example inputs the tests feed both libraries
(`SENTENCES`, `TAGGED_SENTENCES`, `QA`, `CHOICES`, `MASKED`, `PROMPTS`, `images()`), and one
function a checkpoint. Each writes a folder as the hub holds one (`save_pretrained`,
safetensors, plus vocab.txt + tokenizer_config.json, vocab.json + merges.txt or
preprocessor_config.json) and returns its path. Each is seeded (the same bytes on every run)
and trains 30 to 150 full-batch AdamW steps on CPU, so its predictions differ from input to
input and mostly make sense; the whole set takes about 12 s of CPU, imports included.
"""

import collections
import io
import json
import random
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers
from PIL import Image

SENTIMENT = ("negative", "neutral", "positive")
TAGS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")
COLOURS = ("red", "green", "blue")
REGRESSION_LABEL = "score"  # the one output of `text_classifier(problem_type="regression")`

POSITIVE, NEGATIVE, NEUTRAL = ("good", "great", "fun"), ("bad", "awful", "dull"), ("long", "ok")
NOUNS = ("film", "movie", "plot", "story", "acting")
PEOPLE = ("john", "mary", "alice", "bob", "peterson", "johnson")  # the last two: two pieces
PLACES = ("paris", "london", "berlin", "tokyo")
WORDS = (*POSITIVE, *NEGATIVE, *NEUTRAL, *NOUNS, "the", "a", "this", "it", "was", "is", "very",
         "not", "and", "but", "i", "liked", "hated", "watched", "yesterday", "smith", "new",
         "york", "lives", "live", "in", "visited", "met", "went", "to", "works", "where", "who",
         "does", "how", "he", "she", *PEOPLE[:4], *PLACES, "peter")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "!", "?", *WORDS,
         "##son", "##s", "##ed"]

# Example inputs: mixed case, punctuation, a word in pieces ("films", "johnson") and one
# unknown to the vocabulary ("xylophone").
SENTENCES = ["The film was great!", "the plot was very dull .", "I watched the movie yesterday.",
             "This movie was good, but the acting was awful.", "the story is long",
             "i liked the films and the xylophone"]
TAGGED_SENTENCES = ["John Smith lives in New York.", "mary visited paris yesterday .",
                    "Peterson met Alice in Berlin.", "johnson works in tokyo"]
QA = [("Where does Bob live?", "Bob lives in Tokyo. The acting was bad."),
      ("Who lives in Berlin?", "The movie was awful. Bob lives in Berlin."),
      ("how was it ?", "johnson lives in new york . the plot was dull ."),
      ("where does mary smith live ?", "the acting was great . mary smith lives in new york .")]
CHOICES = [("john went to paris .", ["john is in paris .", "in paris john is .",
                                     "is john . in paris", "paris is john in ."]),
           ("Mary Smith went to New York.", ["York Smith in is Mary New.",
                                             "Mary Smith is in New York.",
                                             "in New Mary is York Smith.",
                                             "Smith Mary York New is in."]),
           ("Peterson went to Tokyo.", ["Peterson is in Tokyo.", "Tokyo in is Peterson.",
                                        ". is Tokyo in Peterson", "in Peterson Tokyo is."])]
# zoo's tokenizers read "[MASK]" in raw text as text (zoo.tokenizers.wordpiece), transformers'
# as the mask token: the ids of MASKED differ unless the caller places the mask itself.
MASKED = ["the film was [MASK] .", "John lives in [MASK].", "[MASK] visited london yesterday ."]
PROMPTS = ["the film was", "john lives in", "Mary visited"]

_BERT_SIZE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64)
_GPT_SIZE = dict(n_embd=32, n_layer=2, n_head=2, n_positions=64)
_IMAGE_SIZE, _PATCH_SIZE = 32, 8
_BASE_COLOURS = np.array([[200, 40, 40], [40, 190, 50], [40, 50, 200]], np.float32)


# === Synthetic data ===

def _sentiment_data(rng, count=60):
    """[(words, sentiment index)]: a positive word -> positive, a negative one -> negative (both:
    the later one), else neutral."""
    data = []
    for _ in range(count):
        kind = rng.randrange(4)
        noun = rng.choice(NOUNS)
        if kind == 3:
            good, bad = rng.choice(POSITIVE), rng.choice(NEGATIVE)
            pair = [(good, 2), (bad, 0)] if rng.random() < 0.5 else [(bad, 0), (good, 2)]
            words = f"the {noun} was {pair[0][0]} but the {rng.choice(NOUNS)} was {pair[1][0]} ."
            data.append((words.split(), pair[1][1]))
            continue
        label = kind
        adjective = rng.choice((NEGATIVE, NEUTRAL, POSITIVE)[label])
        verb = ("hated", "watched", "liked")[label]
        template = rng.choice(["the {n} was {a} .", "this {n} is very {a}", "i {v} the {n} .",
                               "it was a {a} {n} !"])
        data.append((template.format(n=noun, a=adjective, v=verb).split(), label))
    return data


def _multi_hot(words):
    """Multi-label targets: negative and positive for each kind of word, neutral for neither."""
    negative = any(w in NEGATIVE or w == "hated" for w in words)
    positive = any(w in POSITIVE or w == "liked" for w in words)
    return [float(negative), float(not (negative or positive)), float(positive)]


def _person(rng):
    """(words, tags) of a one- or two-word name."""
    if rng.random() < 0.3:
        return [rng.choice(PEOPLE[:4]), "smith"], ["B-PER", "I-PER"]
    return [rng.choice(PEOPLE)], ["B-PER"]


def _place(rng):
    if rng.random() < 0.25:
        return ["new", "york"], ["B-LOC", "I-LOC"]
    return [rng.choice(PLACES)], ["B-LOC"]


def _tagged_data(rng, count=60):
    """[(words, IOB2 tags)]: names are PER, places LOC."""
    data = []
    for _ in range(count):
        (person, person_tags), (place, place_tags) = _person(rng), _place(rng)
        kind = rng.randrange(4)
        if kind == 0:
            words = person + ["lives", "in"] + place + ["."]
            tags = person_tags + ["O", "O"] + place_tags + ["O"]
        elif kind == 1:
            words, tags = person + ["visited"] + place, person_tags + ["O"] + place_tags
            words, tags = words + ["yesterday", "."], tags + ["O", "O"]
        elif kind == 2:
            other, other_tags = _person(rng)
            words = person + ["met"] + other + ["in"] + place
            tags = person_tags + ["O"] + other_tags + ["O"] + place_tags
        else:
            words, tags = ["the", "film", "was"] + [rng.choice(POSITIVE + NEGATIVE)], ["O"] * 4
        data.append((words, tags))
    return data


def _qa_data(rng, count=64):
    """[(question, context, answer, answer's character start)]: a context of a sentence on a
    person and one on a film; the question asks for the place, the person or the verdict."""
    data = []
    for _ in range(count):
        (person, _), (place, _) = _person(rng), _place(rng)
        person, place, verdict = " ".join(person), " ".join(place), rng.choice(
            POSITIVE + NEGATIVE + NEUTRAL)
        sentences = [f"{person} lives in {place} .", f"the {rng.choice(NOUNS)} was {verdict} ."]
        rng.shuffle(sentences)
        context = " ".join(sentences)
        kind = rng.randrange(3)
        question, answer, before = [(f"where does {person} live ?", place, "lives in "),
                                    (f"who lives in {place} ?", person, ""),
                                    ("how was it ?", verdict, "was ")][kind]
        start = context.index(before + answer + " ") + len(before)
        if kind == 1:
            start = context.index(f"{person} lives")
        data.append((question, context, answer, start))
    return data


def _choice_data(rng, count=48):
    """[(context, four endings, the right one's index)]: "X went to Y ." ends "X is in Y ."; the
    other endings are those words shuffled."""
    data = []
    for _ in range(count):
        (person, _), (place, _) = _person(rng), _place(rng)
        right = f"{' '.join(person)} is in {' '.join(place)} ."
        endings = {right}
        while len(endings) < 4:
            words = right.split()
            rng.shuffle(words)
            endings.add(" ".join(words))
        endings = sorted(endings)
        rng.shuffle(endings)
        data.append((f"{' '.join(person)} went to {' '.join(place)} .", endings,
                     endings.index(right)))
    return data


def _corpus(rng):
    """Plain sentences of every kind, for masked and causal language modelling."""
    texts = [" ".join(words) for words, _ in _sentiment_data(rng, 48)]
    texts += [" ".join(words) for words, _ in _tagged_data(rng, 48)]
    return texts


# === Shared machinery ===

def _labels(names):
    return dict(id2label=dict(enumerate(names)), label2id={n: i for i, n in enumerate(names)})


def _bert_config(**extra):
    return transformers.BertConfig(vocab_size=len(VOCAB), **_BERT_SIZE, **extra)


def _write_wordpiece(path):
    """vocab.txt and tokenizer_config.json in `path`; transformers' tokenizer for them."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer",
         "model_max_length": _BERT_SIZE["max_position_embeddings"]}), encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(str(path))


def _train(model, batch, steps, learning_rate=3e-3, fresh=None):
    """`steps` full-batch AdamW steps on transformers' own loss; `fresh(step)`, when given, makes
    each step's batch (masking). The model comes back in eval mode. On one thread: the same
    weights however many the process uses, and faster for tensors this small."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model.train()
        for step in range(steps):
            loss = model(**(fresh(step) if fresh else batch)).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def _save(model, path):
    model.save_pretrained(str(path))
    return Path(path)


# === BERT heads ===

def text_classifier(path, problem_type="single_label_classification"):
    """BertForSequenceClassification on sentiment: `SENTIMENT` labels, sigmoid-scored for
    "multi_label_classification"; "regression" has one output (`REGRESSION_LABEL`: -1 negative,
    0 neutral, 1 positive)."""
    kinds = ("single_label_classification", "multi_label_classification", "regression")
    if problem_type not in kinds:
        raise ValueError(f"problem_type {problem_type!r}: one of {kinds}")
    torch.manual_seed(0)
    tokenizer = _write_wordpiece(path)
    data = _sentiment_data(random.Random(0))
    batch = dict(tokenizer([" ".join(w) for w, _ in data], padding=True, return_tensors="pt"))
    names = (REGRESSION_LABEL,) if problem_type == "regression" else SENTIMENT
    if problem_type == "single_label_classification":
        batch["labels"] = torch.tensor([label for _, label in data])
    elif problem_type == "multi_label_classification":
        batch["labels"] = torch.tensor([_multi_hot(words) for words, _ in data])
    else:
        batch["labels"] = torch.tensor([label - 1.0 for _, label in data])
    model = transformers.BertForSequenceClassification(_bert_config(
        num_labels=len(names), problem_type=problem_type, **_labels(names)))
    return _save(_train(model, batch, steps=80), path)


def token_classifier(path):
    """BertForTokenClassification with IOB2 `TAGS` (names PER, places LOC). A word's later
    pieces learn I- of its type, so a word's tag reads the same from any of its pieces."""
    torch.manual_seed(0)
    tokenizer = _write_wordpiece(path)
    data = _tagged_data(random.Random(1))
    encoded = tokenizer([w for w, _ in data], is_split_into_words=True, padding=True,
                        return_tensors="pt")
    labels = torch.full(encoded["input_ids"].shape, -100)
    for row, (_, tags) in enumerate(data):
        previous = None
        for position, word in enumerate(encoded.word_ids(row)):
            if word is not None:
                tag = tags[word]
                if word == previous and tag != "O":
                    tag = "I-" + tag[2:]
                labels[row, position] = TAGS.index(tag)
            previous = word
    batch = {**encoded, "labels": labels}
    model = transformers.BertForTokenClassification(_bert_config(**_labels(TAGS)))
    return _save(_train(model, batch, steps=50), path)


def question_answerer(path):
    """BertForQuestionAnswering: "where does X live ?", "who lives in Y ?" or "how was it ?"
    over a context of a sentence on a person and one on a film."""
    torch.manual_seed(0)
    tokenizer = _write_wordpiece(path)
    data = _qa_data(random.Random(2))
    encoded = tokenizer([q for q, *_ in data], [c for _, c, *_ in data], padding=True,
                        return_tensors="pt")
    starts, ends = [], []
    for row, (_, _, answer, start) in enumerate(data):
        starts.append(encoded.char_to_token(row, start, sequence_index=1))
        ends.append(encoded.char_to_token(row, start + len(answer) - 1, sequence_index=1))
    batch = {**encoded, "start_positions": torch.tensor(starts),
             "end_positions": torch.tensor(ends)}
    model = transformers.BertForQuestionAnswering(_bert_config())
    return _save(_train(model, batch, steps=100), path)


def multiple_choice(path):
    """BertForMultipleChoice: after "X went to Y .", "X is in Y ." rather than its words
    shuffled. Trained gently (a low rate), so scores stay graded rather than tied at a
    saturated pooler's two values."""
    torch.manual_seed(0)
    tokenizer = _write_wordpiece(path)
    data = _choice_data(random.Random(3))
    firsts = [context for context, endings, _ in data for _ in endings]
    seconds = [ending for _, endings, _ in data for ending in endings]
    encoded = tokenizer(firsts, seconds, padding=True, return_tensors="pt")
    batch = {key: value.view(len(data), 4, -1) for key, value in encoded.items()}
    batch["labels"] = torch.tensor([answer for *_, answer in data])
    model = transformers.BertForMultipleChoice(_bert_config())
    return _save(_train(model, batch, steps=40, learning_rate=1e-3), path)


def masked_lm(path):
    """BertForMaskedLM trained on the sentiment and tagging sentences, 15% of tokens masked
    afresh each step."""
    torch.manual_seed(0)
    tokenizer = _write_wordpiece(path)
    encoded = tokenizer(_corpus(random.Random(4)), padding=True, return_tensors="pt")
    ids = encoded["input_ids"]
    special = (ids == tokenizer.pad_token_id) | (ids == tokenizer.cls_token_id) | (
        ids == tokenizer.sep_token_id)
    generator = torch.Generator().manual_seed(0)

    def fresh(step):
        chosen = (torch.rand(ids.shape, generator=generator) < 0.15) & ~special
        return {**encoded, "input_ids": ids.masked_fill(chosen, tokenizer.mask_token_id),
                "labels": ids.masked_fill(~chosen, -100)}

    model = transformers.BertForMaskedLM(_bert_config())
    return _save(_train(model, None, steps=150, fresh=fresh), path)


def sentence_transformer(path):
    """A sentence-transformers folder saved by sentence-transformers: a random tiny BERT on
    `VOCAB` (Transformer, max_seq_length 32), mean pooling, Normalize."""
    # lazy: a second of import time that only this checkpoint needs
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    torch.manual_seed(0)
    model = transformers.BertModel(_bert_config())
    with torch.no_grad():  # LayerNorms and biases off their 1 / 0 initialisation
        for name, parameter in model.named_parameters():
            if "LayerNorm" in name or name.endswith("bias"):
                parameter.add_(0.1 * torch.randn_like(parameter))
    with tempfile.TemporaryDirectory() as base:
        _write_wordpiece(base)
        model.save_pretrained(base)
        transformer = modules.Transformer(base, max_seq_length=32)
        stack = [transformer, modules.Pooling(transformer.get_embedding_dimension(),
                                              pooling_mode="mean"), modules.Normalize()]
        SentenceTransformer(modules=stack, device="cpu").save(str(path))
    return Path(path)


# === GPT-1 ===

def _merge(word, pair):
    """`word`'s symbols with each occurrence of `pair` joined, left to right."""
    out, i = [], 0
    while i < len(word):
        if tuple(word[i:i + 2]) == pair:
            out.append(pair[0] + pair[1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def _write_bpe(path):
    """GPT-1's vocab.json (`</w>` ends a word) and merges.txt: every letter alone and word-final,
    and merges learnt as BPE learns them (the most frequent pair first) on `WORDS` until each is
    one token; a word outside `WORDS` splits into pieces."""
    vocabulary, merges = {"<unk>": 0}, []
    for letter in sorted(set("".join(WORDS) + ".,!?abcdefghijklmnopqrstuvwxyz")):
        vocabulary.setdefault(letter, len(vocabulary))
        vocabulary.setdefault(letter + "</w>", len(vocabulary))
    words = [[*word[:-1], word[-1] + "</w>"] for word in WORDS]
    while True:
        counts = collections.Counter(pair for word in words for pair in zip(word, word[1:]))
        if not counts:
            break
        best = max(counts, key=lambda pair: (counts[pair], pair))
        merges.append(" ".join(best))
        vocabulary.setdefault("".join(best), len(vocabulary))
        words = [_merge(word, best) for word in words]
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    (path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n",
                                     encoding="utf-8")
    (path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "OpenAIGPTTokenizer", "model_max_length": _GPT_SIZE["n_positions"]}),
        encoding="utf-8")
    return transformers.AutoTokenizer.from_pretrained(str(path))


def gpt_lm(path):
    """OpenAIGPTLMHeadModel trained as a language model on the sentiment and tagging sentences;
    GPT-1 BPE files that transformers' OpenAIGPTTokenizer and zoo's GPTTokenizer both read."""
    torch.manual_seed(0)
    tokenizer = _write_bpe(path)
    texts = _corpus(random.Random(5))  # four sentences a row: a sentence follows a full stop
    rows = [tokenizer(" ".join(texts[i:i + 4]))["input_ids"] for i in range(0, len(texts), 4)]
    width = max(map(len, rows))
    ids = torch.tensor([row + [0] * (width - len(row)) for row in rows])
    mask = torch.tensor([[1] * len(row) + [0] * (width - len(row)) for row in rows])
    batch = dict(input_ids=ids, attention_mask=mask, labels=ids.masked_fill(mask == 0, -100))
    model = transformers.OpenAIGPTLMHeadModel(transformers.OpenAIGPTConfig(
        vocab_size=len(tokenizer), **_GPT_SIZE))
    return _save(_train(model, batch, steps=80, learning_rate=1e-2), path)


# === ViT ===

def _pixels(rng, label, size=_IMAGE_SIZE):
    """A (size, size, 3) uint8 image, mostly the colour `COLOURS[label]`, with noise."""
    noise = rng.uniform(-45, 45, (size, size, 3))
    return np.clip(_BASE_COLOURS[label] + noise, 0, 255).astype(np.uint8)


def images(size=_IMAGE_SIZE):
    """PNG bytes of one red, one green and one blue noisy `size` x `size` image (in `COLOURS`'
    order), unlike any training image."""
    rng = np.random.default_rng(7)
    out = []
    for label in range(len(COLOURS)):
        buffer = io.BytesIO()
        Image.fromarray(_pixels(rng, label, size)).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def image_classifier(path):
    """ViTForImageClassification (32x32 images, 8x8 patches) telling `COLOURS` apart, with the
    ViTImageProcessor settings zoo.convert.hf_export writes (resize, 1/255, mean and std 0.5)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    labels = [label for label in range(len(COLOURS)) for _ in range(8)]
    pixels = np.stack([_pixels(rng, label) for label in labels]).astype(np.float32)
    values = torch.from_numpy((pixels / 255 - 0.5) / 0.5).permute(0, 3, 1, 2)
    batch = dict(pixel_values=values, labels=torch.tensor(labels))
    model = transformers.ViTForImageClassification(transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        image_size=_IMAGE_SIZE, patch_size=_PATCH_SIZE, **_labels(COLOURS)))
    _save(_train(model, batch, steps=30), path)
    processor = dict(image_processor_type="ViTImageProcessor", do_resize=True,
                     size={"height": _IMAGE_SIZE, "width": _IMAGE_SIZE}, resample=2,
                     do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                     image_mean=[0.5] * 3, image_std=[0.5] * 3)
    (Path(path) / "preprocessor_config.json").write_text(
        json.dumps(processor, indent=2, sort_keys=True), encoding="utf-8")
    return Path(path)
