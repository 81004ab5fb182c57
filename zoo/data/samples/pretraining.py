"""The pretraining corpus: one document per person or film, one sentence a line."""

import os

from zoo import files
from zoo.data.samples.classification import nli_pair
from zoo.data.samples.common import CORPUS
from zoo.data.samples.span_qa import FACTS, fact
from zoo.data.samples.words import CITIES, DAYS, FILM, NEGATIVE, POSITIVE, random_person


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
            person = random_person(rng)
            sentences = [fact(rng, person, relation)[0]
                         for relation in rng.sample(sorted(FACTS), rng.randrange(2, 5))]
            sentences += [nli_pair(rng, "entailment", person)[0]
                          for _ in range(rng.randrange(1, 4))]
        documents.append("".join(sentence + "\n" for sentence in sentences))
    files.write_text(os.path.join(root, CORPUS), "\n".join(documents))
