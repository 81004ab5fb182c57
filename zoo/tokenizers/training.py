"""Train a WordPiece or BPE vocabulary on plain-text files (`zoo data vocab`)."""

import json
import os
import tempfile

from zoo import files
from zoo.progress import bar as progress_bar
from zoo.storage import storage_operation
from zoo.tokenizers.loading import CONFIG_FILE, from_directory

WORDPIECE_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
BPE_UNK_TOKEN = "<unk>"
_BATCH_LINES = 1024


def train_vocabulary(corpus_files, size, kind, out, lowercase=True):
    """Learn a vocabulary from text files into a directory that zoo and transformers both load.

    Both kinds are learnt by the Hugging Face `tokenizers` trainers (WordPieceTrainer,
    BpeTrainer) on BERT's normalization and word splitting. A vocabulary has exactly `size`
    tokens (special tokens included) unless the corpus runs out first: when every word of the
    corpus is a token already there is nothing left to learn, and the vocabulary is smaller.
    The trainers start from every character of the corpus, so a `size` below that alphabet
    (with its "##" or "</w>" forms and the special tokens) is an error naming the least size.

    wordpiece: writes vocab.txt with `[PAD] [UNK] [CLS] [SEP] [MASK]` as ids 0-4.
    bpe: GPT-1 style BPE (`</w>` word-final symbols, `<unk>` = id 0); writes vocab.json +
    merges.txt. With `lowercase=False` the result is cased, which transformers'
    OpenAIGPTTokenizer cannot express (it always lower-cases); our GPTTokenizer reads the config.

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
    """Learn the vocabulary with the Hugging Face `tokenizers` trainer of `kind` into `staging`;
    returns tokenizer_config.json's contents."""
    # lazy: `tokenizers` comes with keras-hub (a dependency of ours) and is needed only here
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, trainers
    from tokenizers.models import BPE, WordPiece

    if kind == "wordpiece":
        special = list(WORDPIECE_SPECIAL_TOKENS)
        tokenizer = Tokenizer(WordPiece(unk_token=special[1]))
        trainer = trainers.WordPieceTrainer(vocab_size=size, special_tokens=special,
                                            show_progress=False)
    else:  # the pipeline of transformers' OpenAIGPTTokenizer, which our GPTTokenizer matches
        special = [BPE_UNK_TOKEN]
        tokenizer = Tokenizer(BPE(unk_token=BPE_UNK_TOKEN, end_of_word_suffix="</w>"))
        trainer = trainers.BpeTrainer(vocab_size=size, special_tokens=special,
                                      end_of_word_suffix="</w>", show_progress=False)
    # BERT's normalization and word splitting, as our BasicTokenizer (and BertTokenizer) do.
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(_batches(_lines(corpus_files, "counting words")), trainer)
    vocabulary = tokenizer.get_vocab()
    if len(vocabulary) == len(special):
        raise ValueError(f"no words in {corpus_files}")
    if len(vocabulary) > size:
        # The trainer starts from every character of the corpus (and its "##" or "</w>" form)
        # and cannot go below that: fewer tokens would leave words it has seen unknown.
        raise ValueError(
            f"size {size} is too small for the corpus: its characters alone make "
            f"{len(vocabulary)} {kind} tokens (with the special tokens); ask for at least "
            f"{len(vocabulary)}")
    if kind == "bpe":
        tokenizer.model.save(staging)
        return {"tokenizer_class": "OpenAIGPTTokenizer", "do_lower_case": lowercase,
                "unk_token": BPE_UNK_TOKEN}
    with files.open(os.path.join(staging, "vocab.txt"), "w", encoding="utf-8") as file:
        file.writelines(token + "\n" for token in sorted(vocabulary, key=vocabulary.get))
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": lowercase,
            "strip_accents": None, "tokenize_chinese_chars": True,
            **dict(zip(("pad_token", "unk_token", "cls_token", "sep_token", "mask_token"),
                       WORDPIECE_SPECIAL_TOKENS))}


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
