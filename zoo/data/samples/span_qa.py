"""Span question answering: SQuAD 1.1 / 2.0 questions about paragraphs, whose answers follow a
cue in the paragraph."""

import json
import os

from zoo import files
from zoo.data.samples.common import LAYOUT
from zoo.data.samples.words import ANIMALS, CITIES, COMPANIES, INSTRUMENTS, PET_NAMES, random_people

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


def fact(rng, person, relation):
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
            sentence, question, answer, offset = fact(rng, person, relation)
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
                    people = random_people(rng, 4)
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
            files.write_text(os.path.join(root, path), json.dumps(document))
