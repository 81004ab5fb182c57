"""A user's own tagging data (zoo.data.readers.tagging): the same sentences from CoNLL columns and
JSON lines, user tag sets, tagging schemes and their IOB2 entities, and bad input named by file
and line or counted."""

import json
import os

import pytest
from seqeval.metrics.sequence_labeling import get_entities

from zoo import files
from zoo.data.readers.errors import DataError, Report
from zoo.data.readers.tagging import (
    TAG_FORMATS,
    read_tagged,
    tag_scheme,
    tags_format,
    to_iob2_entities,
)

SENTENCES = [  # words, POS, tags: a user tag set (genes and drugs), non-ASCII words
    (["BRCA1", "mutations", "raise", "risk", "."],
     ["NNP", "NNS", "VBP", "NN", "."],
     ["B-GENE", "O", "O", "O", "O"]),
    (["Tumor", "necrosis", "factor", "binds", "aspirin"],
     ["NN", "NN", "NN", "VBZ", "NN"],
     ["B-GENE", "I-GENE", "I-GENE", "O", "B-DRUG"]),
    (["Ünïcödé", "p53"], ["NNP", "NN"], ["O", "B-GENE"]),
]


def write(path, content):
    path = os.fspath(path)
    with open(path, "wb") as file:
        file.write(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def conll(sentences, columns=2, separator="\t", docstart=False, tags=True, end="\n"):
    """A CoNLL file's text: `word tag` or `word POS chunk tag` lines, blank lines between."""
    lines = [separator.join(["-DOCSTART-", "-X-", "-X-", "O"][:columns]), ""] if docstart else []
    for words, pos, labels in sentences:
        for word, part, tag in zip(words, pos, labels):
            fields = {1: [word], 2: [word, tag], 4: [word, part, "I-NP", tag]}[columns]
            lines.append(separator.join(fields if tags else fields[:1]))
        lines.append("")
    return end.join(lines)


def read(path, skip_bad_rows=False, **options):
    report = Report(path, skip_bad_rows)
    return list(read_tagged(path, report, **options)), report


def error_of(path, **options):
    with pytest.raises(DataError) as error:
        read(path, **options)
    return error.value


def expected(ids, tags=True):
    return [{"id": id_, "words": words, "tags": labels if tags else None}
            for id_, (words, _, labels) in zip(ids, SENTENCES)]


# === The same sentences in every layout ===


@pytest.mark.parametrize("options, ids, layout", [
    (dict(columns=2, separator="\t", docstart=True), ["3", "9", "15"],
     "2 columns (word tag), tab-separated, with -DOCSTART- lines, IOB2 tags"),
    (dict(columns=4, separator=" ", docstart=True), ["3", "9", "15"],
     "4 columns (the word first, the tag last), space-separated, with -DOCSTART- lines, "
     "IOB2 tags"),
    (dict(columns=4, separator="\t"), ["1", "7", "13"],
     "4 columns (the word first, the tag last), tab-separated, no -DOCSTART- lines, IOB2 tags"),
    (dict(columns=2, separator=" ", end="\r\n"), ["1", "7", "13"],
     "2 columns (word tag), space-separated, no -DOCSTART- lines, IOB2 tags"),
])
def test_conll_layouts_give_the_same_sentences(tmp_path, options, ids, layout):
    path = write(tmp_path / "train.conll", conll(SENTENCES, **options))
    sentences, report = read(path)
    assert sentences == expected(ids)
    assert report.layout == layout


def test_jsonl_gives_the_same_sentences(tmp_path):
    lines = [json.dumps({"tokens": words, "tags": tags, "source": "x"})
             for words, _, tags in SENTENCES]
    path = write(tmp_path / "train.jsonl", lines[0] + "\n\n" + "\n".join(lines[1:]) + "\n")
    sentences, report = read(path)
    assert sentences == expected(["1", "3", "4"])  # the blank line 2 is skipped
    assert report.layout == "JSON lines with fields 'tokens' and 'tags', IOB2 tags"
    renamed = write(tmp_path / "renamed.ndjson", "".join(
        json.dumps({"words": words, "ner": tags}) + "\n" for words, _, tags in SENTENCES))
    assert read(renamed, tokens_column="words", tags_column="ner")[0] == expected(["1", "2", "3"])


def test_conll_blank_runs_docstarts_inside_and_no_final_blank_line(tmp_path):
    text = ("-DOCSTART- O\n\n\nEU B-ORG\nrejects O\n  \n-DOCSTART- O\nGerman B-MISC\n"
            "\t\ncall O")
    sentences, _ = read(write(tmp_path / "a.txt", text))
    assert sentences == [{"id": "4", "words": ["EU", "rejects"], "tags": ["B-ORG", "O"]},
                         {"id": "8", "words": ["German"], "tags": ["B-MISC"]},
                         {"id": "10", "words": ["call"], "tags": ["O"]}]


@pytest.mark.parametrize("tags, layout_end", [
    (["S-LOC", "O", "B-PER", "E-PER"], "IOBES tags"),
    (["I-PER", "O", "I-LOC", "B-LOC"], "IOB1 tags"),  # read as written, not converted
    (["NNP", "VBZ", "JJ", "."], "tags of no entity scheme"),
])
def test_conll_user_tag_sets_are_read_as_written(tmp_path, tags, layout_end):
    words = ["Paris", "hosts", "Ann", "Lee"]
    path = write(tmp_path / "a.bio", "".join(f"{w} {t}\n" for w, t in zip(words, tags)))
    sentences, report = read(path)
    assert sentences == [{"id": "1", "words": words, "tags": tags}]
    assert report.layout == "2 columns (word tag), space-separated, no -DOCSTART- lines, " \
        + layout_end


def test_a_conll_file_on_a_remote_filesystem():
    path = f"ram://tags_{os.getpid()}/train.iob"
    files.write_text(path, conll(SENTENCES))
    try:
        assert read(path)[0] == expected(["1", "7", "13"])
    finally:
        files.remove_quietly(f"ram://tags_{os.getpid()}")


# === Test files: words without tags ===


def test_label_required_false_reads_words_only(tmp_path):
    path = write(tmp_path / "test.conll", conll(SENTENCES, columns=1))
    sentences, report = read(path, label_required=False)
    assert sentences == expected(["1", "7", "13"], tags=False)
    assert report.layout == "1 column (words only), space-separated, no -DOCSTART- lines"
    # With tags the file is read with them; a later 2-column line is a wrong count.
    assert read(write(tmp_path / "tagged.conll", conll(SENTENCES)),
                label_required=False)[0] == expected(["1", "7", "13"])
    error = error_of(write(tmp_path / "mixed.conll", "a\nb\n\nc O\n"), label_required=False)
    assert (error.where, error.reason, error.found) == (4, "wrong column count", 2)
    assert error.expected == "1 column (words only), as the file's first token line"

    lines = [{"tokens": ["a", "b"]}, {"tokens": ["c"], "tags": None},
             {"tokens": ["d"], "tags": ["O"]}]
    path = write(tmp_path / "test.jsonl", "".join(json.dumps(x) + "\n" for x in lines))
    assert read(path, label_required=False)[0] == [
        {"id": "1", "words": ["a", "b"], "tags": None}, {"id": "2", "words": ["c"], "tags": None},
        {"id": "3", "words": ["d"], "tags": ["O"]}]
    error = error_of(path)  # tags are required by default
    assert (error.where, error.reason, error.expected) == (1, "missing field", "a field 'tags'")


# === Bad rows ===


def test_conll_errors_name_the_line(tmp_path):
    error = error_of(write(tmp_path / "a.conll", "EU B-ORG\nrejects\tO\n\nGerman NN B-MISC\n"))
    assert (error.where, error.reason, error.found) == (4, "wrong column count", 3)
    assert error.expected == "2 columns (word tag), as the file's first token line"
    error = error_of(write(tmp_path / "b.conll", "EU\nrejects O\n"))
    assert (error.where, error.reason, error.found) == (1, "wrong column count", 1)
    assert error.expected == "2 or more columns: the word first, the tag last"
    error = error_of(write(tmp_path / "c.conll", b"EU B-ORG\n\nGer\xffman B-MISC\n"))
    assert (error.where, error.reason) == (3, "undecodable bytes")
    path = write(tmp_path / "d.conll", conll(SENTENCES))
    error = error_of(path, labels=("O", "B-GENE", "I-GENE"))
    assert (error.where, error.reason, error.found) == (11, "unknown tag", "'B-DRUG'")
    assert error.expected == "one of O, B-GENE, I-GENE"
    os.mkdir(tmp_path / "folder.conll")
    assert error_of(tmp_path / "folder.conll").reason == "not a file"


def test_conll_skip_bad_rows_drops_each_bad_sentence_once(tmp_path):
    text = ("EU B-ORG\nrejects O B-X\ncall O x\n\n"  # lines 2, 3: one sentence, counted once
            "Ger\xffman B-MISC\n\n"
            "Paris B-LOC\nhosts O\n\n"  # the one good sentence: line 7
            "Ann B-PER\nLee I-PER\nsaid B-TIME\n")
    path = write(tmp_path / "a.conll", text.encode("utf-8").replace("\xff".encode(), b"\xff"))
    labels = ["O", "B-ORG", "B-LOC", "B-PER", "I-PER"]  # not B-TIME
    sentences, report = read(path, skip_bad_rows=True, labels=labels)
    assert sentences == [{"id": "7", "words": ["Paris", "hosts"], "tags": ["B-LOC", "O"]}]
    assert report.bad_rows == {"wrong column count": [(path, 2)],
                               "undecodable bytes": [(path, 5)], "unknown tag": [(path, 12)]}
    assert report.skipped == 3


BAD_JSON_LINES = [  # (line, reason): each on line 2, after a good one
    ('{"tokens": ["a"], "tags": ["O"]', "invalid JSON"),
    ('["a", "O"]', "wrong type"),
    ('{"tags": ["O"]}', "missing field"),
    ('{"tokens": ["a"]}', "missing field"),
    ('{"tokens": "a b", "tags": ["O", "O"]}', "wrong type"),
    ('{"tokens": ["a"], "tags": "O"}', "wrong type"),
    ('{"tokens": ["a", 1], "tags": ["O", "O"]}', "wrong type"),
    ('{"tokens": ["a"], "tags": [0]}', "wrong type"),
    ('{"tokens": [], "tags": []}', "empty sentence"),
    ('{"tokens": ["a", "b", "c"], "tags": ["O", "O"]}', "length mismatch"),
    ('{"tokens": ["a", ""], "tags": ["O", "O"]}', "empty token"),
    ('{"tokens": ["New York"], "tags": ["B-LOC"]}', "bad token"),
    ('{"tokens": ["a\\tb"], "tags": ["O"]}', "bad token"),
    ('{"tokens": ["a"], "tags": ["B LOC"]}', "bad tag"),
    ('{"tokens": ["a"], "tags": [""]}', "bad tag"),
    ('{"tokens": ["a"], "tags": ["B-DRUG"]}', "unknown tag"),
]
GOOD_LINE = '{"tokens": ["EU", "rejects"], "tags": ["B-GENE", "O"]}'


@pytest.mark.parametrize("line, reason", BAD_JSON_LINES)
def test_jsonl_errors_name_the_line(tmp_path, line, reason):
    path = write(tmp_path / "a.jsonl", f"{GOOD_LINE}\n{line}\n")
    error = error_of(path, labels=("O", "B-GENE", "I-GENE"))
    assert (error.where, error.reason) == (2, reason)


def test_jsonl_error_messages(tmp_path):
    path = write(tmp_path / "a.jsonl", '{"tokens": ["a", "b", "c"], "tags": ["O", "O"]}\n')
    assert str(error_of(path)) == (f"{path}:1: length mismatch: expected as many tags as "
                                   "tokens (3), found 2 tags")
    path = write(tmp_path / "b.jsonl", '{"tokens": ["a"], "tags": ["B-DRUG"]}\n')
    assert str(error_of(path, labels=("O", "B-GENE"))) == (
        f"{path}:1: unknown tag: expected one of O, B-GENE, found 'B-DRUG'")
    path = write(tmp_path / "c.jsonl", '{"tokens": ["New York"], "tags": ["B-LOC"]}\n')
    assert error_of(path).found == "'New York'"


def test_jsonl_skip_bad_rows_counts_every_bad_line(tmp_path):
    text = "\n".join([GOOD_LINE] + [line for line, _ in BAD_JSON_LINES] + [GOOD_LINE]) + "\n"
    path = write(tmp_path / "a.jsonl", text)
    sentences, report = read(path, skip_bad_rows=True, labels=("O", "B-GENE", "I-GENE"))
    good = {"words": ["EU", "rejects"], "tags": ["B-GENE", "O"]}
    last = len(BAD_JSON_LINES) + 2
    assert sentences == [{"id": "1", **good}, {"id": str(last), **good}]
    counted = {}
    for number, (_, reason) in enumerate(BAD_JSON_LINES, 2):
        counted.setdefault(reason, []).append((path, number))
    assert report.bad_rows == counted
    assert report.skipped == 16


# === Formats ===


def test_tags_format(tmp_path):
    cases = {"a.conll": "conll", "b.TXT": "conll", "c.iob": "conll", "d.BIO": "conll",
             "e.tsv": "conll", "f.jsonl": "jsonl", "g.NDJSON": "jsonl", "h.json": "jsonl"}
    assert {name: tags_format(name) for name in cases} == cases
    assert TAG_FORMATS == ("conll", "jsonl")
    assert tags_format("export.csv", "conll") == "conll"
    with pytest.raises(ValueError, match="unknown data format 'csv': expected one of conll, "
                                         "jsonl"):
        tags_format("a.conll", "csv")
    for name, found in (("a.conllu", "'.conllu'"), ("train", "''")):
        with pytest.raises(DataError) as error:
            tags_format(name)
        assert (error.value.reason, error.value.found) == ("unknown format", found)
        assert error.value.expected == ("a .conll, .txt, .iob, .bio or .tsv CoNLL file or a "
                                        ".jsonl file (or data.format)")
    # format= reads a file of any name
    path = write(tmp_path / "export.data", conll(SENTENCES))
    assert read(path, format="conll")[0] == expected(["1", "7", "13"])


# === Tagging schemes ===


@pytest.mark.parametrize("sequences, scheme", [
    ([["I-PER", "I-PER", "O", "I-LOC", "B-LOC"]], "IOB1"),
    ([["B-PER", "O"], ["O", "I-ORG"]], "IOB1"),  # only a later sentence shows it
    ([["B-PER", "I-LOC"]], "IOB1"),  # I- after another type starts an entity
    ([["B-GENE", "I-GENE", "O", "B-DRUG"]], "IOB2"),
    ([["B-LOC", "I-LOC", "B-LOC"], ["O"]], "IOB2"),
    ([["S-LOC", "O", "B-PER", "E-PER"]], "IOBES"),
    ([["B-PER", "I-PER", "O"], ["B-ORG", "I-ORG", "E-ORG"]], "IOBES"),
    ([["NNP", "VBZ", "."]], "none"),
    ([["B-PER", "O"], ["I-PER", "NN"]], "none"),
    ([["B-"]], "none"),
    ([["O", "O"], ["O"]], "IOB2"),
    ([], "IOB2"),
    ([None, ["I-PER"]], "IOB1"),  # sentences without tags are passed over
])
def test_tag_scheme(sequences, scheme):
    assert tag_scheme(sequences) == scheme
    assert tag_scheme(iter(sequences)) == scheme


def test_to_iob2_entities_by_hand():
    assert to_iob2_entities(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"], "IOB1") == [
        "B-PER", "I-PER", "O", "B-LOC", "B-LOC"]
    assert to_iob2_entities(["B-GENE", "I-GENE", "O"], "IOB2") == ["B-GENE", "I-GENE", "O"]
    assert to_iob2_entities(["S-LOC", "O", "B-PER", "I-PER", "E-PER", "S-ORG", "S-ORG"],
                            "IOBES") == ["B-LOC", "O", "B-PER", "I-PER", "I-PER", "B-ORG",
                                         "B-ORG"]
    with pytest.raises(ValueError, match="no entities"):
        to_iob2_entities(["NN", "VBZ"], "none")
    with pytest.raises(ValueError, match="unknown tagging scheme 'BILOU'"):
        to_iob2_entities(["O"], "BILOU")


@pytest.mark.parametrize("tags, spans", [
    (["S-LOC", "O", "B-PER", "I-PER", "E-PER", "S-ORG", "S-ORG"],
     [("LOC", 0, 0), ("PER", 2, 4), ("ORG", 5, 5), ("ORG", 6, 6)]),
    (["B-CELL-LINE", "E-CELL-LINE", "S-GENE", "B-GENE", "E-GENE", "O"],
     [("CELL-LINE", 0, 1), ("GENE", 2, 2), ("GENE", 3, 4)]),
    (["O", "O", "S-DRUG"], [("DRUG", 2, 2)]),
])
def test_iobes_entities_agree_with_seqeval(tags, spans):
    assert get_entities(tags) == spans  # the hand-written spans, as seqeval reads IOBES
    assert get_entities(to_iob2_entities(tags, "IOBES")) == spans
