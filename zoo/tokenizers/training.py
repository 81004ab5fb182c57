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

    wordpiece: words are counted with our BERT BasicTokenizer, then tensorflow-text's WordPiece
    learner (`tensorflow_text.tools.wordpiece_vocab`, the BERT vocabulary algorithm) searches a
    frequency threshold giving 95-100% of `size` tokens, but always keeps every character of
    the (at most 1000-character) alphabet and its "##" form, so a small `size` on a corpus with
    many distinct characters comes out larger. Writes vocab.txt with `[PAD] [UNK] [CLS] [SEP]
    [MASK]` as ids 0-4.
    bpe: GPT-1 style BPE (`</w>` word-final symbols, `<unk>` = id 0) learned by the Hugging Face
    `tokenizers` trainer on the same BERT normalization and word splitting; writes vocab.json +
    merges.txt. With `lowercase=False` the result is cased, which transformers'
    OpenAIGPTTokenizer cannot express (it always lower-cases); our GPTTokenizer reads the config.

    The directory also gets tokenizer_config.json; everything is written into a temporary
    directory first and renamed into place, so readers never see a partial vocabulary.

    Args:
        corpus_files: plain-text files, one text per line (UTF-8).
        size: target vocabulary size.
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
            if kind == "wordpiece":
                config = _train_wordpiece(corpus_files, size, scratch, lowercase)
            else:
                config = _train_bpe(corpus_files, size, scratch, lowercase)
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


def _train_wordpiece(corpus_files, size, staging, lowercase):
    import tensorflow as tf
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    basic = BasicTokenizer(lowercase=lowercase)
    split = tf.function(lambda texts: basic.words(texts).values,
                        input_signature=[tf.TensorSpec([None], tf.string)])
    counts = collections.Counter()
    for batch in _batches(_lines(corpus_files, "counting words")):
        counts.update(split(tf.constant(batch)).numpy())
    if not counts:
        raise ValueError(f"no words in {corpus_files}")
    counts = {word.decode("utf-8"): count for word, count in counts.items()}
    # The learner's frequency-threshold search starts at 10 occurrences; a corpus too small for
    # `size` tokens at that threshold would come out far smaller, so allow any threshold >= 1.
    vocabulary = learner.learn(counts, size, list(WORDPIECE_SPECIAL_TOKENS), lower_thresh=1)
    with files.open(os.path.join(staging, "vocab.txt"), "w", encoding="utf-8") as file:
        file.writelines(token + "\n" for token in vocabulary)
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase,
            "strip_accents": None, "tokenize_chinese_chars": True,
            **dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                       WORDPIECE_SPECIAL_TOKENS))}


def _train_bpe(corpus_files, size, staging, lowercase):
    # `tokenizers` comes with keras-hub (a dependency of ours); imported here so only BPE
    # training needs it.
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE

    # The pipeline of transformers' OpenAIGPTTokenizer, which our GPTTokenizer matches.
    tokenizer = Tokenizer(BPE(unk_token=BPE_UNK_TOKEN, end_of_word_suffix="</w>"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=[BPE_UNK_TOKEN],
                                  end_of_word_suffix="</w>", show_progress=False)
    tokenizer.train_from_iterator(_batches(_lines(corpus_files, "learning merges")), trainer)
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
