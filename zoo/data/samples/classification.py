"""Classification, of sentences and sentence pairs: GLUE (CoLA ... WNLI), SNLI and SciTail.

NLI labels follow from the words: entailment repeats premise words, contradiction negates
them, neutral adds new ones.
"""

import json
import os

from zoo import files
from zoo.data.samples.common import LAYOUT, row_count, rows_per_split, write_tsv
from zoo.data.samples.words import (
    CITIES,
    COMPANIES,
    DAYS,
    EXTRAS,
    FILM,
    NEGATIVE,
    NOUNS,
    OBJECTS,
    POSITIVE,
    PRESENT,
    SKILLS,
    VERBS,
    binary_parse,
    other_than,
    parse_tree,
    random_person,
)


def nli_pair(rng, label, name=None):
    """(premise, hypothesis) for "entailment", "neutral" or "contradiction"."""
    name, (verb, base) = name or random_person(rng), rng.choice(VERBS)
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
    return label, *nli_pair(rng, label)


def _write_two_way(task, names, root, rng):
    def make(rng, i):
        label, premise, hypothesis = _two_way(rng)
        return [i, premise, hypothesis, names[label != "entailment"]]

    for split, rows in rows_per_split(task, rng, make).items():
        header = ["index", "sentence1", "sentence2", "label"]
        if split == "test":
            header, rows = header[:3], [row[:3] for row in rows]
        write_tsv(root, LAYOUT[task][split], header, rows)


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

    for split, rows in rows_per_split("glue/cola", rng, make).items():
        if split == "test":
            write_tsv(root, LAYOUT["glue/cola"][split], ["index", "sentence"],
                      [[i, row[3]] for i, row in enumerate(rows)])
        else:  # no header: source, label, original judgement, sentence
            write_tsv(root, LAYOUT["glue/cola"][split], None, rows)


def write_sst2(root, rng):
    templates = ["the {noun} is {a} and {b} ", "a {a} , {b} {noun} ", "it 's a {a} {noun} ",
                 "{a} and often {b} ", "the {noun} feels {a} from start to finish "]

    def make(rng, i):
        label = rng.random() < 0.5
        a, b = rng.sample(POSITIVE if label else NEGATIVE, 2)
        return [rng.choice(templates).format(noun=rng.choice(FILM), a=a, b=b), int(label)]

    for split, rows in rows_per_split("glue/sst2", rng, make).items():
        if split == "test":
            header, rows = ["index", "sentence"], [[i, row[0]] for i, row in enumerate(rows)]
        else:
            header = ["sentence", "label"]
        write_tsv(root, LAYOUT["glue/sst2"][split], header, rows)


def write_mrpc(root, rng):
    def make(rng, i):
        name, company, city, day = random_person(rng), rng.choice(COMPANIES), rng.choice(CITIES), \
            rng.choice(DAYS)
        first = f"{name} said {company} will open a new office in {city} on {day} ."
        label = rng.random() < 0.5
        if not label:
            slot = rng.choice(["company", "city", "day"])
            company = other_than(rng, COMPANIES, company) if slot == "company" else company
            city = other_than(rng, CITIES, city) if slot == "city" else city
            day = other_than(rng, DAYS, day) if slot == "day" else day
        second = rng.choice([
            f"{company} will open a new office in {city} on {day} , {name} said .",
            f"On {day} , {company} will open an office in {city} , according to {name} ."])
        return [int(label), rng.randrange(10**5, 10**7), rng.randrange(10**5, 10**7), first, second]

    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    for split, rows in rows_per_split("glue/mrpc", rng, make).items():
        if split == "test":
            write_tsv(root, LAYOUT["glue/mrpc"][split], ["index"] + header[1:],
                      [[i] + row[1:] for i, row in enumerate(rows)])
        else:  # GLUE copies the header line, byte-order mark and all, from msr_paraphrase_train.txt
            write_tsv(root, LAYOUT["glue/mrpc"][split], header, rows, bom=True)


def write_qqp(root, rng):
    asks = ["How can I learn to {}?", "What is the best way to learn to {}?",
            "How do I get better at learning to {}?", "What should I do to learn to {}?"]

    def make(rng, i):
        skill, label = rng.choice(SKILLS), rng.random() < 0.5
        first, second = rng.sample(asks, 2)
        other = skill if label else other_than(rng, SKILLS, skill)
        return [i, 2 * i + 1, 2 * i + 2, first.format(skill), second.format(other), int(label)]

    header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    for split, rows in rows_per_split("glue/qqp", rng, make).items():
        if split == "test":
            write_tsv(root, LAYOUT["glue/qqp"][split], ["id", "question1", "question2"],
                      [[row[0], row[3], row[4]] for row in rows])
        else:
            write_tsv(root, LAYOUT["glue/qqp"][split], header, rows)


def write_stsb(root, rng):
    genres = [("main-captions", "MSRvid", "2012test"), ("main-news", "headlines", "2015"),
              ("main-forums", "answers-forums", "2015")]

    def make(rng, i):
        (noun, _), (verb, _), thing, city = rng.choice(NOUNS), rng.choice(VERBS), \
            rng.choice(OBJECTS), rng.choice(CITIES)
        changed = rng.randrange(5)  # 0..4 of the four content words differ
        swap = set(rng.sample(range(4), changed))
        noun2 = other_than(rng, [n for n, _ in NOUNS], noun) if 0 in swap else noun
        verb2 = other_than(rng, [v for v, _ in VERBS], verb) if 1 in swap else verb
        thing2 = other_than(rng, OBJECTS, thing) if 2 in swap else thing
        city2 = other_than(rng, CITIES, city) if 3 in swap else city
        score = max(0.0, min(5.0, 5 * (1 - changed / 4) + rng.uniform(-0.3, 0.3)))
        genre, filename, year = rng.choice(genres)
        return [i, genre, filename, year, f"{i:04d}", "none", "none",
                f"A {noun} {verb} a {thing} in {city}.",
                f"A {noun2} {verb2} a {thing2} in {city2}.",
                f"{score:.3f}"]

    header = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
              "sentence1", "sentence2", "score"]
    for split, rows in rows_per_split("glue/stsb", rng, make).items():
        if split == "test":
            header, rows = header[:-1], [row[:-1] for row in rows]
        write_tsv(root, LAYOUT["glue/stsb"][split], header, rows)


def write_mnli(root, rng):
    matched = ["fiction", "government", "slate", "telephone", "travel"]
    mismatched = ["facetoface", "letters", "nineeleven", "oup", "verbatim"]
    columns = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
               "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
               "sentence2"]
    for split, path in LAYOUT["glue/mnli"].items():
        genres = mismatched if split.endswith("mismatched") else matched
        rows = []
        for i in range(row_count(split)):
            label = rng.choice(_NLI_LABELS)
            premise, hypothesis = nli_pair(rng, label)
            prompt = rng.randrange(10**5)
            row = [i, prompt, f"{prompt}{label[0]}", rng.choice(genres), binary_parse(premise),
                   binary_parse(hypothesis), parse_tree(premise), parse_tree(hypothesis), premise,
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
        write_tsv(root, path, header, rows)


def write_qnli(root, rng):
    def make(rng, i):
        name, (verb, base) = random_person(rng), rng.choice(VERBS)
        thing, city = rng.choice(OBJECTS), rng.choice(CITIES)
        question = f"Where did {name} {base} the {thing}?"
        label = rng.random() < 0.5
        if label:
            sentence = rng.choice([f"{name} {verb} the {thing} in {city} last year.",
                                   f"In {city}, {name} {verb} the {thing}."])
        else:
            sentence = rng.choice([f"{random_person(rng)} {verb} the {thing} in {city} last year.",
                                   f"{name} {verb} the {thing} {rng.choice(EXTRAS)}."])
        return [i, question, sentence, "entailment" if label else "not_entailment"]

    header = ["index", "question", "sentence", "label"]
    for split, rows in rows_per_split("glue/qnli", rng, make).items():
        if split == "test":
            write_tsv(root, LAYOUT["glue/qnli"][split], header[:3], [r[:3] for r in rows])
        else:
            write_tsv(root, LAYOUT["glue/qnli"][split], header, rows)


def write_snli(root, rng):
    letters = {"entailment": "e", "neutral": "n", "contradiction": "c", "-": "n"}
    for split, path in LAYOUT["snli"].items():
        lines = []
        for i in range(row_count(split)):
            label = rng.choice(_NLI_LABELS)
            premise, hypothesis = nli_pair(rng, label)
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
                "sentence1_binary_parse": binary_parse(premise),
                "sentence1_parse": parse_tree(premise), "sentence2": hypothesis,
                "sentence2_binary_parse": binary_parse(hypothesis),
                "sentence2_parse": parse_tree(hypothesis)}))
        files.write_text(os.path.join(root, path), "".join(line + "\n" for line in lines))


def write_scitail(root, rng):
    def make(rng, i):
        label, premise, hypothesis = _two_way(rng)
        return [premise, hypothesis, "entails" if label == "entailment" else "neutral"]

    for split, rows in rows_per_split("scitail", rng, make).items():
        write_tsv(root, LAYOUT["scitail"][split], None, rows)
