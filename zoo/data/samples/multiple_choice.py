"""Multiple choice: RACE, whose inference questions the passage decides, and choosing an
ending, SWAG (the right ending uses the object the context picked up) and Story Cloze (the
right ending has the story's mood)."""

import json
import os
import uuid

from zoo import files
from zoo.data.samples.common import LAYOUT, row_count, write_csv
from zoo.data.samples.words import DAYS, FIRST, random_person

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


# SWAG: the object the context's person picked up -> the ending that uses it.
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
        for i in range(row_count(split)):
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
            write_csv(root, path, header[:-1], [row[:-1] for row in rows])
        else:
            write_csv(root, path, header, rows)


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
        for _ in range(row_count(split, "val")):
            name, mood = rng.choice(FIRST), rng.random() < 0.5
            events = rng.sample(good if mood else bad, 3)
            story = [f"{name} had a long day.", *(f"{name} {e}" for e in events)]
            right = f"{name} {rng.choice(happy if mood else sad)}"
            wrong = f"{name} {rng.choice(sad if mood else happy)}"
            first = rng.random() < 0.5
            endings = [right, wrong] if first else [wrong, right]
            story_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            rows.append([story_id, *story, *endings, 1 if first else 2])
        write_csv(root, path, header, rows)
