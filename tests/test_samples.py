"""`zoo data samples`: every dataset reads back cleanly, in the real layout, learnably."""

import collections
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from zoo.data import BENCHMARKS, read_examples
from zoo.data.samples import CORPUS, FIRST, KINDS, LAST, LAYOUT, MANIFEST, write_samples
from zoo_cli.main import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    out = tmp_path_factory.mktemp("samples") / "samples"
    write_samples(out, seed=0)
    return out


def read(samples, task, split):
    examples = read_examples(task, samples / LAYOUT[task][split])
    return list(examples), examples


def tree_digest(root):
    digest = hashlib.sha256()
    for folder, folders, files in sorted(os.walk(root)):
        folders.sort()
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(os.path.relpath(path, root).encode())
            with open(path, "rb") as file:
                digest.update(file.read())
    return digest.hexdigest()


def test_every_task_has_samples():
    # Every benchmark; your own data's tasks (no official files) are made by their own tests.
    own = {"text_classification", "token_classification", "question_answering"}
    assert set(LAYOUT) == set(BENCHMARKS) - own
    assert all(not BENCHMARKS[name].layout for name in own)
    assert own == {name for name, benchmark in BENCHMARKS.items() if benchmark.own_data}


@pytest.mark.parametrize("task, split", [(t, s) for t in LAYOUT for s in LAYOUT[t]])
def test_every_sample_file_reads_back_without_bad_rows(samples, task, split):
    rows, examples = read(samples, task, split)
    report = examples.report
    assert not report.bad_rows
    assert len(rows) >= 40
    if task == "snli":  # a few rows without annotator consensus, as in the real files
        assert 0 < report.skipped < len(rows) // 10
    else:
        assert not report.rule_skips
    labels = [row.get("label") for row in rows]
    if split.startswith("test") and (task.startswith("glue/") or task == "swag"):
        assert set(labels) == {None}  # as in the real GLUE and SWAG test files
    elif BENCHMARKS[task].kind in ("classification", "multiple_choice", "image"):
        counts = collections.Counter(labels)
        assert len(counts) >= 2 and max(counts.values()) < 0.65 * len(rows), counts


def test_files_have_the_real_headers(samples):
    def first_line(task, split):
        with open(samples / LAYOUT[task][split], encoding="utf-8") as file:
            return file.readline().rstrip("\n")

    mnli = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
            "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
    expected = {
        ("glue/cola", "test"): "index\tsentence",
        ("glue/sst2", "train"): "sentence\tlabel",
        ("glue/sst2", "test"): "index\tsentence",
        ("glue/mrpc", "train"): "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String",
        ("glue/mrpc", "test"): "index\t#1 ID\t#2 ID\t#1 String\t#2 String",
        ("glue/qqp", "dev"): "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate",
        ("glue/qqp", "test"): "id\tquestion1\tquestion2",
        ("glue/stsb", "dev"): "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
                              "sentence1\tsentence2\tscore",
        ("glue/mnli", "train"): mnli + "\tlabel1\tgold_label",
        ("glue/mnli", "dev_mismatched"): mnli + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\t"
                                                "gold_label",
        ("glue/mnli", "test_matched"): mnli,
        ("glue/qnli", "train"): "index\tquestion\tsentence\tlabel",
        ("glue/rte", "train"): "index\tsentence1\tsentence2\tlabel",
        ("glue/wnli", "test"): "index\tsentence1\tsentence2",
        ("swag", "train"): ",video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,"
                           "ending1,ending2,ending3,label",
        ("story_cloze", "val"): "InputStoryid,InputSentence1,InputSentence2,InputSentence3,"
                                "InputSentence4,RandomFifthSentenceQuiz1,"
                                "RandomFifthSentenceQuiz2,AnswerRightEnding",
        ("conll2003", "train"): "-DOCSTART- -X- -X- O",
    }
    assert {key: first_line(*key) for key in expected} == expected
    assert len(first_line("glue/cola", "train").split("\t")) == 4  # no header
    assert first_line("scitail", "dev").split("\t")[2] in ("entails", "neutral")
    snli = json.loads(first_line("snli", "train"))
    assert {"annotator_labels", "captionID", "gold_label", "pairID", "sentence1",
            "sentence1_binary_parse", "sentence1_parse", "sentence2"} <= set(snli)
    with open(samples / LAYOUT["squad_v2"]["dev"]) as file:
        assert json.load(file)["version"] == "v2.0"
    race = sorted(os.listdir(samples / LAYOUT["race"]["train"]))
    assert race == ["high", "middle"]


def test_images_are_pngs_that_decode(samples):
    import tensorflow as tf

    rows, examples = read(samples, "image_folder", "train")
    assert examples.labels == ("circle", "square", "triangle")
    image = tf.io.decode_image(tf.io.read_file(rows[0]["path"]))
    assert image.shape == (32, 32, 3) and image.dtype == tf.uint8


def test_corpus_is_one_sentence_per_line_with_blank_lines_between_documents(samples):
    with open(samples / CORPUS, encoding="utf-8") as file:
        text = file.read()
    documents = text.split("\n\n")
    assert len(documents) >= 100
    assert not text.startswith("\n") and text.endswith(".\n") and "\n\n\n" not in text
    assert all(line.endswith(".") for doc in documents for line in doc.strip("\n").split("\n"))


def test_same_seed_same_bytes_in_any_process(samples, tmp_path):
    # A fresh process with another hash seed: set or dict-of-hash order must not leak in.
    env = dict(os.environ, PYTHONHASHSEED="12345", TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, "-m", "zoo_cli.main", "data", "samples", "--out",
                    str(tmp_path / "again")], cwd=REPO, env=env, check=True, capture_output=True)
    write_samples(tmp_path / "other", seed=1)
    assert tree_digest(tmp_path / "again") == tree_digest(samples)
    assert tree_digest(tmp_path / "other") != tree_digest(samples)


def test_written_atomically_and_never_over_other_directories(tmp_path):
    out = tmp_path / "samples"
    write_samples(out, seed=3)
    manifest = write_samples(out, seed=4)  # a previous samples tree is replaced
    with open(out / MANIFEST) as file:
        assert json.load(file)["seed"] == 4
    # The manifest is the caller's own copy: changing it leaves the module's LAYOUT alone.
    train = LAYOUT["glue/mnli"]["train"]
    manifest["tasks"]["glue/mnli"]["train"] = "elsewhere.tsv"
    assert LAYOUT["glue/mnli"]["train"] == train
    empty = tmp_path / "empty"
    empty.mkdir()
    write_samples(empty)  # an empty directory is used too
    assert (empty / MANIFEST).is_file()
    shutil.rmtree(empty)
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a samples directory"):
        write_samples(precious)
    with pytest.raises(FileExistsError, match="not a samples directory"):
        write_samples(precious / "keep.txt")
    assert os.listdir(precious) == ["keep.txt"]
    assert sorted(os.listdir(tmp_path)) == ["precious", "samples"]  # no temporary leftovers


def test_cli_writes_samples_and_checks_them(tmp_path, capsys):
    out = tmp_path / "samples"
    assert main(["data", "samples", "--out", str(out), "--seed", "1"]) == 0
    assert "wrote 18 sample datasets" in capsys.readouterr().out
    assert main(["data", "check", "glue/mnli", str(out / LAYOUT["glue/mnli"]["train"])]) == 0
    assert capsys.readouterr().out.startswith("glue/mnli: 400 examples in ")
    bad = out / "bad.tsv"
    bad.write_text("index\tsentence1\tsentence2\tlabel\n0\ta\tb\n1\ta\tb\tentailment\n")
    assert main(["data", "check", "glue/rte", str(bad)]) == 1
    assert "bad.tsv:2: wrong column count" in capsys.readouterr().err
    assert main(["data", "check", "glue/rte", str(bad), "--skip-bad-rows"]) == 0
    assert "skipped 1 bad row in bad.tsv: 1 wrong column count (line 2)" in \
        capsys.readouterr().out


# === The labels follow rules a model can learn ===


def features(example):
    """Words of sentence1 and bigrams; for pairs, sentence2's words marked as seen or new."""
    first = example["sentence1"].lower().replace(".", " .").replace("?", " ?").split()
    found = first + [f"{a}_{b}" for a, b in zip(first, first[1:])]
    if "sentence2" in example:
        second = example["sentence2"].lower().replace(".", " .").replace("?", " ?").split()
        found += [("seen:" if word in first else "new:") + word for word in second]
        found.append(f"new words: {min(sum(word not in first for word in second), 3)}")
    return found


def naive_bayes_accuracy(train, dev):
    counts, totals = collections.defaultdict(collections.Counter), collections.Counter()
    for example in train:
        counts[example["label"]].update(features(example))
        totals[example["label"]] += 1
    vocabulary = len(set().union(*counts.values()))

    def predict(example):
        def score(label):
            size = sum(counts[label].values()) + vocabulary
            return math.log(totals[label]) + sum(
                math.log((counts[label][f] + 1) / size) for f in features(example))
        return max(counts, key=score)

    return np.mean([predict(example) == example["label"] for example in dev])


@pytest.mark.parametrize("task", ["glue/cola", "glue/sst2", "glue/mrpc", "glue/qqp", "glue/mnli",
                                  "glue/qnli", "glue/rte", "glue/wnli", "snli", "scitail"])
def test_classification_rules_are_learnable(samples, task):
    train, _ = read(samples, task, "train")
    dev, _ = read(samples, task, [s for s in LAYOUT[task] if s.startswith("dev")][0])
    chance = max(collections.Counter(e["label"] for e in dev).values()) / len(dev)
    # Bag-of-words naive Bayes is far weaker than the models; it still clears chance by a lot.
    assert naive_bayes_accuracy(train, dev) > chance + 0.15


def test_similarity_scores_follow_word_overlap(samples):
    rows, _ = read(samples, "glue/stsb", "train")
    overlap = [len(set(r["sentence1"].split()) & set(r["sentence2"].split())) for r in rows]
    assert np.corrcoef(overlap, [r["label"] for r in rows])[0, 1] > 0.8


def test_right_ending_is_the_one_that_shares_words_with_the_context(samples):
    rows, _ = read(samples, "swag", "val")

    def guess(row):
        context = set(row["context"].replace(".", " ").split())
        return max(range(len(row["choices"])), key=lambda i: len(
            context & set(row["choices"][i].replace(".", " ").split()) - {"the", "a"}))

    assert np.mean([guess(row) == row["label"] for row in rows]) > 0.8


def test_race_answers_follow_the_kind_of_things_in_the_article(samples):
    rows, _ = read(samples, "race", "dev")
    answer = {"piano": ("music", "a musician"), "dog": ("animals", "a farmer"),
              "chair": ("the house", "a builder"), "book": ("reading", "a writer")}
    kinds = {thing: next(k for k in KINDS if thing in KINDS[k]) for thing in answer}
    for row in rows:
        kind = next(k for k, things in KINDS.items()
                    if set(things) & set(row["context"].replace(".", " ").split()))
        right = answer[next(t for t in answer if kinds[t] == kind)]
        assert row["choices"][row["label"]] in right
        assert sorted(row["choices"]) in (sorted(a for a, _ in answer.values()),
                                          sorted(b for _, b in answer.values()))
    # The answer letters come in shuffled blocks of ABCD: none is favoured.
    counts = collections.Counter(row["label"] for row in rows)
    assert max(counts.values()) - min(counts.values()) <= 1 and len(counts) == 4


def test_story_endings_follow_the_mood(samples):
    rows, _ = read(samples, "story_cloze", "test")
    happy = {"great.", "friends.", "coin", "kind", "prize", "lovely"}
    cheerful = {"happy.", "smiled", "lucky"}
    right = [(bool(happy & set(r["context"].split())),
              bool(cheerful & set(r["choices"][r["label"]].split()))) for r in rows]
    assert all(story == ending for story, ending in right)


def test_entities_come_from_a_gazetteer(samples):
    train, _ = read(samples, "conll2003", "train")
    test, _ = read(samples, "conll2003", "test")
    tag_of = {w: t for s in train for w, t in zip(s["words"], s["tags"])}
    pairs = [(tag_of.get(w), t) for s in test for w, t in zip(s["words"], s["tags"]) if t != "O"]
    assert np.mean([guess == tag for guess, tag in pairs]) > 0.8


def test_squad_answers_follow_their_cue_and_v2_asks_about_absent_people(samples):
    rows, _ = read(samples, "squad_v2", "train")
    names = [f"{first} {last}" for first in FIRST for last in LAST]
    for row in rows:
        person = next(name for name in names if name in row["question"])
        assert (person in row["context"]) != row["is_impossible"]
        if not row["is_impossible"]:
            answer = row["answers"][0]
            before = row["context"][:answer["answer_start"]]
            assert before.endswith(("born in ", "works for ", "plays the ", "called ", " in "))


def test_image_classes_separate_by_colour(samples):
    import tensorflow as tf

    def mean_colours(split):
        rows, _ = read(samples, "image_folder", split)
        images = [tf.io.decode_png(tf.io.read_file(r["path"])).numpy() for r in rows]
        # the brightest pixels are the shape's; their mean colour names the class
        colours = [i.reshape(-1, 3)[i.reshape(-1, 3).sum(1) > 200].mean(0) for i in images]
        return np.array(colours), np.array([r["label"] for r in rows])

    train, train_labels = mean_colours("train")
    test, test_labels = mean_colours("test")
    centroids = np.stack([train[train_labels == k].mean(0) for k in range(3)])
    predicted = np.argmin(((test[:, None] - centroids[None]) ** 2).sum(-1), axis=1)
    assert np.mean(predicted == test_labels) > 0.9


def test_train_rows_sets_the_size_of_the_training_files(tmp_path):
    manifest = write_samples(tmp_path / "samples", train_rows=30)
    assert manifest["train_rows"] == 30
    for task in ("glue/mrpc", "glue/mnli", "snli", "swag"):
        rows, _ = read(tmp_path / "samples", task, "train")
        assert len(rows) == 30 or (task == "snli" and 25 <= len(rows) < 30), task
    rows, _ = read(tmp_path / "samples", "glue/mrpc", "dev")
    assert len(rows) == 100  # evaluation sets keep their size
    assert main(["data", "samples", "--out", str(tmp_path / "bad"), "--train-rows", "0"]) == 1
