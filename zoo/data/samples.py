"""Small synthetic datasets in every official format, learnable by rule: `zoo data samples`.

Each dataset is written byte-for-byte in the layout of the real files (same names, headers,
columns, quoting, byte-order mark), so a config that points at the samples works unchanged
when pointed at the real benchmark. The labels follow simple rules a small model picks up in
a few epochs, so demos and tests train well above chance without a download:

    CoLA         unacceptable sentences have scrambled word order or broken agreement
    SST-2        the label is the polarity of the adjectives (charming / tedious ...)
    MRPC, QQP    paraphrases reorder or reword the same facts; others change one of them
    STS-B        the score falls with the number of changed content words
    MNLI, SNLI,  entailment: the hypothesis only repeats premise words; contradiction: it
    RTE, WNLI,   negates them (not, never, nobody); neutral: it adds new words
    SciTail      (RTE, WNLI, SciTail collapse neutral and contradiction into one label)
    QNLI         the sentence answers the question if it has the same person and a place
    SQuAD        the answer follows a cue ("was born in", "works for"); 2.0 adds questions
                 about people the paragraph never mentions
    SWAG         the right ending uses the object the context picked up
    RACE         the right option is the one the article states
    Story Cloze  the right ending has the mood of the story
    CoNLL-2003   names, places, companies and nationalities come from a gazetteer
    images       each class is one shape in its own colour family (circle, square, triangle)
    corpus       one document per person or film: one sentence per line, blank line between

Example:
    >>> import tempfile
    >>> from zoo.data import read_examples
    >>> from zoo.data.samples import LAYOUT, write_samples
    >>> out = tempfile.mkdtemp() + "/samples"
    >>> _ = write_samples(out, seed=0)
    >>> next(iter(read_examples("glue/sst2", f"{out}/{LAYOUT['glue/sst2']['train']}")))
    {'id': '2', 'sentence1': 'a delightful , charming script ', 'label': '1'}
"""

import copy
import csv
import json
import os
import random
import shutil
import tempfile
import uuid

import numpy as np

# Task -> split -> path under the output directory: the real distributions' names.
LAYOUT = {
    "glue/cola": {s: f"glue/CoLA/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/sst2": {s: f"glue/SST-2/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/mrpc": {s: f"glue/MRPC/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/qqp": {s: f"glue/QQP/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/stsb": {s: f"glue/STS-B/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/mnli": {s: f"glue/MNLI/{s}.tsv" for s in
                  ("train", "dev_matched", "dev_mismatched", "test_matched", "test_mismatched")},
    "glue/qnli": {s: f"glue/QNLI/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/rte": {s: f"glue/RTE/{s}.tsv" for s in ("train", "dev", "test")},
    "glue/wnli": {s: f"glue/WNLI/{s}.tsv" for s in ("train", "dev", "test")},
    "snli": {s: f"snli/snli_1.0/snli_1.0_{s}.jsonl" for s in ("train", "dev", "test")},
    "scitail": {s: f"scitail/SciTailV1.1/tsv_format/scitail_1.0_{s}.tsv"
                for s in ("train", "dev", "test")},
    "squad_v1": {s: f"squad/{s}-v1.1.json" for s in ("train", "dev")},
    "squad_v2": {s: f"squad/{s}-v2.0.json" for s in ("train", "dev")},
    "swag": {s: f"swag/{s}.csv" for s in ("train", "val", "test")},
    "race": {s: f"race/RACE/{s}" for s in ("train", "dev", "test")},
    # The 2016 release has no training file: models train on val and report test.
    "story_cloze": {"val": "story_cloze/cloze_test_val__spring2016 - cloze_test_ALL_val.csv",
                    "test": "story_cloze/cloze_test_test__spring2016 - cloze_test_ALL_test.csv"},
    "conll2003": {s: f"conll2003/{s}.txt" for s in ("train", "valid", "test")},
    "image_folder": {s: f"images/{s}" for s in ("train", "test")},
}
CORPUS = "corpus/corpus.txt"
MANIFEST = "manifest.json"

# Rows per split: enough to learn the rules, small enough to write in a second or two.
TRAIN, EVAL = 400, 100


def write_samples(out, seed=0, train_rows=TRAIN):
    """Write every sample dataset, the pretraining corpus and a manifest under `out`.

    The tree is built in a temporary directory next to `out` and renamed into place, so `out`
    is never half-written. An existing `out` is replaced only if it is an empty directory or
    holds a previous samples tree (it has a manifest.json); anything else is left alone and is
    an error.

    Args:
        out: the output directory.
        seed: the same seed writes the same bytes.
        train_rows: training rows of the sentence(-pair) and multiple-choice datasets (GLUE,
            SNLI, SciTail, SWAG, Story Cloze); more rows make comparison tasks such as MRPC
            learnable from random initialization (`zoo demo` uses 4000).

    Returns:
        The manifest: {"seed", "tasks": {task: {split: path under out}}, "corpus"}.

    Example:
        >>> import tempfile
        >>> manifest = write_samples(tempfile.mkdtemp() + "/samples")
        >>> manifest["tasks"]["glue/mnli"]["dev_matched"]
        'glue/MNLI/dev_matched.tsv'
    """
    out = os.path.abspath(out)
    if os.path.exists(out) and not (os.path.isdir(out) and (
            not os.listdir(out) or os.path.isfile(os.path.join(out, MANIFEST)))):
        raise FileExistsError(f"{out} exists and is not a samples directory (no {MANIFEST}): "
                              "choose another output directory")
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".samples-", dir=parent)
    try:
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary directory
        _write_all(tmp, seed, train_rows)
        manifest = {"seed": seed, "train_rows": train_rows, "tasks": copy.deepcopy(LAYOUT),
                    "corpus": CORPUS}
        _write_text(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=2) + "\n")
        if os.path.exists(out):
            old = tmp + ".old"
            os.rename(out, old)
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old, out)
                raise
            shutil.rmtree(old)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def _write_all(root, seed, train_rows):
    global TRAIN
    default, TRAIN = TRAIN, train_rows  # the writers read the row count from TRAIN
    try:
        for write in _WRITERS:
            write(root, random.Random(f"{seed}/{write.__name__}"))  # one stream per dataset
    finally:
        TRAIN = default


# === File writers ===


def _write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as file:
        file.write(text)


def _write_tsv(root, path, header, rows, bom=False):
    lines = [header] if header else []
    lines += rows
    for line in lines:
        assert not any(set(str(field)) & set("\t\r\n") for field in line), line
    text = "".join("\t".join(map(str, line)) + "\n" for line in lines)
    _write_text(os.path.join(root, path), ("\ufeff" if bom else "") + text)


def _write_csv(root, path, header, rows):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def _splits(task, rng, make):
    """{split: [make(rng, i) ...]} with TRAIN rows for train and EVAL for the rest."""
    return {split: [make(rng, i) for i in range(TRAIN if split == "train" else EVAL)]
            for split in LAYOUT[task]}


# === Word lists: the small world every dataset is written about ===

FIRST = ["Anna", "Ben", "Clara", "David", "Elena", "Felix", "Grace", "Hugo", "Ines", "Jonas",
         "Karin", "Leo", "Maria", "Nils", "Olga", "Paul", "Rosa", "Sven", "Tara", "Victor"]
LAST = ["Adler", "Berger", "Castro", "Dumont", "Eriksen", "Fischer", "Garcia", "Hansen",
        "Ivanov", "Jensen", "Keller", "Larsen", "Moreau", "Novak", "Olsen", "Petrov", "Quinn",
        "Rossi", "Schmidt", "Weber"]
CITIES = ["Paris", "Berlin", "Madrid", "Lisbon", "Vienna", "Oslo", "Cairo", "Lima", "Tokyo",
          "Dublin", "Prague", "Warsaw", "Athens", "Rome", "Quito", "New York", "Hong Kong"]
COMPANIES = ["Acme Corp", "Globex", "Initech", "Vandelay Industries", "Hooli", "Umbrella Group",
             "Wonka", "Cyberdyne Systems", "Soylent", "Tyrell Corp"]
NATIONALITIES = ["German", "French", "Spanish", "Italian", "Dutch", "Polish", "Greek",
                 "Swedish", "Irish", "Danish"]
INSTRUMENTS = ["piano", "violin", "guitar", "cello", "flute", "trumpet", "drums", "harp"]
ANIMALS = ["dog", "cat", "parrot", "rabbit", "horse", "turtle"]
PET_NAMES = ["Biscuit", "Pepper", "Luna", "Max", "Ziggy", "Mango", "Olive", "Rocky"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
OBJECTS = ["book", "ball", "letter", "cake", "picture", "chair", "bicycle", "window", "lamp",
           "kettle", "map", "guitar"]
VERBS = [("visited", "visit"), ("painted", "paint"), ("carried", "carry"), ("bought", "buy"),
         ("found", "find"), ("washed", "wash"), ("sold", "sell"), ("opened", "open"),
         ("repaired", "repair"), ("borrowed", "borrow")]
NOUNS = [("dog", "dogs"), ("teacher", "teachers"), ("farmer", "farmers"), ("child", "children"),
         ("doctor", "doctors"), ("painter", "painters"), ("student", "students")]
PRESENT = [("sees", "see"), ("likes", "like"), ("finds", "find"), ("helps", "help"),
           ("carries", "carry"), ("wants", "want")]
POSITIVE = ["charming", "delightful", "brilliant", "moving", "funny", "beautiful", "wonderful",
            "gripping", "clever", "warm"]
NEGATIVE = ["dull", "boring", "awful", "tedious", "clumsy", "bland", "painful", "lifeless",
            "silly", "tiresome"]
FILM = ["film", "movie", "story", "script", "performance", "ending", "cast", "comedy"]
EXTRAS = ["because it was cheap", "with a close friend", "for the first time",
          "after a long trip", "to surprise a neighbour", "before the storm"]
SKILLS = ["paint", "swim", "cook rice", "play the piano", "speak French", "write poems",
          "drive a car", "draw faces", "fix a bicycle", "bake bread", "sing in tune", "code"]


def _person(rng):
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _people(rng, n):
    people = []  # a list, not a set: set order changes with PYTHONHASHSEED
    while len(people) < n:
        person = _person(rng)
        if person not in people:
            people.append(person)
    return people


def _other(rng, items, *not_these):
    return rng.choice([item for item in items if item not in not_these])


def _tokens(sentence):
    return sentence.replace(".", " .").replace(",", " ,").replace("?", " ?").split()


def _binary_parse(sentence):
    return "( " + " ".join(_tokens(sentence)) + " )"


def _parse(sentence):
    return "(ROOT (S " + " ".join(f"(X {token})" for token in _tokens(sentence)) + "))"


# === Sentence pairs ===


def _nli(rng, label, name=None):
    """(premise, hypothesis) for "entailment", "neutral" or "contradiction"."""
    name, (verb, base) = name or _person(rng), rng.choice(VERBS)
    thing, city, day = rng.choice(OBJECTS), rng.choice(CITIES), rng.choice(DAYS)
    premise = f"{name} {verb} the {thing} in {city} on {day}."
    hypothesis = rng.choice({
        "entailment": [f"{name} {verb} the {thing}.", f"{name} {verb} the {thing} in {city}.",
                       f"{name} {verb} the {thing} on {day}.", f"Someone {verb} a {thing}."],
        "contradiction": [f"{name} did not {base} the {thing}.",
                          f"{name} never {verb} the {thing} in {city}.",
                          f"Nobody {verb} the {thing} on {day}."],
        "neutral": [f"{name} {verb} the {thing} {rng.choice(EXTRAS)}.",
                    f"{name} {verb} the {thing} in {city} {rng.choice(EXTRAS)}."],
    }[label])
    return premise, hypothesis


_NLI_LABELS = ("entailment", "neutral", "contradiction")


def _two_way(rng):
    label = rng.choice(["entailment", "entailment", "neutral", "contradiction"])
    return label, *_nli(rng, label)


def _write_two_way(task, names, root, rng):
    def make(rng, i):
        label, premise, hypothesis = _two_way(rng)
        return [i, premise, hypothesis, names[label != "entailment"]]

    for split, rows in _splits(task, rng, make).items():
        header = ["index", "sentence1", "sentence2", "label"]
        if split == "test":
            header, rows = header[:3], [row[:3] for row in rows]
        _write_tsv(root, LAYOUT[task][split], header, rows)


def write_rte(root, rng):
    _write_two_way("glue/rte", ("entailment", "not_entailment"), root, rng)


def write_wnli(root, rng):
    _write_two_way("glue/wnli", ("1", "0"), root, rng)


def write_cola(root, rng):
    sources = ["gj04", "bc01", "ks08", "r-67", "c_13", "m_02", "w_80", "sks13", "ad03", "l-93"]

    def make(rng, i):
        (one, many), (verb_s, verb) = rng.choice(NOUNS), rng.choice(PRESENT)
        plural = rng.random() < 0.5
        words = ["The", many if plural else one, verb if plural else verb_s, "the",
                 rng.choice(OBJECTS)]
        label = rng.random() < 0.5
        if not label and rng.random() < 0.3:
            words[2] = verb_s if plural else verb  # subject-verb agreement broken
        elif not label:
            while words[0] == "The":
                rng.shuffle(words)
            words = [words[0].capitalize()] + [w.lower() if w == "The" else w for w in words[1:]]
        return [rng.choice(sources), int(label), "" if label else "*", " ".join(words) + "."]

    for split, rows in _splits("glue/cola", rng, make).items():
        if split == "test":
            _write_tsv(root, LAYOUT["glue/cola"][split], ["index", "sentence"],
                       [[i, row[3]] for i, row in enumerate(rows)])
        else:  # no header: source, label, original judgement, sentence
            _write_tsv(root, LAYOUT["glue/cola"][split], None, rows)


def write_sst2(root, rng):
    templates = ["the {noun} is {a} and {b} ", "a {a} , {b} {noun} ", "it 's a {a} {noun} ",
                 "{a} and often {b} ", "the {noun} feels {a} from start to finish "]

    def make(rng, i):
        label = rng.random() < 0.5
        a, b = rng.sample(POSITIVE if label else NEGATIVE, 2)
        return [rng.choice(templates).format(noun=rng.choice(FILM), a=a, b=b), int(label)]

    for split, rows in _splits("glue/sst2", rng, make).items():
        if split == "test":
            header, rows = ["index", "sentence"], [[i, row[0]] for i, row in enumerate(rows)]
        else:
            header = ["sentence", "label"]
        _write_tsv(root, LAYOUT["glue/sst2"][split], header, rows)


def write_mrpc(root, rng):
    def make(rng, i):
        name, company, city, day = _person(rng), rng.choice(COMPANIES), rng.choice(CITIES), \
            rng.choice(DAYS)
        first = f"{name} said {company} will open a new office in {city} on {day} ."
        label = rng.random() < 0.5
        if not label:
            slot = rng.choice(["company", "city", "day"])
            company = _other(rng, COMPANIES, company) if slot == "company" else company
            city = _other(rng, CITIES, city) if slot == "city" else city
            day = _other(rng, DAYS, day) if slot == "day" else day
        second = rng.choice([
            f"{company} will open a new office in {city} on {day} , {name} said .",
            f"On {day} , {company} will open an office in {city} , according to {name} ."])
        return [int(label), rng.randrange(10**5, 10**7), rng.randrange(10**5, 10**7), first, second]

    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    for split, rows in _splits("glue/mrpc", rng, make).items():
        if split == "test":
            _write_tsv(root, LAYOUT["glue/mrpc"][split], ["index"] + header[1:],
                       [[i] + row[1:] for i, row in enumerate(rows)])
        else:  # GLUE copies the header line, byte-order mark and all, from msr_paraphrase_train.txt
            _write_tsv(root, LAYOUT["glue/mrpc"][split], header, rows, bom=True)


def write_qqp(root, rng):
    asks = ["How can I learn to {}?", "What is the best way to learn to {}?",
            "How do I get better at learning to {}?", "What should I do to learn to {}?"]

    def make(rng, i):
        skill, label = rng.choice(SKILLS), rng.random() < 0.5
        first, second = rng.sample(asks, 2)
        other = skill if label else _other(rng, SKILLS, skill)
        return [i, 2 * i + 1, 2 * i + 2, first.format(skill), second.format(other), int(label)]

    header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    for split, rows in _splits("glue/qqp", rng, make).items():
        if split == "test":
            _write_tsv(root, LAYOUT["glue/qqp"][split], ["id", "question1", "question2"],
                       [[row[0], row[3], row[4]] for row in rows])
        else:
            _write_tsv(root, LAYOUT["glue/qqp"][split], header, rows)


def write_stsb(root, rng):
    genres = [("main-captions", "MSRvid", "2012test"), ("main-news", "headlines", "2015"),
              ("main-forums", "answers-forums", "2015")]

    def make(rng, i):
        (noun, _), (verb, _), thing, city = rng.choice(NOUNS), rng.choice(VERBS), \
            rng.choice(OBJECTS), rng.choice(CITIES)
        changed = rng.randrange(5)  # 0..4 of the four content words differ
        swap = set(rng.sample(range(4), changed))
        noun2 = _other(rng, [n for n, _ in NOUNS], noun) if 0 in swap else noun
        verb2 = _other(rng, [v for v, _ in VERBS], verb) if 1 in swap else verb
        thing2 = _other(rng, OBJECTS, thing) if 2 in swap else thing
        city2 = _other(rng, CITIES, city) if 3 in swap else city
        score = max(0.0, min(5.0, 5 * (1 - changed / 4) + rng.uniform(-0.3, 0.3)))
        genre, filename, year = rng.choice(genres)
        return [i, genre, filename, year, f"{i:04d}", "none", "none",
                f"A {noun} {verb} a {thing} in {city}.",
                f"A {noun2} {verb2} a {thing2} in {city2}.",
                f"{score:.3f}"]

    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score"]
    for split, rows in _splits("glue/stsb", rng, make).items():
        if split == "test":
            header, rows = header[:-1], [row[:-1] for row in rows]
        _write_tsv(root, LAYOUT["glue/stsb"][split], header, rows)


def write_mnli(root, rng):
    matched = ["fiction", "government", "slate", "telephone", "travel"]
    mismatched = ["facetoface", "letters", "nineeleven", "oup", "verbatim"]
    columns = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
               "sentence2"]
    for split, path in LAYOUT["glue/mnli"].items():
        genres = mismatched if split.endswith("mismatched") else matched
        rows = []
        for i in range(TRAIN if split == "train" else EVAL):
            label = rng.choice(_NLI_LABELS)
            premise, hypothesis = _nli(rng, label)
            prompt = rng.randrange(10**5)
            row = [i, prompt, f"{prompt}{label[0]}", rng.choice(genres), _binary_parse(premise),
                   _binary_parse(hypothesis), _parse(premise), _parse(hypothesis), premise,
                   hypothesis]
            if split == "train":  # the author's label, then the gold label
                row += [label, label]
            elif split.startswith("dev"):  # five annotators, then the gold (majority) label
                votes = [label] * 3 + [rng.choice(_NLI_LABELS) for _ in range(2)]
                row += rng.sample(votes, 5) + [label]
            rows.append(row)
        header = columns + {"train": ["label1", "gold_label"],
                            "dev": [f"label{k}" for k in range(1, 6)] + ["gold_label"],
                            "test": []}[split.split("_")[0]]
        _write_tsv(root, path, header, rows)


def write_qnli(root, rng):
    def make(rng, i):
        name, (verb, base), thing, city = _person(rng), rng.choice(VERBS), rng.choice(OBJECTS), \
            rng.choice(CITIES)
        question = f"Where did {name} {base} the {thing}?"
        label = rng.random() < 0.5
        if label:
            sentence = rng.choice([f"{name} {verb} the {thing} in {city} last year.",
                                   f"In {city}, {name} {verb} the {thing}."])
        else:
            sentence = rng.choice([f"{_person(rng)} {verb} the {thing} in {city} last year.",
                                   f"{name} {verb} the {thing} {rng.choice(EXTRAS)}."])
        return [i, question, sentence, "entailment" if label else "not_entailment"]

    header = ["index", "question", "sentence", "label"]
    for split, rows in _splits("glue/qnli", rng, make).items():
        if split == "test":
            _write_tsv(root, LAYOUT["glue/qnli"][split], header[:3], [r[:3] for r in rows])
        else:
            _write_tsv(root, LAYOUT["glue/qnli"][split], header, rows)


def write_snli(root, rng):
    letters = {"entailment": "e", "neutral": "n", "contradiction": "c", "-": "n"}
    for split, path in LAYOUT["snli"].items():
        lines = []
        for i in range(TRAIN if split == "train" else EVAL):
            label = rng.choice(_NLI_LABELS)
            premise, hypothesis = _nli(rng, label)
            if split == "train":
                votes = [label]
            else:
                votes = [label] * 3 + [rng.choice(_NLI_LABELS) for _ in range(2)]
            if rng.random() < 0.02:  # no three annotators agree: gold label "-", as in SNLI
                votes = ["neutral", "neutral", "entailment", "entailment", "contradiction"]
                label = "-"
            caption = f"{rng.randrange(10**9, 10**10)}.jpg#{rng.randrange(5)}"
            lines.append(json.dumps({
                "annotator_labels": votes, "captionID": caption, "gold_label": label,
                "pairID": f"{caption}r{i}{letters[label]}", "sentence1": premise,
                "sentence1_binary_parse": _binary_parse(premise),
                "sentence1_parse": _parse(premise), "sentence2": hypothesis,
                "sentence2_binary_parse": _binary_parse(hypothesis),
                "sentence2_parse": _parse(hypothesis)}))
        _write_text(os.path.join(root, path), "".join(line + "\n" for line in lines))


def write_scitail(root, rng):
    def make(rng, i):
        label, premise, hypothesis = _two_way(rng)
        return [premise, hypothesis, "entails" if label == "entailment" else "neutral"]

    for split, rows in _splits("scitail", rng, make).items():
        _write_tsv(root, LAYOUT["scitail"][split], None, rows)


# === Questions about paragraphs ===

# relation -> (sentence, question, the answer's slot); the cue words precede the answer.
FACTS = {
    "born": ("{p} was born in {city}.", "Where was {p} born?", "city"),
    "works": ("{p} works for {company}.", "Which company does {p} work for?", "company"),
    "plays": ("{p} plays the {instrument}.", "What instrument does {p} play?", "instrument"),
    "pet": ("{p} has a {animal} called {pet}.", "What is the name of the {animal} of {p}?", "pet"),
    "moved": ("{p} moved to {city} in {year}.", "When did {p} move to {city}?", "year"),
}
FILLER = ["The weather was mild that year.", "Many people in the town knew each other.",
          "The local newspaper reported on it.", "Nobody expected what happened next."]


def _fact(rng, person, relation):
    """(sentence, question, answer, answer offset in the sentence)."""
    values = dict(p=person, city=rng.choice(CITIES), company=rng.choice(COMPANIES),
                  instrument=rng.choice(INSTRUMENTS), animal=rng.choice(ANIMALS),
                  pet=rng.choice(PET_NAMES), year=str(rng.randrange(1950, 2020)))
    sentence, question, slot = FACTS[relation]
    answer = values[slot]
    head = sentence.split("{" + slot + "}")[0].format(**values)
    return sentence.format(**values), question.format(**values), answer, len(head)


def _paragraph(rng, people):
    """(context, [(question, answer, start)]) with one or two facts per person."""
    sentences, questions, length = [], [], 0
    for person in people:
        for relation in rng.sample(sorted(FACTS), rng.choice([1, 2])):
            sentence, question, answer, offset = _fact(rng, person, relation)
            if rng.random() < 0.3:
                filler = rng.choice(FILLER)
                sentences.append(filler)
                length += len(filler) + 1
            questions.append((question, answer, length + offset))
            sentences.append(sentence)
            length += len(sentence) + 1
    return " ".join(sentences), questions


def _qa_id(rng):
    return f"{rng.getrandbits(96):024x}"


def write_squad(root, rng):
    for version, task in ((1, "squad_v1"), (2, "squad_v2")):
        for split, path in LAYOUT[task].items():
            articles = []
            for a in range(30 if split == "train" else 8):
                paragraphs = []
                for _ in range(4):
                    people = _people(rng, 4)
                    context, facts = _paragraph(rng, people[:3])
                    qas = []
                    for question, answer, start in facts:
                        # dev questions carry three reference answers, like the real dev sets
                        answers = [{"answer_start": start, "text": answer}] * (
                            1 if split == "train" else 3)
                        qa = {"answers": answers, "question": question, "id": _qa_id(rng)}
                        if version == 2:
                            qa = {"question": question, "id": qa["id"], "answers": answers,
                                  "is_impossible": False}
                        qas.append(qa)
                    if version == 2:  # about someone the paragraph never mentions
                        question, answer, start = rng.choice(facts)
                        absent = question.replace(
                            next(p for p in people[:3] if p in question), people[3])
                        qas.append({"plausible_answers": [{"text": answer, "answer_start": start}],
                                    "question": absent, "id": _qa_id(rng), "answers": [],
                                    "is_impossible": True})
                    paragraphs.append({"context": context, "qas": qas})
                articles.append({"title": f"Sample_article_{a}", "paragraphs": paragraphs})
            document = {"data": articles, "version": "1.1"} if version == 1 else \
                {"version": "v2.0", "data": articles}
            _write_text(os.path.join(root, path), json.dumps(document))


# RACE: a short passage on what someone did through a week, then questions that ask what the
# passage shows about them, as RACE's inference questions do ("What does Clara like best?").
# Every thing handled in a passage is of one kind (music, animals, the home, reading), and the
# kind decides each answer; a question has the same four options in every passage, so its answer
# is read from the passage, not guessed from the options. Middle-school passages tell two days,
# high-school ones three.
KINDS = {"music": ["piano", "violin", "cello", "flute", "trumpet", "drums", "harp", "guitar"],
         "animals": ["dog", "cat", "parrot", "rabbit", "horse", "turtle"],
         "home": ["chair", "window", "lamp", "kettle", "sofa", "table"],
         "reading": ["book", "letter", "map", "newspaper", "poem", "diary"]}
# (question, {kind: the option that answers it for a passage of that kind}).
INFERENCES = [("What does {first} like best?",
               {"music": "music", "animals": "animals", "home": "the house",
                "reading": "reading"}),
              ("{first} would most like to meet _ .",
               {"music": "a musician", "animals": "a farmer", "home": "a builder",
                "reading": "a writer"})]
HANDLED = ["found", "bought", "borrowed", "sold"]  # what one does with any of those things


def write_race(root, rng):
    counts = {"train": 120, "dev": 32, "test": 32}
    for split, folder in LAYOUT["race"].items():
        letters = []  # the answer letters, in shuffled blocks of ABCD: no letter is favoured
        for n in range(counts[split]):
            level = "high" if n % 2 else "middle"
            person = _person(rng)
            first = person.split()[0]
            kind = rng.choice(sorted(KINDS))
            days = sorted(rng.sample(DAYS, 3 if level == "high" else 2), key=DAYS.index)
            things = rng.sample(KINDS[kind], len(days))
            sentences = [f"On {day} {person if i == 0 else first} {rng.choice(HANDLED)} the "
                         f"{thing}." for i, (day, thing) in enumerate(zip(days, things))]
            questions, options, answers = [], [], []
            for question, option in INFERENCES:
                if not letters:
                    letters = rng.sample("ABCD", 4)
                letter = letters.pop()
                choices = rng.sample([option[k] for k in sorted(KINDS) if k != kind], 3)
                choices.insert("ABCD".index(letter), option[kind])
                questions.append(question.format(first=first))
                options.append(choices)
                answers.append(letter)
            name = f"{n + 1}.txt"
            record = {"answers": answers, "options": options, "questions": questions,
                      "article": " ".join(sentences), "id": f"{level}{name}"}
            _write_text(os.path.join(root, folder, level, name), json.dumps(record))


# === Endings ===

ACTIVITIES = {
    "knife": "slices the bread with the knife.", "guitar": "strums a chord on the guitar.",
    "ball": "throws the ball across the field.", "brush": "paints the fence with the brush.",
    "book": "turns a page of the book.", "phone": "dials a number on the phone.",
    "bike": "rides the bike down the hill.", "cup": "drinks tea from the cup.",
    "hose": "waters the plants with the hose.", "camera": "takes a photo with the camera.",
    "rope": "ties a knot in the rope.", "broom": "sweeps the floor with the broom.",
}


def write_swag(root, rng):
    subjects = [("A man", "He"), ("A woman", "She"), ("The boy", "He"), ("The girl", "She"),
                ("Someone", "Someone")]
    header = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
              "ending0", "ending1", "ending2", "ending3", "label"]
    fold = 0
    for split, path in LAYOUT["swag"].items():
        rows = []
        for i in range(TRAIN if split == "train" else EVAL):
            (subject, pronoun), thing = rng.choice(subjects), rng.choice(sorted(ACTIVITIES))
            sent1 = rng.choice([f"{subject} picks up the {thing}.",
                                f"Smiling, {subject.lower()} holds the {thing}."])
            sent1 = sent1[0].upper() + sent1[1:]
            others = rng.sample([t for t in sorted(ACTIVITIES) if t != thing], 3)
            endings = [ACTIVITIES[t] for t in others] + [ACTIVITIES[thing]]
            rng.shuffle(endings)
            fold += rng.randrange(1, 9)
            video = f"anetv_{rng.getrandbits(60):015x}"
            rows.append([i, video, fold, f"{sent1} {pronoun}", sent1, pronoun,
                         rng.choice(["gold", "gen"]), *endings,
                         endings.index(ACTIVITIES[thing])])
        if split == "test":  # unlabelled
            _write_csv(root, path, header[:-1], [row[:-1] for row in rows])
        else:
            _write_csv(root, path, header, rows)


def write_story_cloze(root, rng):
    good = ["woke up early and felt great.", "went to the park with friends.",
            "found a coin on the street.", "got a kind note from a neighbour.",
            "won a prize at the fair.", "had a lovely lunch in the sun."]
    bad = ["woke up late with a headache.", "missed the bus in the rain.",
           "lost the keys to the house.", "got a parking ticket.", "broke a favourite cup.",
           "had a fight with a friend."]
    happy = ["was very happy.", "smiled all evening.", "felt lucky and grateful."]
    sad = ["was miserable.", "went to bed upset.", "felt like crying."]
    header = ["InputStoryid", *(f"InputSentence{k}" for k in range(1, 5)),
              "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding"]
    for split, path in LAYOUT["story_cloze"].items():
        rows = []
        for _ in range(TRAIN if split == "val" else EVAL):
            name, mood = rng.choice(FIRST), rng.random() < 0.5
            events = rng.sample(good if mood else bad, 3)
            story = [f"{name} had a long day.", *(f"{name} {e}" for e in events)]
            right = f"{name} {rng.choice(happy if mood else sad)}"
            wrong = f"{name} {rng.choice(sad if mood else happy)}"
            first = rng.random() < 0.5
            endings = [right, wrong] if first else [wrong, right]
            story_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            rows.append([story_id, *story, *endings, 1 if first else 2])
        _write_csv(root, path, header, rows)


# === Named entities ===

# Templates: slot words in braces become entities; other words take POS tags from LEXICON.
NER_TEMPLATES = [
    "{PER} visited {LOC} on Monday .",
    "{ORG} said on Tuesday it would open an office in {LOC} .",
    "The {MISC} minister met {PER} in {LOC} .",
    "{PER} , a spokesman for {ORG} , declined to comment .",
    "{ORG} shares rose 3 percent in {LOC} .",
    "{PER} and {PER} played for {ORG} last season .",
    "{MISC} officials praised {PER} .",
    "Police in {LOC} arrested two men on Friday .",
    "{PER} joined {ORG} from a {MISC} rival .",
]
LEXICON = {
    ".": ".", ",": ",", "The": "DT", "a": "DT", "an": "DT", "on": "IN", "in": "IN", "for": "IN",
    "from": "IN", "and": "CC", "it": "PRP", "would": "MD", "3": "CD", "two": "CD",
    "visited": "VBD", "said": "VBD", "met": "VBD", "declined": "VBD", "rose": "VBD",
    "played": "VBD", "praised": "VBD", "arrested": "VBD", "joined": "VBD", "open": "VB",
    "to": "TO", "comment": "VB", "last": "JJ", "Monday": "NNP", "Tuesday": "NNP",
    "Friday": "NNP", "Police": "NNS", "officials": "NNS", "shares": "NNS", "men": "NNS",
}
_CHUNKS = {"DT": "NP", "NN": "NP", "NNS": "NP", "NNP": "NP", "JJ": "NP", "CD": "NP",
           "PRP": "NP", "VBD": "VP", "VB": "VP", "MD": "VP", "TO": "VP", "IN": "PP"}
GAZETTEER = {"PER": None, "ORG": COMPANIES, "LOC": CITIES, "MISC": NATIONALITIES}


def _ner_sentence(rng):
    """[(word, POS, chunk, NER)] with IOB2 tags, as in the re-distributed CoNLL-2003."""
    tokens = []
    for part in rng.choice(NER_TEMPLATES).split():
        if part.startswith("{"):
            kind = part[1:-1]
            name = _person(rng) if kind == "PER" else rng.choice(GAZETTEER[kind])
            words = name.split()
            pos = "JJ" if kind == "MISC" else "NNP"
            tokens += [(w, pos, ("B-" if j == 0 else "I-") + kind) for j, w in enumerate(words)]
        else:
            tokens.append((part, LEXICON.get(part, "NN"), "O"))
    rows, previous = [], None
    for word, pos, tag in tokens:
        chunk = _CHUNKS.get(pos)
        chunk_tag = "O" if chunk is None else ("I-" if chunk == previous else "B-") + chunk
        previous = chunk
        rows.append((word, pos, chunk_tag, tag))
    return rows


def write_conll2003(root, rng):
    for split, path in LAYOUT["conll2003"].items():
        lines = []
        for _ in range(40 if split == "train" else 10):
            lines += ["-DOCSTART- -X- -X- O", ""]
            for _ in range(rng.randrange(5, 15)):
                lines += [" ".join(row) for row in _ner_sentence(rng)] + [""]
        _write_text(os.path.join(root, path), "".join(line + "\n" for line in lines))


# === Images ===

SHAPES = {"circle": (220, 60, 60), "square": (60, 200, 60), "triangle": (70, 90, 230)}
IMAGE_SIZE = 32


def _image(rng, shape, size=IMAGE_SIZE):
    noise = np.random.default_rng(rng.getrandbits(64))
    image = noise.integers(0, 60, (size, size, 3)).astype(np.int32)  # dark, noisy background
    radius = rng.randrange(size // 6, size // 3)
    cy, cx = rng.randrange(radius, size - radius), rng.randrange(radius, size - radius)
    y, x = np.mgrid[:size, :size]
    if shape == "circle":
        mask = (y - cy) ** 2 + (x - cx) ** 2 <= radius ** 2
    elif shape == "square":
        mask = (abs(y - cy) <= radius) & (abs(x - cx) <= radius)
    else:  # apex up: the half-width grows linearly from the top row to the base
        mask = (y >= cy - radius) & (y <= cy + radius) & (abs(x - cx) <= (y - cy + radius) / 2)
    colour = np.array(SHAPES[shape]) + noise.integers(-30, 31, 3)
    image[mask] = colour
    return np.clip(image, 0, 255).astype(np.uint8)


def write_images(root, rng):
    import tensorflow as tf

    for split, folder in LAYOUT["image_folder"].items():
        for shape in SHAPES:
            os.makedirs(os.path.join(root, folder, shape))
            for n in range(60 if split == "train" else 20):
                png = tf.io.encode_png(_image(rng, shape)).numpy()
                with open(os.path.join(root, folder, shape, f"{shape}_{n:04d}.png"), "wb") as f:
                    f.write(png)


# === Pretraining corpus ===


def write_corpus(root, rng):
    documents = []
    for d in range(300):
        if d % 3 == 2:  # a film review
            label = rng.random() < 0.5
            words = POSITIVE if label else NEGATIVE
            film = rng.choice(FILM)
            sentences = [f"The {film} opened in {rng.choice(CITIES)} on {rng.choice(DAYS)}."]
            sentences += [f"Critics called the {rng.choice(FILM)} {a} and {b}."
                          for a, b in (rng.sample(words, 2) for _ in range(rng.randrange(2, 5)))]
        else:  # a short biography: facts about one person, then what they did
            person = _person(rng)
            sentences = [_fact(rng, person, relation)[0]
                         for relation in rng.sample(sorted(FACTS), rng.randrange(2, 5))]
            sentences += [_nli(rng, "entailment", person)[0] for _ in range(rng.randrange(1, 4))]
        documents.append("".join(sentence + "\n" for sentence in sentences))
    _write_text(os.path.join(root, CORPUS), "\n".join(documents))


_WRITERS = [write_cola, write_sst2, write_mrpc, write_qqp, write_stsb, write_mnli, write_qnli,
            write_rte, write_wnli, write_snli, write_scitail, write_squad, write_race, write_swag,
            write_story_cloze, write_conll2003, write_images, write_corpus]
