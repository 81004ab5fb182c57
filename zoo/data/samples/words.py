"""The small world every sample dataset is written about: word lists and people."""

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


def random_person(rng):
    """A first and last name drawn from FIRST and LAST."""
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def random_people(rng, n):
    """`n` different people, in the order drawn."""
    people = []  # a list, not a set: set order changes with PYTHONHASHSEED
    while len(people) < n:
        person = random_person(rng)
        if person not in people:
            people.append(person)
    return people


def other_than(rng, items, *not_these):
    """One of `items` that is none of `not_these`."""
    return rng.choice([item for item in items if item not in not_these])


def _tokens(sentence):
    return sentence.replace(".", " .").replace(",", " ,").replace("?", " ?").split()


def binary_parse(sentence):
    """A flat stand-in for the binary parse columns of MNLI and SNLI."""
    return "( " + " ".join(_tokens(sentence)) + " )"


def parse_tree(sentence):
    """A flat stand-in for the parse-tree columns of MNLI and SNLI."""
    return "(ROOT (S " + " ".join(f"(X {token})" for token in _tokens(sentence)) + "))"
