"""Fine-tuning input pipelines: SQuAD windows, CoNLL NER alignment, images, causal-LM blocks.

References are independent: transformers' fast BERT tokenizer (overflowing windows, offsets,
`word_ids()`), literal re-implementations of `run_squad.py`'s doc-span loop and
`_check_is_max_context`, and transformers' `ViTImageProcessor`.
"""

import logging
import random

import numpy as np
import pytest
import tensorflow as tf

from tests.data_fixtures import WORDS, random_sentence, wordpiece, write_corpus, write_vocab
from zoo.data.image_classification import image_dataset
from zoo.data.pretraining.causal_lm import causal_lm_dataset
from zoo.data.readers import CONLL_TAGS
from zoo.data.span_qa import span_qa_dataset, span_qa_windows
from zoo.data.tagging import align_tokens, tagging_dataset


@pytest.fixture(scope="module")
def vocab_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("vocab")
    write_vocab(str(directory))
    return directory


@pytest.fixture(scope="module")
def tokenizer(vocab_dir):
    return wordpiece(str(vocab_dir / "vocab.txt"))


@pytest.fixture(scope="module")
def hf_tokenizer(vocab_dir):
    import transformers
    return transformers.BertTokenizerFast.from_pretrained(str(vocab_dir), do_lower_case=True)


# === SQuAD ===


def run_squad_doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """`convert_examples_to_features` of google-research/bert `run_squad.py`, verbatim logic."""
    doc_spans, start_offset = [], 0
    while start_offset < num_tokens:
        length = min(num_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append((start_offset, length))
        if start_offset + length == num_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def run_squad_is_max_context(doc_spans, cur_span_index, position):
    """`_check_is_max_context` of `run_squad.py`."""
    best_score, best_span_index = None, None
    for span_index, (start, length) in enumerate(doc_spans):
        end = start + length - 1
        if position < start or position > end:
            continue
        score = min(position - start, end - position) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_span_index = score, span_index
    return cur_span_index == best_span_index


# Accents are stripped by the uncased normalizer: offsets must still index the original text.
ACCENTED = ["Zürich", "café", "Naïve", "résumé", "Ångström"]


def squad_examples(num, seed):
    """Contexts of random sentences; answers are word-aligned spans or unanswerable."""
    rng = random.Random(seed)
    examples = []
    for k in range(num):
        sentences = [random_sentence(rng, 2, 14) for _ in range(rng.randint(1, 12))]
        context = " ".join(f"{s} {rng.choice(ACCENTED)}," if rng.random() < 0.3 else s
                           for s in sentences)
        question = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))) + "?"
        words = context.split(" ")
        i = rng.randrange(len(words))
        j = min(len(words), i + rng.randint(1, 4))
        start = len(" ".join(words[:i])) + (i > 0)
        text = " ".join(words[i:j])
        assert context[start:start + len(text)] == text
        impossible = k % 5 == 0
        examples.append({"id": f"q{k}", "question": question, "context": context,
                         "answers": [] if impossible else [{"text": text, "answer_start": start}],
                         "is_impossible": impossible})
    return examples


@pytest.mark.parametrize("max_sequence_length,doc_stride", [(48, 16), (64, 7), (384, 128)])
def test_span_qa_windows_match_transformers(tokenizer, hf_tokenizer, max_sequence_length,
                                            doc_stride):
    examples = squad_examples(150, seed=max_sequence_length)
    windows = span_qa_windows(examples, tokenizer, max_sequence_length, doc_stride)
    rows = {}
    for row, index in enumerate(windows["example_index"]):
        rows.setdefault(int(index), []).append(row)
    assert sorted(rows) == list(range(len(examples)))
    multi = 0
    for index, example in enumerate(examples):
        question = hf_tokenizer(example["question"], add_special_tokens=False)["input_ids"]
        window = max_sequence_length - len(question) - 3
        context_ids = hf_tokenizer(example["context"], add_special_tokens=False)["input_ids"]
        if len(context_ids) <= window:
            stride = 0
        else:  # transformers' stride is the overlap of consecutive windows.
            stride = window - min(window, doc_stride)
        hf = hf_tokenizer(example["question"], example["context"], truncation="only_second",
                          max_length=max_sequence_length, stride=stride,
                          return_overflowing_tokens=True, return_offsets_mapping=True)
        ours = rows[index]
        assert len(ours) == len(hf["input_ids"])
        multi += len(ours) > 1
        spans = run_squad_doc_spans(len(context_ids), window, doc_stride)
        assert len(spans) == len(ours)
        answer = None
        if example["answers"]:
            start = example["answers"][0]["answer_start"]
            answer = (start, start + len(example["answers"][0]["text"]))
        for w, row in enumerate(ours):
            n = len(hf["input_ids"][w])
            assert windows["token_ids"][row, :n].tolist() == hf["input_ids"][w]
            assert not windows["padding_mask"][row, n:].any()
            assert windows["segment_ids"][row, :n].tolist() == hf["token_type_ids"][w]
            sequence_ids = hf.sequence_ids(w)
            context = np.array([s == 1 for s in sequence_ids] + [False] * (max_sequence_length - n))
            assert (windows["context_mask"][row] == context).all()
            offsets = np.array(hf["offset_mapping"][w])[context[:n]]
            assert (windows["offsets"][row][context] == offsets).all()
            # Label as transformers' run_qa.py does it, from the offsets of this window.
            expected = (0, 0)
            if answer is not None and offsets[0, 0] <= answer[0] and offsets[-1, 1] >= answer[1]:
                first = sequence_ids.index(1)
                tokens = np.flatnonzero((offsets[:, 1] > answer[0]) & (offsets[:, 0] < answer[1]))
                expected = (first + tokens[0], first + tokens[-1])
            got = (windows["start_positions"][row], windows["end_positions"][row])
            assert got == expected
            if got != (0, 0):  # the token span maps back to exactly the answer text
                chars = windows["offsets"][row]
                text = example["context"][chars[got[0], 0]:chars[got[1], 1]]
                assert text == example["answers"][0]["text"]
            prefix = sequence_ids.index(1)
            start, length = spans[w]
            max_context = [run_squad_is_max_context(spans, w, start + i) for i in range(length)]
            assert windows["max_context_mask"][row, prefix:prefix + length].tolist() == max_context
            assert windows["max_context_mask"][row].sum() == sum(max_context)
        # Each context token is "max context" in exactly one window.
        assert windows["max_context_mask"][ours].sum() == len(context_ids)
        assert (windows["example_id"][ours] == example["id"]).all()
    assert multi >= (10 if max_sequence_length < 384 else 0)
    answerable = np.array([bool(examples[i]["answers"]) for i in windows["example_index"]])
    labelled = windows["start_positions"] > 0
    assert labelled.sum() >= 50 and (~labelled & answerable).sum() >= (
        20 if max_sequence_length < 384 else 0)  # answer outside the window: [CLS]


def test_squad_long_context_and_query_truncation(tokenizer, hf_tokenizer):
    rng = random.Random(3)
    context = " ".join(random_sentence(rng) for _ in range(120))  # ~1000 tokens
    words = context.split(" ")
    start = len(" ".join(words[:700])) + 1
    example = {"id": "long", "question": " ".join(["who"] * 100) + "?", "context": context,
               "answers": [{"text": words[700], "answer_start": start}], "is_impossible": False}
    windows = span_qa_windows([example], tokenizer)  # 384 / 128 / 64
    hf = hf_tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)
    spans = run_squad_doc_spans(len(hf["input_ids"]), 384 - 64 - 3, 128)
    assert len(windows["token_ids"]) == len(spans) > 3
    # The question is cut to 64 tokens: [CLS] + 64 + [SEP], then context.
    segment_ids = windows["segment_ids"]
    assert (segment_ids[:, :66] == 0).all() and (segment_ids[:, 66] == 1).all()
    answer_token = [s for s, _ in hf["offset_mapping"]].index(start)
    labelled = np.flatnonzero(windows["start_positions"])
    assert labelled.tolist() == [w for w, (s, n) in enumerate(spans) if s <= answer_token < s + n]
    assert len(labelled) >= 2
    for row in labelled:
        chars = windows["offsets"][row]
        s, e = windows["start_positions"][row], windows["end_positions"][row]
        assert context[chars[s, 0]:chars[e, 1]] == words[700]
    ds = span_qa_dataset(windows, batch_size=2)
    x, y = next(iter(ds))
    assert set(x) == {"token_ids", "segment_ids", "padding_mask"}
    assert set(y) == {"start_positions", "end_positions"}
    assert x["token_ids"].shape == (2, 384)


def test_squad_answer_overlapping_no_token_raises(tokenizer):
    # The answer is the blank between two words: no token overlaps it. run_squad.py skips such
    # an example ("Could not find answer"); it must not silently become unanswerable.
    example = {"id": "blank", "question": "Who?", "context": "Ann  did.",
               "answers": [{"text": " ", "answer_start": 4}]}
    with pytest.raises(ValueError, match="'blank'.*overlaps no context token"):
        span_qa_windows([example], tokenizer, 32)


def test_squad_context_without_tokens_raises(tokenizer):
    example = {"id": "empty", "question": "Who?", "context": "   ", "answers": []}
    with pytest.raises(ValueError, match="'empty'.*context tokenizes to no tokens"):
        span_qa_windows([example], tokenizer, 32)


# === CoNLL NER ===


def ner_examples(num, seed):
    rng = random.Random(seed)
    odd = ["U.S.", "Mary's", "xyzzy", "EU", "1996-08-22", "(", "Qwerty", "--", "don't", "PARIS",
           *ACCENTED, "\u00ad"]  # a soft hyphen alone: no token, transformers skips the word
    return [{"words": [rng.choice(WORDS + odd) for _ in range(rng.randint(1, 30))],
             "tags": [rng.choice(CONLL_TAGS) for _ in range(30)]} for _ in range(num)]


@pytest.mark.parametrize("max_sequence_length", [64, 12])
def test_ner_alignment_matches_transformers_word_ids(tokenizer, hf_tokenizer,
                                                     max_sequence_length):
    examples = ner_examples(60, seed=max_sequence_length)
    for example in examples:
        example["tags"] = example["tags"][:len(example["words"])]
    words = tf.ragged.constant([e["words"] for e in examples])
    aligned = {k: v.numpy() for k, v in align_tokens(words, tokenizer, max_sequence_length).items()}
    ds = tagging_dataset(examples, tokenizer, CONLL_TAGS, batch_size=16,
                         max_sequence_length=max_sequence_length, with_word_ids=True)
    batches = list(ds)
    word_ids = np.concatenate([x["word_ids"].numpy() for x, _, _ in batches])
    labels = np.concatenate([y.numpy() for _, y, _ in batches])
    weights = np.concatenate([w.numpy() for _, _, w in batches])
    token_ids = np.concatenate([x["token_ids"].numpy() for x, _, _ in batches])
    truncated = without_tokens = cut = 0
    for k, example in enumerate(examples):
        hf = hf_tokenizer(example["words"], is_split_into_words=True, truncation=True,
                          max_length=max_sequence_length)
        n = len(hf["input_ids"])
        assert aligned["token_ids"][k, :n].tolist() == hf["input_ids"]
        assert (token_ids[k] == aligned["token_ids"][k]).all()
        assert aligned["padding_mask"][k].tolist() == [1] * n + [0] * (max_sequence_length - n)
        hf_words = [-1 if w is None else w for w in hf.word_ids()]
        assert aligned["word_ids"][k, :n].tolist() == hf_words
        assert word_ids[k, :n].tolist() == hf_words and (word_ids[k, n:] == -1).all()
        # Words absent from hf_words: tokenize to nothing, or past the last kept word.
        missing = set(range(len(example["words"]))) - set(hf_words)
        empty = {w for w in missing if not hf_tokenizer.tokenize(example["words"][w])}
        without_tokens += len(empty)
        cut += len(missing - empty)
        first = [w >= 0 and (i == 0 or hf_words[i - 1] != w) for i, w in enumerate(hf_words)]
        assert weights[k, :n].tolist() == first and not weights[k, n:].any()
        tag_ids = [CONLL_TAGS.index(t) for t in example["tags"]]
        assert labels[k, :n].tolist() == [tag_ids[w] if f else 0 for w, f in zip(hf_words, first)]
        truncated += len(set(hf_words) - {-1}) < len(example["words"])
    assert truncated > (10 if max_sequence_length == 12 else -1)
    assert ds.report.words == sum(len(e["words"]) for e in examples)
    assert (ds.report.words_without_tokens, ds.report.words_truncated) == (without_tokens, cut)
    assert without_tokens > 0 and cut > (10 if max_sequence_length == 12 else -1)


def test_tagging_dataset_reports_words_without_labels(tokenizer, caplog):
    examples = [{"words": ["EU", "\u00ad", "rejects"], "tags": ["B-ORG", "O", "O"]},
                {"words": ["a"] * 10, "tags": ["O"] * 10}]
    with caplog.at_level(logging.WARNING, logger="zoo.data"):
        ds = tagging_dataset(examples, tokenizer, CONLL_TAGS, 4, max_sequence_length=8,
                             with_word_ids=True)
    assert (ds.report.words, ds.report.words_without_tokens, ds.report.words_truncated) == (
        13, 1, 4)
    assert "5 of 13 words in 2 sentences have no labelled token" in caplog.text
    (x, _, weights), = ds
    first_words = x["word_ids"].numpy()[0][weights.numpy()[0] > 0]
    assert first_words.tolist() == [0, 2]  # the soft hyphen has no token
    assert x["word_ids"].numpy()[1][weights.numpy()[1] > 0].tolist() == list(range(6))
    with caplog.at_level(logging.WARNING, logger="zoo.data"):
        caplog.clear()
        ds = tagging_dataset([{"words": ["EU"], "tags": ["O"]}], tokenizer, CONLL_TAGS, 4)
    assert ds.report.words_unlabelled == 0 and not caplog.text


def test_the_former_pipeline_names_still_import():
    """Deprecated (CHANGELOG): zoo.data's squad_windows, squad_dataset and ner_dataset."""
    import zoo.data
    from zoo.data import span_qa, tagging

    assert zoo.data.squad_windows is span_qa.squad_windows is span_qa_windows
    assert zoo.data.squad_dataset is span_qa.squad_dataset is span_qa_dataset
    assert zoo.data.ner_dataset is tagging.ner_dataset is tagging_dataset
    assert span_qa.squad_windows_graph is span_qa.span_qa_windows_graph
    assert (zoo.data.span_qa_windows, zoo.data.span_qa_dataset, zoo.data.tagging_dataset) == (
        span_qa_windows, span_qa_dataset, tagging_dataset)


def test_tagging_dataset_empty_sentence(tokenizer):
    (x, y, weights), = tagging_dataset([{"words": [], "tags": []}], tokenizer, CONLL_TAGS, 4, 8)
    assert x["token_ids"].numpy().tolist() == [[2, 3, 0, 0, 0, 0, 0, 0]]
    assert not y.numpy().any() and not weights.numpy().any()


def test_tagging_dataset_checks_tags(tokenizer):
    with pytest.raises(ValueError, match="example 0: tags \\['B-XYZ'\\] not in label_names"):
        tagging_dataset([{"words": ["a"], "tags": ["B-XYZ"]}], tokenizer, CONLL_TAGS, 4)
    with pytest.raises(ValueError, match="example 0: 2 words but 1 tags"):
        tagging_dataset([{"words": ["a", "b"], "tags": ["O"]}], tokenizer, CONLL_TAGS, 4)


# === Images ===


def write_images(directory):
    rng = np.random.default_rng(0)
    examples = []
    for k, (h, w, c, fmt) in enumerate([(32, 32, 3, "png"), (50, 70, 3, "png"), (40, 30, 1, "png"),
                                        (64, 48, 3, "jpeg"), (33, 90, 4, "png")]):
        ramp = np.linspace(0, 255, w)[None, :, None] * np.linspace(0.2, 1, h)[:, None, None]
        pixels = np.clip(ramp + rng.normal(0, 8, (h, w, c)), 0, 255).astype(np.uint8)
        encode = tf.io.encode_png if fmt == "png" else tf.io.encode_jpeg
        path = str(directory / f"{k}.{fmt}")
        tf.io.write_file(path, encode(pixels))
        examples.append({"path": path, "label": k})
    return examples


def test_image_dataset_matches_vit_image_processor(tmp_path):
    import transformers
    from PIL import Image

    examples = write_images(tmp_path)
    processor = transformers.ViTImageProcessor(size={"height": 32, "width": 32})
    batches = list(image_dataset(examples, image_size=32, batch_size=2))
    images = np.concatenate([x["images"].numpy() for x, _ in batches])
    labels = np.concatenate([y.numpy() for _, y in batches])
    assert images.shape == (5, 32, 32, 3) and labels.tolist() == [0, 1, 2, 3, 4]
    assert images.min() >= -1 and images.max() <= 1
    for k, example in enumerate(examples):
        reference = processor(Image.open(example["path"]).convert("RGB"),
                              return_tensors="np")["pixel_values"][0].transpose(1, 2, 0)
        # Same size: exact. Resized: tf's antialiased bilinear vs PIL's (and for the JPEG, two
        # decoders) agree within a few grey levels (0.03 on the [-1, 1] scale is ~4/255).
        atol = 1e-6 if k == 0 else 0.04
        np.testing.assert_allclose(images[k], reference, atol=atol)
        assert np.abs(images[k] - reference).mean() < 0.01


def test_image_dataset_mean_std(tmp_path):
    examples = write_images(tmp_path)[:1]
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    (x, _), = image_dataset(examples, 32, 1, mean=mean, std=std)
    pixels = tf.io.decode_png(tf.io.read_file(examples[0]["path"])).numpy() / 255.0
    np.testing.assert_allclose(x["images"][0], (pixels - mean) / std, atol=1e-5)


# === Causal LM ===


def test_causal_lm_blocks(tokenizer):
    rng = random.Random(0)
    texts = [" ".join(random_sentence(rng) for _ in range(rng.randint(1, 5))) for _ in range(300)]
    stream = [t for ids in tokenizer(tf.constant(texts)).to_list() for t in [*ids, 3]]
    ds = causal_lm_dataset(texts, tokenizer, sequence_length=16, batch_size=8,
                           separator_token_id=3)
    xs, ys = [], []
    for x, y in ds:
        assert x["token_ids"].shape == y.shape == (8, 16)
        assert (x["padding_mask"].numpy() == 1).all()
        xs.append(x["token_ids"].numpy())
        ys.append(y.numpy())
    xs, ys = np.concatenate(xs), np.concatenate(ys)
    blocks = len(stream) // 17
    assert len(xs) == blocks // 8 * 8
    expected = np.array(stream[:blocks * 17]).reshape(blocks, 17)[:len(xs)]
    assert (xs == expected[:, :-1]).all() and (ys == expected[:, 1:]).all()


# === The end of every pipeline ===


def test_every_pipeline_prefetches_without_the_autotuning_model(tmp_path):
    """`zoo.data.prefetched` ends every input pipeline: tf.data's autotuning model off, whose
    thread can hold an iterator's destruction for up to 60 s (TF 2.21; see its docstring).
    No other `.prefetch(` in zoo/, zoo_tasks/ or zoo_cli/, and the pipelines built here carry the
    option, including through a later `map`."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[1]
    calls = []
    packages = ("zoo", "zoo_tasks", "zoo_cli")
    for path in sorted(p for d in packages for p in (root / d).rglob("*.py")):
        if path.relative_to(root).as_posix() == "zoo/data/pipeline.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "prefetch"):
                calls.append(f"{path.relative_to(root)}:{node.lineno}")
    assert calls == [], f"use zoo.data.prefetched instead of .prefetch at {calls}"

    vocab = str(tmp_path / "vocab.txt")
    write_vocab(str(tmp_path))
    tokenizer = wordpiece(vocab)
    image = tmp_path / "a.png"
    image.write_bytes(tf.io.encode_png(tf.zeros([4, 4, 3], tf.uint8)).numpy())
    windows = {key: np.zeros([2, 8], "int32") for key in
               ("token_ids", "segment_ids", "padding_mask")}
    windows.update(start_positions=np.zeros([2], "int32"), end_positions=np.zeros([2], "int32"))
    pipelines = {
        "squad": span_qa_dataset(windows, batch_size=2),
        "ner": tagging_dataset([{"words": ["EU"], "tags": ["B-ORG"]}], tokenizer, CONLL_TAGS, 4, 8),
        "images": image_dataset([{"path": str(image), "label": 0}], 4, 1),
        "causal_lm": causal_lm_dataset(["the cat sat"] * 8, tokenizer, 4, 2),
    }
    for name, ds in pipelines.items():
        assert ds.options().autotune.enabled is False, name
        assert ds.map(lambda *x: x).options().autotune.enabled is False, name
        assert next(iter(ds)) is not None, name


def test_causal_lm_shards_stream_the_blocks_of_the_text(tokenizer, tmp_path):
    """`write_causal_lm_data` + `causal_lm_shards_dataset` give the blocks `causal_lm_dataset`
    cuts from the same documents (sentences joined by spaces, as the text corpus is read),
    every 20th held out, with and without a separator; the metadata counts them."""
    from zoo.data import causal_lm_shards_dataset, write_causal_lm_data

    corpus = write_corpus(str(tmp_path / "corpus.txt"), 45, seed=3)
    documents = [" ".join(block.split("\n")) for block in
                 open(corpus, encoding="utf-8").read().strip().split("\n\n")]
    held_out = {"train": [d for i, d in enumerate(documents) if i % 20 != 19],
                "dev": [d for i, d in enumerate(documents) if i % 20 == 19]}
    with open(corpus, "a", encoding="utf-8") as f:  # a 46th document with no token: skipped
        f.write("\n\u200b\n")
    # In one chunk, and in chunks of ~300 bytes written apart and concatenated.
    meta = write_causal_lm_data([corpus], tokenizer, str(tmp_path / "out"), shards=3)
    chunked = write_causal_lm_data([corpus], tokenizer, str(tmp_path / "chunked"), shards=3,
                                   chunk_bytes=300)
    assert meta["num_documents"] == chunked["num_documents"] == {"train": 43, "dev": 2}
    assert meta["num_chunks"] == 1 and chunked["num_chunks"] > 10
    for name in meta["shards"]["train"] + meta["shards"]["dev"]:
        assert ((tmp_path / "out" / "causal_lm" / name).read_bytes()
                == (tmp_path / "chunked" / "causal_lm" / name).read_bytes())
    for split, texts in held_out.items():
        assert meta["num_tokens"][split] == sum(
            len(ids) for ids in tokenizer(tf.constant(texts)).to_list())
        for separator in (None, 3):
            ours = causal_lm_shards_dataset(str(tmp_path / "out" / "causal_lm"), split, 8, 4,
                                            separator_token_id=separator, drop_remainder=False)
            reference = causal_lm_dataset(texts, tokenizer, 8, 4, separator_token_id=separator,
                                          drop_remainder=False)
            got = [(x["token_ids"].numpy(), y.numpy()) for x, y in ours]
            expected = [(x["token_ids"].numpy(), y.numpy()) for x, y in reference]
            assert len(got) == len(expected) > 0
            for (a, b), (c, d) in zip(got, expected):
                np.testing.assert_array_equal(a, c)
                np.testing.assert_array_equal(b, d)
    with pytest.raises(FileNotFoundError, match="no test-"):
        causal_lm_shards_dataset(str(tmp_path / "out" / "causal_lm"), "test", 8, 4)
    with pytest.raises(ValueError, match="at least 20 are needed"):
        write_causal_lm_data([write_corpus(str(tmp_path / "small.txt"), 5)], tokenizer,
                             str(tmp_path / "small"))
