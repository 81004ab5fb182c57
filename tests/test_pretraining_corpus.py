"""`zoo data corpus`: your own documents (folders of .txt files, CSV, JSONL) as a pretraining
corpus, one sentence a line and a blank line between documents; the bag-of-words baseline of
`zoo reproduce bert/imdb`."""

import csv
import json

import pytest
from sklearn.metrics import accuracy_score

from zoo import config as config_lib
from zoo.data.pretraining.corpus import split_sentences, write_corpus
from zoo_cli.main import main as cli


@pytest.mark.parametrize("text, sentences", [
    # Abbreviations, times and initials do not end a sentence.
    ("Mr. Smith met Dr. Jones at 9 p.m. on Main St. and left.", [
        "Mr. Smith met Dr. Jones at 9 p.m. on Main St. and left."]),
    # A closing quote stays with its sentence; "!" and "?" end one.
    ('"It rocks!" he said. Really? Yes.', ['"It rocks!" he said.', "Really?", "Yes."]),
    # An ellipsis inside a sentence; white space collapsed.
    ("I waited... and   waited.\tThen it ended.", ["I waited... and waited.",
                                                   "Then it ended."]),
])
def test_sentences_are_split_as_english_is_written(text, sentences):
    assert split_sentences(text) == sentences


def test_html_line_breaks_end_sentences_and_tags_and_entities_go():
    text = "A fine film<br /><br />The <i>best</i> cast &amp; crew.<BR>Go"
    assert split_sentences(text, strip_html=True) == ["A fine film", "The best cast & crew.",
                                                      "Go"]
    # Without --strip-html the markup is text like any other.
    assert split_sentences(text) == ["A fine film<br /><br />The <i>best</i> cast &amp; crew.",
                                     "<BR>Go"]


def _reviews(root):
    (root / "train" / "neg").mkdir(parents=True)
    (root / "train" / "unsup").mkdir()
    (root / "train" / "neg" / "0_2.txt").write_text("Dull. Mr. Lee tried.<br />No.",
                                                    encoding="utf-8")
    (root / "train" / "unsup" / "1_0.txt").write_text("\ufeffSeen it twice.", encoding="utf-8")
    return root / "train"


def test_the_command_reads_folders_csv_and_jsonl_into_one_corpus(tmp_path, capsys):
    folder = _reviews(tmp_path)
    with open(tmp_path / "notes.csv", "w", encoding="utf-8", newline="") as file:
        csv.writer(file).writerows([["id", "body"], ["a", "First line.\nSecond, same note."],
                                    ["b", "   "]])
    (tmp_path / "posts.jsonl").write_text(json.dumps({"body": "One post. Two parts."}) + "\n",
                                          encoding="utf-8")
    out = tmp_path / "corpus" / "corpus.txt"
    assert cli(["data", "corpus", "--from", str(folder), str(tmp_path / "notes.csv"),
                str(tmp_path / "posts.jsonl"), "--text-column", "body", "--strip-html",
                "--workers", "1", "--skip-bad-rows", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == (
        "Dull.\nMr. Lee tried.\nNo.\n\n"  # train/neg/0_2.txt
        "Seen it twice.\n\n"  # train/unsup/1_0.txt: every class folder is read, BOM dropped
        "First line.\nSecond, same note.\n\n"  # a line break in a field ends a sentence
        "One post.\nTwo parts.\n\n")
    printed = capsys.readouterr().out
    assert "skipped 1 bad row in notes.csv: 1 empty text (line 4)" in printed, printed
    assert "wrote 4 documents, 8 sentences" in printed
    # An existing corpus is not replaced without --overwrite; a missing source is named.
    assert cli(["data", "corpus", "--from", str(folder), "--out", str(out)]) == 1
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert cli(["data", "corpus", "--from", str(tmp_path / "absent"), "--out",
                str(tmp_path / "other.txt")]) == 1
    assert f"{tmp_path / 'absent'}: no such file or folder" in capsys.readouterr().err
    # A bad row stops the command at its file and line unless --skip-bad-rows.
    assert cli(["data", "corpus", "--from", str(tmp_path / "notes.csv"), "--text-column",
                "body", "--workers", "1", "--out", str(tmp_path / "other.txt")]) == 1
    assert "notes.csv:4: empty text" in capsys.readouterr().err
    assert not (tmp_path / "other.txt").exists()  # nothing half-written is left


def test_two_workers_write_the_corpus_one_process_writes(tmp_path):
    """Documents left without a sentence (only markup) are counted, wherever they are."""
    rows = [{"text": f"Review {i}. It was {'good' if i % 2 else 'bad'}! Mr. X agreed."}
            for i in range(300)]
    rows[0] = rows[150] = rows[151] = rows[299] = {"text": "<br /><p>"}
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    one = write_corpus([str(path)], str(tmp_path / "one.txt"), strip_html=True, workers=1,
                       progress=False)
    two = write_corpus([str(path)], str(tmp_path / "two.txt"), strip_html=True, workers=2,
                       progress=False)
    assert one == two
    assert one["documents"] == 296 and one["empty"] == 4 and one["sentences"] == 888
    assert (tmp_path / "one.txt").read_bytes() == (tmp_path / "two.txt").read_bytes()


def test_the_bag_of_words_baseline_scores_the_dev_file_as_scikit_learn_does(tmp_path):
    """A learnable rule (the word "great" or "awful" decides): the baseline's metrics.json
    and its predictions file agree with scikit-learn's accuracy on the gold labels."""
    from zoo_benchmarks import baselines

    def write(split, count, offset):
        for i in range(count):
            label = ("pos", "neg")[i % 2]
            folder = tmp_path / split / label
            folder.mkdir(parents=True, exist_ok=True)
            word = "great" if label == "pos" else "awful"
            (folder / f"{i + offset}.txt").write_text(
                f"The film number {i} was {word}, said viewer {i % 7}.", encoding="utf-8")
    write("train", 60, 0)
    write("test", 20, 100)
    (tmp_path / "train" / "unsup").mkdir()
    (tmp_path / "train" / "unsup" / "x.txt").write_text("unlabeled", encoding="utf-8")
    config = config_lib.resolve("bert/text_classification", [
        f"data.train_file={tmp_path / 'train'}", f"data.dev_file={tmp_path / 'test'}",
        "data.labels=[neg,pos]"])
    record = baselines.run("bag_of_words", config, str(tmp_path / "out"), progress=print)
    saved = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert saved == [record] and record["step"] == 0 and record["C"] in baselines.C_GRID
    predicted = [line.split("\t")[1] for line in
                 (tmp_path / "out" / "predictions" / "dev.tsv").read_text().splitlines()[1:]]
    gold = [label for label in ("neg", "pos") for _ in range(10)]  # folder order: neg, pos
    assert record["accuracy"] == accuracy_score(gold, predicted) == 1.0
    with pytest.raises(ValueError, match="a text_classification experiment"):
        baselines.run("bag_of_words", config_lib.resolve("bert/glue_mrpc"), str(tmp_path))
