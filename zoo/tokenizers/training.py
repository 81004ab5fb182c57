"""Train a WordPiece or BPE vocabulary on plain-text files (`zoo data vocab`)."""

import collections
import json
import os
import tempfile

from zoo import files
from zoo.progress import bar as progress_bar
from zoo.storage import storage_operation
from zoo.tokenizers.basic import BasicTokenizer
from zoo.tokenizers.loading import CONFIG_FILE, from_directory

WORDPIECE_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BPE_UNK_TOKEN = "<unk>"
_BATCH_LINES = 1024


def train_vocabulary(corpus_files, size, kind, out, lowercase=True):
    """Learn a vocabulary from text files into a directory that zoo and transformers both load.

    A vocabulary has exactly `size` tokens (special tokens included) unless the corpus runs out
    first: when every word of the corpus is a token already there is nothing left to learn,
    and the vocabulary is smaller. Both kinds start from every character of the corpus, so a
    `size` below that alphabet (with its "##" or "</w>" forms and the special tokens) is an
    error naming the least size.

    wordpiece: words are counted with our BERT BasicTokenizer, then tensorflow-text's WordPiece
    learner (`tensorflow_text.tools.wordpiece_vocab`, the BERT vocabulary algorithm) learns
    `size` tokens (`wordpiece_of_size`); the same corpus always gives the same vocabulary.
    Writes vocab.txt with `[PAD] [UNK] [CLS] [SEP] [MASK]` as ids 0-4.
    bpe: learnt by the Hugging Face `tokenizers` BpeTrainer on the same BERT normalization and
    word splitting (the trainer breaks ties between equally frequent pairs in its hash order,
    so two runs on one corpus can differ in their rarest merges): GPT-1 style BPE (`</w>`
    word-final symbols, `<unk>` = id 0); writes vocab.json + merges.txt. With
    `lowercase=False` the result is cased, which transformers' OpenAIGPTTokenizer cannot
    express (it always lower-cases); our GPTTokenizer reads the config.

    The directory also gets tokenizer_config.json; everything is written into a temporary
    directory first and renamed into place, so readers never see a partial vocabulary.

    Args:
        corpus_files: plain-text files, one text per line (UTF-8).
        size: the vocabulary size (at most; exactly unless the corpus runs out).
        kind: "wordpiece" or "bpe".
        out: output directory (created; existing files of the same names are replaced).
        lowercase: lower-case (and strip accents) before learning — an uncased vocabulary.

    Returns:
        The tokenizer for the new vocabulary (`from_directory(out)`).

    Examples:
        >>> import os, tempfile
        >>> tmp = tempfile.mkdtemp()
        >>> with open(os.path.join(tmp, "corpus.txt"), "w") as f:
        ...     _ = f.write("the cat sat on the mat\\n" * 50)
        >>> tokenizer = train_vocabulary([os.path.join(tmp, "corpus.txt")], size=60,
        ...                              kind="wordpiece", out=os.path.join(tmp, "vocab"))
        >>> tokenizer.detokenize(tokenizer(["The cat!"])).numpy()
        array([b'the cat [UNK]'], dtype=object)
    """
    if kind not in ("wordpiece", "bpe"):
        raise ValueError(f"kind must be 'wordpiece' or 'bpe', got {kind!r}")
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")

    for path in corpus_files:
        if not files.isfile(path):
            raise FileNotFoundError(f"corpus file {path} does not exist")
    out = files.absolute(out)
    parent = os.path.dirname(out)
    # A full, read-only or vanished disk: one StorageError naming `out` (the corpus is read
    # under its own "reading the corpus" operation, in `_lines`).
    with storage_operation("writing the vocabulary", out):
        files.makedirs(parent)
        # The vocabulary is written into a local directory (the `tokenizers` library saves only
        # to local files): beside `out` when `out` is local, so the swap is a rename; otherwise
        # in a local temporary directory, copied to a staging directory beside the remote `out`.
        local = not files.is_remote(out)
        scratch = tempfile.mkdtemp(prefix=f".{os.path.basename(out)}.",
                                   dir=parent if local else None)
        staging = scratch if local else files.scratch_directory(
            parent, f".{os.path.basename(out)}.")
        try:
            config = _train(corpus_files, size, kind, scratch, lowercase)
            with files.open(os.path.join(scratch, CONFIG_FILE), "w", encoding="utf-8") as file:
                json.dump(config, file, indent=2)
            if not local:
                files.copytree(scratch, staging)
            _move_into_place(staging, out)
        finally:
            for directory in {scratch, staging}:  # gone already unless something failed
                files.remove_quietly(directory)
    return from_directory(out)


def _lines(corpus_files, description):
    """Lines of all files (without newlines), with a progress bar over bytes read."""
    total = sum(files.getsize(path) for path in corpus_files)
    with progress_bar(total=total, unit="B", unit_scale=True, desc=description) as progress:
        for path in corpus_files:
            with storage_operation("reading the corpus", path), \
                    files.open(path, encoding="utf-8") as file:
                for line in file:
                    progress.update(len(line.encode("utf-8")))
                    yield line.rstrip("\r\n")


def _batches(lines):
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) == _BATCH_LINES:
            yield batch
            batch = []
    if batch:
        yield batch


def _train(corpus_files, size, kind, staging, lowercase):
    """Learn the vocabulary of `kind` into `staging`; returns tokenizer_config.json's contents."""
    if kind == "wordpiece":
        return _train_wordpiece(corpus_files, size, staging, lowercase)
    return _train_bpe(corpus_files, size, staging, lowercase)


def _train_wordpiece(corpus_files, size, staging, lowercase):
    import tensorflow as tf  # lazy: zoo's BasicTokenizer in a graph, only for training

    # Words as zoo's BasicTokenizer (BERT's) splits them, as the model will see them.
    basic = BasicTokenizer(lowercase=lowercase)
    split = tf.function(lambda texts: basic.words(texts).values,
                        input_signature=[tf.TensorSpec([None], tf.string)])
    counts = collections.Counter()
    for batch in _batches(_lines(corpus_files, "counting words")):
        counts.update(split(tf.constant(batch)).numpy())
    if not counts:
        raise ValueError(f"no words in {corpus_files}")
    counts = {word.decode("utf-8"): count for word, count in counts.items()}
    vocabulary = wordpiece_of_size(counts, size)
    with files.open(os.path.join(staging, "vocab.txt"), "w", encoding="utf-8") as file:
        file.writelines(token + "\n" for token in vocabulary)
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase,
            "strip_accents": None, "tokenize_chinese_chars": True,
            **dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                       WORDPIECE_SPECIAL_TOKENS))}


def wordpiece_of_size(counts, size):
    """BERT's WordPiece vocabulary of `size` tokens (the special tokens included) for the word
    counts `counts` ({word: count}), by tensorflow-text's learner (wordpiece_tokenizer_learner_lib).

    The learner keeps every piece seen at least `threshold` times, and vocabulary sizes jump
    between neighbouring thresholds (8,311 tokens at 1 and 1,407 at 2 on one corpus); its own
    search stops within 5 % of the size asked, or wherever it ends when no threshold lands
    there. Here the search finds the least threshold whose vocabulary fits `size`, and the
    vocabulary of the threshold below it (the learner's order: special tokens, characters, then
    pieces by count) fills the places left with its most frequent pieces. Fewer than `size`
    tokens only when every word of the corpus is already a token (threshold 1 fits); a `size`
    below the special tokens, the characters and their "##" forms is an error naming the least
    size. The learner is deterministic: the same corpus gives the same vocabulary.

    Examples:
        >>> counts = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
        >>> len(wordpiece_of_size(counts, 27)), len(wordpiece_of_size(counts, 100))
        (27, 29)
    """
    # lazy: tensorflow-text's learner (it imports TensorFlow), only for training
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    params = learner.Params(
        upper_thresh=None, lower_thresh=1, num_iterations=4, max_input_tokens=int(5e6),
        max_token_length=50, max_unique_chars=1000, vocab_size=size, slack_ratio=0.0,
        include_joiner_token=True, joiner="##", reserved_tokens=list(WORDPIECE_SPECIAL_TOKENS))
    words = learner.get_input_words(counts.items(), params.reserved_tokens,
                                    params.max_token_length)
    words = learner.filter_input_words(
        words, learner.get_allowed_chars(words, params.max_unique_chars),
        params.max_input_tokens)
    characters = learner.extract_char_tokens(words)
    least = learner.generate_final_vocabulary(
        params.reserved_tokens, characters,
        learner.ensure_all_tokens_exist(characters, {}, True, params.joiner))
    if size < len(least):
        raise ValueError(
            f"size {size} is too small for the corpus: its characters alone make {len(least)} "
            f"wordpiece tokens (with the special tokens); ask for at least {len(least)}")
    learnt = {}

    def at(threshold):
        if threshold not in learnt:
            learnt[threshold] = learner.learn_with_thresh(words, threshold, params)
        return learnt[threshold]

    if len(at(1)) <= size:
        return at(1)
    # Invariant: at(low) is larger than `size`, at(high) fits (above every count: `least`).
    low, high = 1, sum(count for _, count in words) + 1
    learnt[high] = least
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if len(at(middle)) <= size else (middle, high)
    vocabulary = list(at(high))
    kept = set(vocabulary)
    for token in at(low):
        if len(vocabulary) == size:
            break
        if token not in kept:
            vocabulary.append(token)
            kept.add(token)
    return vocabulary


def _train_bpe(corpus_files, size, staging, lowercase):
    # lazy: `tokenizers` comes with keras-hub (a dependency of ours) and is needed only here
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE

    # The pipeline of transformers' OpenAIGPTTokenizer, which our GPTTokenizer matches.
    special = [BPE_UNK_TOKEN]
    tokenizer = Tokenizer(BPE(unk_token=BPE_UNK_TOKEN, end_of_word_suffix="</w>"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=special,
                                  end_of_word_suffix="</w>", show_progress=False)
    tokenizer.train_from_iterator(_batches(_lines(corpus_files, "learning merges")), trainer)
    vocabulary = tokenizer.get_vocab()
    if len(vocabulary) == len(special):
        raise ValueError(f"no words in {corpus_files}")
    if len(vocabulary) > size:
        # The trainer starts from every character of the corpus (and its "</w>" form) and
        # cannot go below that: fewer tokens would leave words it has seen unknown.
        raise ValueError(
            f"size {size} is too small for the corpus: its characters alone make "
            f"{len(vocabulary)} bpe tokens (with the special tokens); ask for at least "
            f"{len(vocabulary)}")
    tokenizer.model.save(staging)
    return {"tokenizer_class": "OpenAIGPTTokenizer", "do_lower_case": lowercase,
            "unk_token": BPE_UNK_TOKEN}


def _move_into_place(staging, out):
    """Swap the complete staging directory in as `out`; readers never see a mix of files.

    An existing `out` is replaced only if it is empty or a vocabulary directory written
    earlier (it holds tokenizer_config.json); anything else is refused, not overwritten.
    """
    # Locally a rename; on a remote filesystem file by file (see `files.move_directory`).
    if files.exists(out):
        if not files.isdir(out):
            raise FileExistsError(f"{out} exists and is not a directory")
        contents = files.listdir(out)
        if contents and CONFIG_FILE not in contents:
            raise FileExistsError(
                f"{out} exists and is not a vocabulary directory (no {CONFIG_FILE}); "
                "choose an empty or new --out")
        # Not `staging + ".old"`: ram:// would take that for a child of `staging`.
        retired = os.path.join(os.path.dirname(staging), f".old{os.path.basename(staging)}")
        files.move_directory(out, retired)
        files.move_directory(staging, out)
        files.rmtree(retired)
        return
    files.move_directory(staging, out)
