"""Small text fixtures for the data-pipeline tests: a tiny WordPiece vocabulary and corpora."""

import os
import random
import string

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "dog", "sat", "on", "mat", "ran", "to", "a", "big", "red", "house",
         "paris", "is", "in", "france", "who", "what", "when", "where", "city", "river",
         "john", "mary", "went", "home", "after", "school", "and", "of"]
# Every lower-case ASCII word tokenizes without [UNK]: whole words, single characters, and
# "##" continuation characters.
VOCAB = list(dict.fromkeys(
    SPECIALS + list(string.punctuation) + list(string.ascii_lowercase + string.digits)
    + ["##" + c for c in string.ascii_lowercase + string.digits] + WORDS
    + ["##s", "##ing", "##ed"]))


def write_vocab(directory):
    path = os.path.join(directory, "vocab.txt")
    with open(path, "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    return path


def wordpiece(vocab_path):
    """The zoo WordPiece tokenizer for `vocab_path` (lower-casing)."""
    from zoo.tokenizers import WordPieceTokenizer

    return WordPieceTokenizer(vocab_path, lowercase=True)


def random_sentence(rng, low=3, high=12):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high))) + " ."


def write_corpus(path, num_documents, seed=0, sentences=(1, 12)):
    """One sentence per line, a blank line between documents, over `WORDS` (one token each)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(num_documents):
            for _ in range(rng.randint(*sentences)):
                f.write(random_sentence(rng) + "\n")
            f.write("\n")
    return path
