"""`zoo benchmark data`: `zoo data pretrain` tokens/s and peak memory with 1 and 2 Beam workers,
against the tokenize-only `tokenizers` BertWordPieceTokenizer on one core.

Each run is the command a user types, in its own process (`zoo data pretrain ... --runner
DirectRunner --direct_num_workers N`), timed end to end; its peak memory is the largest sum of
the resident sets of the process and its children (the Beam workers), sampled from /proc. The
start of a run (interpreters, TensorFlow and the tokenizer in every worker) costs seconds
whatever the corpus, so the rate that matters at corpus scale is the marginal one: the extra
tokens of the largest corpus over the next one, divided by the extra time.
"""

import os
import random
import subprocess
import sys
import tempfile
import threading
import time

from zoo.tokenizers.training import train_vocabulary
from zoo_benchmarks.common import corpus_lines, target_cell


def _documents(seed):
    """Documents (lists of sentences) of English text: the paragraphs of the reference text
    CPython ships, one sentence per line."""
    import re

    documents, document = [], []
    for line in corpus_lines(None) + [""]:
        line = line.strip()
        if not line:
            if len(document) > 1:
                documents.append(document)
            document = []
            continue
        document += [s for s in re.split(r"(?<=[.!?])\s+", line) if s]
    random.Random(seed).shuffle(documents)
    return documents


def write_corpus(path, megabytes, seed=0):
    """A corpus of about `megabytes` MB in `zoo data pretrain`'s format, from shuffled copies of
    the reference text's paragraphs."""
    target, size, copy = megabytes * 2**20, 0, 0
    with open(path, "w", encoding="utf-8") as file:
        while size < target:
            for document in _documents(seed + copy):
                text = "\n".join(document) + "\n\n"
                file.write(text)
                size += len(text.encode())
                if size >= target:
                    break
            copy += 1
    return path


def _tree_rss(pid):
    """Resident bytes of `pid` and its descendants (Linux /proc)."""
    children, rss = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):  # a process that just ended
            continue
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        total += rss.get(current, 0)
        stack += children.get(current, [])
    return total


def _timed_run(command, env):
    """(seconds, peak resident bytes of the process tree) of one command."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    peak, done = 0, threading.Event()

    def sample():
        nonlocal peak
        while not done.wait(0.1):
            peak = max(peak, _tree_rss(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed:\n{output[-3000:]}")
    return seconds, peak


_REFERENCE = """
import sys, time
from tokenizers import BertWordPieceTokenizer
tokenizer = BertWordPieceTokenizer(sys.argv[1], lowercase=True)
lines = [line.strip() for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
start, tokens = time.perf_counter(), 0
for i in range(0, len(lines), 4096):
    tokens += sum(len(e.ids) for e in tokenizer.encode_batch(lines[i:i + 4096],
                                                             add_special_tokens=False))
print(tokens, time.perf_counter() - start)
"""


def section_data(args, progress=print):
    """`zoo data pretrain` with 1 and 2 workers on corpora of --corpus-mb sizes."""
    tiny = getattr(args, "tiny", False)
    sizes = sorted(getattr(args, "corpus_mb", None) or ([1] if tiny else [32, 128]))
    workers = sorted(getattr(args, "workers", None) or [1, 2])
    lengths = ["128", "512"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    zoo = [sys.executable, "-m", "zoo_cli.main"]
    rows, rates, tokens = [], {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        corpora = {}
        for size in sizes:
            progress(f"writing a {size:g} MB corpus")
            corpora[size] = write_corpus(os.path.join(tmp, f"corpus{size}.txt"), size)
        vocab = os.path.join(tmp, "vocab")  # trained on 1 MB of the same text: quick
        train_vocabulary([write_corpus(os.path.join(tmp, "vocab.txt"), 1)], size=1000,
                         kind="wordpiece", out=vocab)
        # Tokens of each corpus, and the reference's rate, from `tokenizers` on one core.
        reference = {}
        for size in sizes:
            out = subprocess.run(
                [sys.executable, "-c", _REFERENCE, os.path.join(vocab, "vocab.txt"),
                 corpora[size]], env={**env, "RAYON_NUM_THREADS": "1"}, check=True,
                capture_output=True, text=True).stdout.split()
            tokens[size], reference[size] = int(out[0]), int(out[0]) / float(out[1])
        reference_rate = max(reference.values())
        for n in workers:
            for size in sizes:
                progress(f"zoo data pretrain: {size:g} MB, {n} worker{'s' * (n > 1)}")
                command = [*zoo, "data", "pretrain", "--corpus", corpora[size], "--vocab",
                           vocab, "--out", os.path.join(tmp, f"out{n}_{size}"),
                           "--max-sequence-length", *lengths, "--runner", "DirectRunner",
                           f"--direct_num_workers={n}"]
                seconds, peak = _timed_run(command, env)
                rates[n, size] = seconds
                rows.append(f"| {size:g} | {n} | {tokens[size]:,} | {seconds:.1f} "
                            f"| {tokens[size] / seconds:,.0f} | {peak / 2**30:.2f} |")
    marginal = {}
    if len(sizes) > 1:
        small, large = sizes[-2], sizes[-1]
        for n in workers:
            marginal[n] = (tokens[large] - tokens[small]) / (rates[n, large] - rates[n, small])
    lines = [
        "## Pretraining data: `zoo data pretrain` tokens/s and memory", "",
        f"Command: `zoo benchmark data --corpus-mb {' '.join(f'{s:g}' for s in sizes)} --workers "
        f"{' '.join(map(str, workers))}`. Corpora: shuffled copies of the paragraphs of the "
        "English reference text CPython ships (`pydoc_data.topics`), one sentence per line; "
        "a 1000-token WordPiece vocabulary trained on them. Each run is `zoo data pretrain "
        f"--max-sequence-length {' '.join(lengths)} --runner DirectRunner "
        "--direct_num_workers N` in its own process (tokenize, pair for NSP at both lengths, "
        "serialize, write the shards); peak memory is the largest sum of the resident memory "
        "of the command and its Beam workers. The reference is tokenize-only: the "
        "`tokenizers` library's `BertWordPieceTokenizer.encode_batch` on one core "
        f"(`RAYON_NUM_THREADS=1`), same vocabulary: {reference_rate:,.0f} tokens/s.", "",
        "| corpus MB | workers | tokens | seconds | tokens/s (end to end) | peak GB |",
        "| --- | --- | --- | --- | --- | --- |", *rows, ""]
    summary = []
    if marginal:
        lines += [f"Marginal rate, {sizes[-2]:g} MB -> {sizes[-1]:g} MB (what each further MB "
                  "costs; a run's start does not count): "
                  + ", ".join(f"{n} worker{'s' * (n > 1)} {rate:,.0f} tokens/s"
                              for n, rate in marginal.items()) + ".", ""]
        if 1 in marginal and 2 in marginal:
            summary.append(("data pretrain tokens/s, 2 workers vs 1 (marginal; #19)",
                            target_cell(marginal[2] / marginal[1], 1.7)))
            summary.append(("data pretrain tokens/s per core (2 workers; #19) vs tokenizers' "
                            "tokenize-only", target_cell(marginal[2] / 2 / reference_rate, 0.5)))
    return lines, summary  # one corpus size (--tiny): no marginal rate, no ratio
