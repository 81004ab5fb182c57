"""Tagged words: CoNLL column files and JSON lines, CoNLL-2003's and your own.

`read_tagged` reads a user's own token-classification data (NER-style tagging): CoNLL column
files and JSON lines become the same sentences {"id", "words", "tags"} with the user's own tag
set (B-GENE, S-LOC, NN: any tag string), and the tagging scheme is told apart (`tag_scheme`) so
that entities can be scored the same way whatever the file used (`to_iob2_entities`).
CoNLL-2003 (`read_conll2003`) is `read_tagged` configured: its tag set and its two column
layouts (`CONLL_2003`). Problems with the whole file (an unknown extension) are raised; a bad
row is raised or, with `skip_bad_rows`, counted in the `Report` and skipped: a bad line skips
its whole sentence.
"""

import dataclasses
import json
import re

from zoo import files
from zoo.data.readers.errors import DataError
from zoo.data.readers.text import file_format, json_field, json_line, numbered_lines

TAG_FORMATS = ("conll", "jsonl")
TAG_SCHEMES = ("IOB1", "IOB2", "IOBES", "none")
ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")
# The order of the tag ids: HF `conll2003`, which converted models' heads use.
CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")

_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".conll": "conll",
               ".txt": "conll", ".iob": "conll", ".bio": "conll", ".tsv": "conll"}
_ENTITY_TAG = re.compile(r"([BIES])-(.+)", re.DOTALL)
# Words and tags are written one per line, space-separated, to a CoNLL predictions file.
_WHITE_SPACE = re.compile(r"\s")


@dataclasses.dataclass(frozen=True)
class Columns:
    """A kind of CoNLL column file: the column counts it may have, and how the sentences and
    `report.layout` come out.

    Args:
        counts: column count -> its description ("2 columns (word tag)"): the counts a file may
            have, the file's first token line picking one; None: any count, the word first and
            the tag last (1 column, the words alone, where tags are not required).
        unknown_tag: what an unknown tag's error says was expected; None: the allowed tags.
        ids: each sentence has an "id", the line of its first token.
        scheme_first: `report.layout` names the tag scheme before the -DOCSTART- lines, not
            after them.
    """

    counts: dict | None = None
    unknown_tag: str | None = None
    ids: bool = True
    scheme_first: bool = False

    def describe(self, count):
        """The description of a column count, e.g. "2 columns (word tag)"."""
        if self.counts:
            return self.counts[count]
        return {1: "1 column (words only)", 2: "2 columns (word tag)"}.get(
            count, f"{count} columns (the word first, the tag last)")


# CoNLL-2003: the original four columns `token POS chunk NER`, or the two columns `word tag`
# that many public copies use.
CONLL_2003 = Columns(counts={2: "2 columns (word tag)", 4: "4 columns (token POS chunk NER)"},
                     unknown_tag="O, B-TYPE or I-TYPE with TYPE one of " + ", ".join(ENTITY_TYPES),
                     ids=False, scheme_first=True)


def to_iob2(tags):
    """IOB1 or IOB2 tags as IOB2: every entity starts with B-.

    In IOB1 (the original CoNLL-2003 files) an entity starts with I- unless it directly
    follows one of the same type; IOB2 (most re-distributions) always starts with B-. The
    conversion leaves IOB2 unchanged.

    Examples:
        >>> to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])
        ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC']
    """
    return [f"B-{tag[2:]}" if tag.startswith("I-") and (i == 0 or tags[i - 1][2:] != tag[2:])
            else tag for i, tag in enumerate(tags)]


def tags_format(path, format=None):  # `format`: the config field
    """The format of `path`, one of TAG_FORMATS: `format` if given, else by extension
    (case-insensitive; .json is read as JSON lines).

    Examples:
        >>> tags_format("genes/train.CONLL"), tags_format("dev.ndjson")
        ('conll', 'jsonl')
    """
    return file_format(path, format, TAG_FORMATS, _EXTENSIONS, "a .conll, .txt, .iob, .bio or "
                       ".tsv CoNLL file or a .jsonl file (or data.format)")


def read_conll2003(path, report, convert_to_iob2=False):
    """CoNLL-2003's sentences {"words", "tags"}: `read_tagged` on its tag set (`CONLL_TAGS`)
    and its column layouts (`CONLL_2003`); a bad line skips its whole sentence.

    Two layouts are read, detected from the file's first token line: the original four
    columns `token POS chunk NER`, and the two columns `word tag` that many public copies use;
    either space- or tab-separated, with or without -DOCSTART- lines, IOB1 or IOB2 tags.
    Every token line must then have the same number of columns. What was read is described
    in `report.layout` (and logged), e.g. "2 columns (word tag), tab-separated, IOB1 tags".
    """
    return read_tagged(path, report, format="conll", labels=CONLL_TAGS, columns=CONLL_2003,
                       convert_to_iob2=convert_to_iob2)


def read_tagged(path, report, format=None, tokens_column="tokens",
                tags_column="tags", labels=None, label_required=True, columns=Columns(),
                convert_to_iob2=False):
    """{"id", "words", "tags"} per sentence of a CoNLL or JSON-lines file.

    Args:
        path: a CoNLL file (one `word ... tag` line per token, the word first and the tag
            last, blank lines between sentences, -DOCSTART- lines skipped; the id is the line
            of the sentence's first token) or a JSON-lines file (one object per sentence with a
            list of tokens and a list of as many tags; the id is its line number).
        report: the `Report` that bad rows are raised from or counted in; `report.layout`
            is set to what was read, e.g. "2 columns (word tag), tab-separated, no -DOCSTART-
            lines, IOB2 tags".
        format: one of TAG_FORMATS; None: from the extension (`tags_format`).
        tokens_column, tags_column: the JSON fields of the tokens and the tags.
        labels: the allowed tags; other tags are bad rows.
        label_required: False: a file without tags (CoNLL lines of the word alone, JSON
            objects without `tags_column`) is read with tags None.
        columns: the kind of CoNLL column file (`Columns`; CoNLL-2003's: `CONLL_2003`).
        convert_to_iob2: IOB1 tags come out as IOB2 (`to_iob2`).
    """
    kind = tags_format(path, format)
    if files.isdir(path):
        raise DataError(path, None, "not a file", f"a {kind} file", "a directory")
    labels = None if labels is None else tuple(labels)
    read = _conll_sentences if kind == "conll" else _jsonl_sentences
    layout = []  # what the file was read as, in parts, for report.layout
    flags, tagged = set(), False  # of every sentence read, for the scheme in report.layout
    for sentence in read(path, report, tokens_column, tags_column, labels, label_required,
                         columns, layout):
        if sentence["tags"] is not None:
            flags |= _scheme_flags(sentence["tags"])
            tagged = True
            if convert_to_iob2:
                sentence["tags"] = to_iob2(sentence["tags"])
        yield sentence
    if layout and tagged:
        scheme = _scheme_name(flags)
        converted = " (converted to IOB2)" if convert_to_iob2 and scheme == "IOB1" else ""
        text = "tags of no entity scheme" if scheme == "none" else f"{scheme} tags{converted}"
        first = columns.scheme_first and kind == "conll"  # before the -DOCSTART- part
        layout.insert(len(layout) - 1 if first else len(layout), text)
    if layout:
        report.layout = ", ".join(layout)


def _conll_sentences(path, report, tokens_column, tags_column, labels, label_required,
                     columns, layout):
    """Sentences of CoNLL lines; the column count is fixed by the file's first token line.
    What was read goes into `layout`: columns, separator, -DOCSTART- lines."""
    words, tags, start, bad = [], [], None, False
    first, docstart = None, False  # (columns, separator) of the first token line
    smallest = 1 if not label_required else 2

    def sentence():
        found = {"words": words, "tags": tags if first[0] > 1 else None}
        return {"id": str(start), **found} if columns.ids else found

    for number, text in numbered_lines(path, report):
        if text is None:  # undecodable: counted by numbered_lines
            bad = True
            continue
        fields = text.split()
        if not fields or fields[0] == "-DOCSTART-":
            docstart |= bool(fields)
            if words and not bad:
                yield sentence()
            words, tags, start, bad = [], [], None, False
            continue
        start = number if start is None else start
        allowed = len(fields) in columns.counts if columns.counts else len(fields) >= smallest
        if first is None and allowed:
            first = (len(fields), "tab" if "\t" in text else "space")
        if first is None or len(fields) != first[0]:
            if first:
                expected = f"{columns.describe(first[0])}, as the file's first token line"
            elif columns.counts:
                expected = " or ".join(columns.counts.values())
            else:
                expected = "2 or more columns: the word first, the tag last"
            error = DataError(path, number, "wrong column count", expected, len(fields))
        elif first[0] > 1 and labels is not None and fields[-1] not in labels:
            error = DataError(path, number, "unknown tag",
                              columns.unknown_tag or "one of " + ", ".join(labels),
                              repr(fields[-1]))
        else:
            words.append(fields[0])
            tags.append(fields[-1])
            continue
        if not bad:  # one count per sentence
            report.bad_row(error)
        bad = True
    if words and not bad:
        yield sentence()
    if first:
        layout += [columns.describe(first[0]), f"{first[1]}-separated",
                   f"{'with' if docstart else 'no'} -DOCSTART- lines"]


def _jsonl_sentences(path, report, tokens_column, tags_column, labels, label_required,
                     columns, layout):
    """One JSON object per line: a list of tokens and a list of as many tags (`columns` is
    for column files)."""
    for number, text in numbered_lines(path, report):
        if text is None or not text.strip():  # undecodable (counted) or blank
            continue
        try:
            record = json_line(path, number, text)
            words = _strings(record, tokens_column, path, number)
            if not words:
                raise DataError(path, number, "empty sentence", f"at least one token in "
                                f"{tokens_column!r}", "an empty list")
            for word in words:
                if not word:
                    raise DataError(path, number, "empty token", f"non-empty tokens in "
                                    f"{tokens_column!r}", "an empty string")
                if _WHITE_SPACE.search(word):
                    raise DataError(path, number, "bad token", "a token without white space",
                                    repr(word))
            tags = None
            if label_required or record.get(tags_column) is not None:
                tags = _checked_tags(_strings(record, tags_column, path, number), len(words),
                                     labels, path, number)
        except DataError as error:
            report.bad_row(error)
            continue
        yield {"id": str(number), "words": words, "tags": tags}
    layout.append(f"JSON lines with fields {tokens_column!r} and {tags_column!r}")


def _strings(record, key, path, number):
    """record[key], checked to be a list of strings."""
    values = json_field(record, key, list, path, number)
    for value in values:
        if not isinstance(value, str):
            raise DataError(path, number, "wrong type", f"{key!r} to be a list of strings",
                            f"an item {json.dumps(value)[:80]}")
    return values


def _checked_tags(tags, length, labels, path, number):
    if len(tags) != length:
        raise DataError(path, number, "length mismatch", f"as many tags as tokens ({length})",
                        f"{len(tags)} tags")
    for tag in tags:
        if not tag or _WHITE_SPACE.search(tag):
            raise DataError(path, number, "bad tag", "a non-empty tag without white space",
                            repr(tag))
        if labels is not None and tag not in labels:
            raise DataError(path, number, "unknown tag", "one of " + ", ".join(labels),
                            repr(tag))
    return tags


# === Tagging schemes ===


def _scheme_flags(tags):
    """What one tag list shows: "none" (a tag that is neither O nor X-TYPE), "IOBES" (S- or
    E-), "IOB1" (an I- entity start); an empty set for IOB2 (or all O)."""
    flags = set()
    for i, tag in enumerate(tags):
        if tag == "O":
            continue
        match = _ENTITY_TAG.fullmatch(tag)
        if match is None:
            return {"none"}
        prefix, kind = match.groups()
        if prefix in "SE":
            flags.add("IOBES")
        # An I- that does not continue a B- or I- of its own type starts an entity: IOB1.
        elif prefix == "I" and (i == 0 or tags[i - 1] not in (f"B-{kind}", f"I-{kind}")):
            flags.add("IOB1")
    return flags


def _scheme_name(flags):
    for name in ("none", "IOBES", "IOB1"):  # the strongest evidence first
        if name in flags:
            return name
    return "IOB2"


def tag_scheme(tag_sequences):
    """The tagging scheme of an iterable of tag lists (None, a sentence without tags, is passed
    over): "IOB2" (every entity starts with B-; also all O), "IOB1" (an entity starting with I-,
    as in CoNLL-2003's original files), "IOBES" (S- or E- prefixes) or "none" (a tag that is
    neither O nor B-, I-, E- or S-TYPE, e.g. part-of-speech tags).

    Examples:
        >>> tag_scheme([["B-GENE", "I-GENE", "O"]]), tag_scheme([["I-PER", "O"]])
        ('IOB2', 'IOB1')
    """
    flags = set()
    for tags in tag_sequences:
        if tags is not None:
            flags |= _scheme_flags(list(tags))
        if "none" in flags:
            break
    return _scheme_name(flags)


def to_iob2_entities(tags, scheme):
    """`tags` in `scheme` (one of TAG_SCHEMES) rewritten as IOB2, for entity scoring: IOB1
    through `to_iob2`; IOBES with S-X as B-X and E-X as I-X, an S-X or E-X closing its
    entity (so an I-X or E-X after it starts a new one, as conlleval and seqeval read such
    ill-formed predictions); IOB2 unchanged.

    Examples:
        >>> to_iob2_entities(["S-LOC", "O", "B-PER", "E-PER", "E-PER"], "IOBES")
        ['B-LOC', 'O', 'B-PER', 'I-PER', 'B-PER']
    """
    if scheme == "IOB2":
        return list(tags)
    if scheme == "IOB1":
        return to_iob2(list(tags))
    if scheme == "IOBES":
        out, open_kind = [], None  # the type of the entity still open, if any
        for tag in tags:
            match = _ENTITY_TAG.fullmatch(tag)
            if not match:
                out.append(tag)
                open_kind = None
                continue
            prefix, kind = match.groups()
            inside = prefix in "IE" and open_kind == kind
            out.append(("I-" if inside else "B-") + kind)
            open_kind = kind if prefix in "BI" else None
        return out
    if scheme == "none":
        raise ValueError("tags of scheme 'none' (e.g. part-of-speech tags) mark no entities")
    raise ValueError(f"unknown tagging scheme {scheme!r}: expected one of "
                     + ", ".join(TAG_SCHEMES))
