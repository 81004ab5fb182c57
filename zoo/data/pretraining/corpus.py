"""Your own text as a pretraining corpus (`zoo data corpus`): documents from folders of .txt
files, CSV, TSV, JSONL or Parquet files, written one sentence a line with a blank line between
documents, the input `zoo data vocab` and `zoo data pretrain` read (BERT's next-sentence pairs
are drawn from a document's sentences, so a document left on one line gives none).

Sentences are split by pySBD (Sadvilkar & Neumann 2020, rule-based, the "Golden Rules" of
sentence boundaries): it keeps "Mr. Smith", "p.m.", "..." and a closing quote with their
sentence, where tensorflow_text's `StateBasedSentenceBreaker` splits them (measured on IMDB
reviews: '"It rocks.' / '" he said.').
"""

import collections
import html
import multiprocessing
import os
import re

from zoo import files
from zoo.data.readers.errors import Report
from zoo.data.readers.tables import read_table
from zoo.progress import bar as progress_bar

_TAG = re.compile(r"<[^>]*>")
_LINE_BREAK = re.compile(r"<\s*br\s*/?\s*>|<\s*/?\s*p\s*>", re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def _new_segmenter():
    # lazy: pySBD compiles its rules on import; only this command needs it
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def paragraphs(text, strip_html=False):
    """The non-empty lines of `text` (with `strip_html`: after <br> and <p> became line breaks,
    other tags were dropped and entities unescaped): no sentence crosses one."""
    if strip_html:
        text = html.unescape(_TAG.sub(" ", _LINE_BREAK.sub("\n", text)))
    return [line for line in text.splitlines() if line.strip()]


def _clean(segments):
    return [s for s in (_SPACE.sub(" ", segment).strip() for segment in segments) if s]


def split_sentences(text, strip_html=False):
    """The sentences of `text`, each on one line (white space collapsed), empty ones dropped.
    A line break in `text` (or, with `strip_html`, a <br> or <p>) always ends a sentence.

    Examples:
        >>> split_sentences('Mr. Smith saw it at 9 p.m. on Friday. "It rocks!" he said.'
        ...                 '<br />Go see it.', strip_html=True)
        ['Mr. Smith saw it at 9 p.m. on Friday.', '"It rocks!" he said.', 'Go see it.']
    """
    segment = _new_segmenter().segment
    return [s for paragraph in paragraphs(text, strip_html) for s in _clean(segment(paragraph))]


def write_corpus(sources, out, text_column="text", strip_html=False, workers=1,
                 skip_bad_rows=False, progress=None):
    """Write the documents of `sources` to `out`, one sentence a line, a blank line after each
    document; committed atomically (the old `out` stays until the new one is whole).

    Args:
        sources: paths, each a .csv, .tsv, .jsonl or .parquet file (one document a row, its
            `text_column`) or a folder of class folders of .txt files (one document a file;
            every class folder is read, e.g. IMDB's train/neg, train/pos and train/unsup).
        out: the corpus file to write.
        strip_html: turn <br> and <p> into line breaks, drop other tags, unescape entities.
        workers: processes splitting sentences (pySBD is pure Python: ~160 reviews/s a core).
        skip_bad_rows: skip (and count) unreadable rows instead of stopping at the first.
        progress: the file the progress bar goes to (default stderr; `zoo.progress`: a line
            every few seconds when it is not a terminal); False: none.

    Returns:
        {"documents", "sentences", "empty" (documents with no sentence, left out), "skipped"
        (rows the readers skipped), "reports" (their summaries)}.
    """
    reports = [Report(path, skip_bad_rows=skip_bad_rows) for path in sources]
    counts_per_document = collections.deque()  # paragraphs of each document read so far

    def all_paragraphs():  # in reading order; the documents' sizes go to counts_per_document
        for path, report in zip(sources, reports):
            for example in read_table(path, report, text_column=text_column,
                                      label_required=False):
                report.examples += 1
                found = paragraphs(example["sentence1"], strip_html)
                counts_per_document.append(len(found))
                yield from found

    counts = {"documents": 0, "sentences": 0, "empty": 0}
    segment = _new_segmenter().segment
    # The workers unpickle a pySBD segmenter's bound method: they import pySBD, not zoo, so
    # not TensorFlow (no start-up lines on the terminal; workers that imported zoo held
    # ~920 MB each).
    pool = multiprocessing.get_context("spawn").Pool(workers) if workers > 1 else None
    try:
        segmented = (pool.imap(segment, all_paragraphs(), chunksize=256) if pool
                     else map(segment, all_paragraphs()))
        with files.atomic_path(out) as tmp, files.open(tmp, "w", encoding="utf-8") as file, \
                progress_bar(desc="corpus", unit=" documents", disable=progress is False,
                             file=None if progress is False else progress) as bar:

            def document(sentences):
                bar.update(1)
                if not sentences:
                    counts["empty"] += 1
                    return
                file.write("\n".join(sentences) + "\n\n")
                counts["documents"] += 1
                counts["sentences"] += len(sentences)

            sentences, left = [], None
            for segments in segmented:
                while not left:  # the next document with a paragraph; empty ones on the way
                    if left == 0:
                        document(sentences)
                        sentences = []
                    left = counts_per_document.popleft()
                sentences += _clean(segments)
                left -= 1
            if left == 0:
                document(sentences)
            for _ in counts_per_document:  # documents without a paragraph after the last one
                document([])
    finally:
        if pool:
            pool.terminate()
    counts["skipped"] = sum(report.skipped for report in reports)
    counts["reports"] = [str(report) for report in reports]
    return counts


def default_workers():
    """One process per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
