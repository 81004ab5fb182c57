"""Tagging: CoNLL-2003's named entities, sentences from templates, entities from a gazetteer."""

import os

from zoo import files
from zoo.data.samples.common import LAYOUT
from zoo.data.samples.words import CITIES, COMPANIES, NATIONALITIES, random_person

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
            name = random_person(rng) if kind == "PER" else rng.choice(GAZETTEER[kind])
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
        files.write_text(os.path.join(root, path), "".join(line + "\n" for line in lines))
