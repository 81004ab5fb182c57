"""A corpus cut into chunks: byte ranges that hold whole documents, the unit of parallel work.

The corpus format is the original `create_pretraining_data.py`'s: UTF-8 text, one sentence per
line, a blank line between documents, and the end of a file ends a document. `plan_chunks`
reads the files once, line by line (checking the UTF-8 and counting documents, without
tokenizing), and cuts them after a blank line once a chunk holds `chunk_bytes` of text and at
least two documents (NotNext segments need another document). A chunk may span files. Each
chunk is then read on its own (`iter_chunk_documents`, by byte offset), so workers share
nothing but the chunk list, and the documents of all chunks in order are exactly the documents
of the corpus read in one pass. Memory holds one line at a time while planning.
"""

import collections

import tensorflow as tf

from zoo import files
from zoo.storage import storage_operation

# Bytes of text per chunk: enough chunks that a few workers share the corpus evenly (80 MB is
# 10 chunks), small enough that a chunk's documents, as Python lists of ids (many times the
# size of their text), stay well within a worker's memory (`zoo benchmark data` reports the
# peak).
CHUNK_BYTES = 8 * 2**20

# One file's byte range [start, end) whose first line is line `first_line` of the file.
Segment = collections.namedtuple("Segment", "path start end first_line")
# `index`: position in the corpus; `first_document`: documents in the chunks before it;
# `documents`: documents in it (runs of non-blank lines, some of which may tokenize to nothing).
Chunk = collections.namedtuple("Chunk", "index segments first_document documents")


def _decode(raw, path, number):
    try:
        return raw.decode("utf-8").strip()
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}:{number}: expected UTF-8 text, found byte "
                         f"0x{raw[error.start]:02x} at column {error.start + 1}") from None


def _lines(segment):
    """(line number, stripped text) of each line of a segment."""
    with storage_operation("reading the corpus", segment.path), \
            files.open(segment.path, "rb") as f:
        if segment.start:
            f.seek(segment.start)
        position = segment.start
        for number, raw in enumerate(f, segment.first_line):
            if segment.end is not None and position >= segment.end:
                return
            position += len(raw)
            yield number, _decode(raw, segment.path, number)


def plan_chunks(corpus_files, chunk_bytes=CHUNK_BYTES, min_documents=2):
    """The corpus as a list of `Chunk`s of about `chunk_bytes` each, in corpus order.

    A chunk ends after a blank line (or at the end of a file) once it holds `chunk_bytes` and
    `min_documents` documents; a last chunk of fewer joins the one before it.

    Raises:
        ValueError: a line that is not UTF-8 (naming file:line).
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes={chunk_bytes}: expected >= 1")
    chunks = []
    segments, documents, size = [], 0, 0  # of the chunk being planned; size: closed segments
    total = 0

    def close():
        nonlocal segments, documents, size, total
        chunks.append(Chunk(len(chunks), tuple(segments), total, documents))
        total += documents
        segments, documents, size = [], 0, 0

    for path in corpus_files:
        start = position = 0
        first_line, in_document = 1, False
        with files.open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                position += len(raw)
                if _decode(raw, path, number):
                    in_document = True
                    continue
                if in_document:
                    documents += 1
                    in_document = False
                if documents >= min_documents and size + position - start >= chunk_bytes:
                    segments.append(Segment(path, start, position, first_line))
                    close()
                    start, first_line = position, number + 1
        documents += in_document
        if position > start:
            segments.append(Segment(path, start, position, first_line))
            size += position - start
        if documents >= min_documents and size >= chunk_bytes:
            close()
    if segments or documents:
        if documents < min_documents and chunks:  # too few on their own: join the last chunk
            last = chunks.pop()
            chunks.append(last._replace(segments=last.segments + tuple(segments),
                                        documents=last.documents + documents))
            total += documents
        else:
            close()
    return chunks


def iter_chunk_documents(segments, tokenizer, batch_size=4096, keep_empty=False, progress=None):
    """Tokenized documents of `segments` (`Segment`s, read in order), one at a time: each a
    list of sentences (ids).

    Sentences that tokenize to nothing are dropped, as in the original; so are documents left
    empty, unless `keep_empty` (then they are yielded as `[]`, one per run of non-blank lines,
    which `plan_chunks` counts). The end of a segment ends a document. Memory holds one batch
    of lines and the documents they complete.

    Args:
        segments: `Segment`s; a whole file is `Segment(path, 0, None, 1)`.
        tokenizer: callable mapping a batch of strings to a `tf.RaggedTensor` of ids.
        batch_size: lines tokenized per TF call.
        progress: optional callable `(segment) -> wrapper` of each segment's lines (a bar).
    """
    lines, ends = [], []  # ends[k]: whether a document ends after lines[k]
    document = []
    open_document = False  # a non-blank line since the last end of a document

    def flush():
        nonlocal document
        done = []
        for ids, end in zip(tokenizer(tf.constant(lines)).to_list() if lines else [], ends):
            if ids:
                document.append(ids)
            if end:
                if document or keep_empty:
                    done.append(document)
                document = []
        lines.clear()
        ends.clear()
        return done

    def end_document():
        nonlocal document, open_document
        if not open_document:
            return []
        open_document = False
        if lines:
            ends[-1] = True
            return []
        done = [document] if document or keep_empty else []  # its lines are flushed
        document = []
        return done

    for segment in segments:
        numbered = _lines(segment)
        for _, line in (progress(segment, numbered) if progress else numbered):
            if not line:
                yield from end_document()
                continue
            lines.append(line)
            ends.append(False)
            open_document = True
            if len(lines) == batch_size:
                yield from flush()
        yield from end_document()
    yield from flush()
