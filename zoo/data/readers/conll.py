"""CoNLL-2003 named entities: the tag set, IOB1 to IOB2, and the column files."""

from zoo.data.readers.errors import DataError
from zoo.data.readers.text import numbered_lines

ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")
# The order of the tag ids: HF `conll2003`, which converted models' heads use.
CONLL_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")


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


_CONLL_COLUMNS = {2: "2 columns (word tag)", 4: "4 columns (token POS chunk NER)"}


def read_conll2003(path, report, convert_to_iob2=False):
    """Sentences of CoNLL lines; a bad line skips its whole sentence.

    Two layouts are read, detected from the file's first token line: the original four
    columns `token POS chunk NER`, and the two columns `word tag` that many public copies use;
    either space- or tab-separated, with or without -DOCSTART- lines, IOB1 or IOB2 tags.
    Every token line must then have the same number of columns. What was read is described
    in `report.layout` (and logged), e.g. "2 columns (word tag), tab-separated, IOB1 tags".
    """
    words, tags, bad, layout = [], [], False, None
    scheme = {"iob1": False, "docstart": False}

    def sentence():
        scheme["iob1"] |= any(t.startswith("I-") and (i == 0 or tags[i - 1][2:] != t[2:])
                              for i, t in enumerate(tags))
        return {"words": words, "tags": to_iob2(tags) if convert_to_iob2 else tags}

    for number, text in numbered_lines(path, report):
        if text is None:
            bad = True
            continue
        fields = text.split()
        if not fields or fields[0] == "-DOCSTART-":
            scheme["docstart"] |= bool(fields)
            if words and not bad:
                yield sentence()
            words, tags, bad = [], [], False
            continue
        if layout is None and len(fields) in (2, 4):
            layout = (len(fields), "tab" if "\t" in text else "space")
        expected = (f"{_CONLL_COLUMNS[layout[0]]}, as the file's first token line" if layout
                    else f"{_CONLL_COLUMNS[2]} or {_CONLL_COLUMNS[4]}")
        if layout is None or len(fields) != layout[0]:
            error = DataError(path, number, "wrong column count", expected, len(fields))
        elif fields[-1] not in CONLL_TAGS:
            error = DataError(path, number, "unknown tag", "O, B-TYPE or I-TYPE with TYPE one of "
                              + ", ".join(ENTITY_TYPES), repr(fields[-1]))
        else:
            words.append(fields[0])
            tags.append(fields[-1])
            continue
        if not bad:  # one count per sentence
            report.bad_row(error)
        bad = True
    if words and not bad:
        yield sentence()
    if layout:
        iob1 = scheme["iob1"]
        report.layout = ", ".join([
            _CONLL_COLUMNS[layout[0]], f"{layout[1]}-separated",
            ("IOB1 tags" + (" (converted to IOB2)" if convert_to_iob2 else "")) if iob1
            else "IOB2 tags", f"{'with' if scheme['docstart'] else 'no'} -DOCSTART- lines"])
