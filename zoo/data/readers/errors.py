"""What readers say about bad input: `DataError` (file:line, expected, found), `Report`."""

import os


class DataError(ValueError):
    """A malformed input, reported as `path:line: reason: expected ..., found ...`.

    Args:
        path: the file (or directory) at fault.
        where: 1-based line number; a location inside a JSON document such as
            "data[0].paragraphs[2].qas[1]"; or None for the whole file.
        reason: a short category, used to count skipped rows ("wrong column count").
        expected: what the format requires there.
        found: what the file has instead.
    """

    def __init__(self, path, where, reason, expected, found):
        self.path, self.where, self.reason = os.fspath(path), where, reason
        self.expected, self.found = expected, found
        if where is None:
            place = self.path
        elif isinstance(where, int):
            place = f"{self.path}:{where}"
        else:
            place = f"{self.path}: {where}"
        super().__init__(f"{place}: {reason}: expected {expected}, found {found}")

    def __reduce__(self):  # picklable across processes despite the multi-argument constructor
        return DataError, (self.path, self.where, self.reason, self.expected, self.found)


class Report:
    """What one pass of a reader skipped, by reason; `str(report)` is the summary to print.

    Bad rows are skipped only with `skip_bad_rows`; rows the format itself marks as unusable
    (SNLI's "-" gold label: the annotators did not agree) are always skipped and counted.
    """

    def __init__(self, path, skip_bad_rows=False):
        self.path = os.fspath(path)
        self.skip_bad_rows = skip_bad_rows
        self.examples = 0
        self.bad_rows = {}  # reason -> [(path, where)] in reading order
        self.rule_skips = {}  # reason -> [(path, where)]
        self.first_errors = {}  # reason -> the first DataError, for its full message
        self.layout = None  # what the reader detected, for formats with variants (CoNLL)

    def bad_row(self, error):
        """Raise `error`, or count it when skipping bad rows."""
        if not self.skip_bad_rows:
            raise error
        self.bad_rows.setdefault(error.reason, []).append((error.path, error.where))
        self.first_errors.setdefault(error.reason, error)

    def skip(self, path, where, reason):
        """Count a row that the format says to leave out."""
        self.rule_skips.setdefault(reason, []).append((os.fspath(path), where))

    @property
    def skipped(self):
        return sum(map(len, self.bad_rows.values())) + sum(map(len, self.rule_skips.values()))

    def __str__(self):
        name = os.path.basename(os.path.normpath(self.path))
        parts = []
        for noun, groups in (("bad row", self.bad_rows), ("row by rule", self.rule_skips)):
            total = sum(map(len, groups.values()))
            if total:
                noun = noun if total == 1 else noun.replace("row", "rows")
                reasons = ", ".join(f"{len(locations)} {reason} ({self._locations(locations)})"
                                    for reason, locations in groups.items())
                parts.append(f"skipped {total} {noun} in {name}: {reasons}")
        return "; ".join(parts) or f"read {self.examples} examples from {name}, skipped none"

    def _locations(self, locations, limit=10):
        if all(path == self.path and isinstance(where, int) for path, where in locations):
            lines = ", ".join(str(where) for _, where in locations[:limit])
            text = ("line " if len(locations) == 1 else "lines ") + lines
        else:
            text = ", ".join(self._place(path, where) for path, where in locations[:limit])
        if len(locations) > limit:
            text += f", ... {len(locations) - limit} more"
        return text

    def _place(self, path, where):
        place = os.path.relpath(path, self.path) if path != self.path else ""
        if where is None:
            return place or os.path.basename(path)
        return f"{place}:{where}" if place else str(where)
