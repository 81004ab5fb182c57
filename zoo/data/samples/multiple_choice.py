"""Multiple choice on a passage: RACE, whose inference questions the passage decides."""

import json
import os

from zoo import files
from zoo.data.samples.common import LAYOUT
from zoo.data.samples.words import DAYS, random_person

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
            person = random_person(rng)
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
            files.write_text(os.path.join(root, folder, level, name), json.dumps(record))
