"""Readers of every benchmark's official file format, one module per format family.

`glue` (tab-separated files, SNLI's JSON lines), `span_qa` (SQuAD's JSON, the benchmark's
and your own), `multiple_choice` (SWAG and Story Cloze CSV, RACE), `tagging` (CoNLL columns
and JSON lines: CoNLL-2003's and your own tagged words) and `images` read the files on the
shared `text` helpers and raise or count the `errors`; `tables` reads your own texts and labels
(CSV and TSV through `csv_records`, JSON lines, Parquet, folders of class folders, rows in
memory). Each reader is function(path, report, **options) yielding plain dicts; which one
reads a task, with which options, is the task's record in `zoo.data.benchmarks`, and
`zoo.data.read_examples` is the one call that reads a task's file by name.
"""

from zoo.data.readers.errors import DataError, Report
from zoo.data.readers.image_classification import IMAGE_EXTENSIONS, image_classes
from zoo.data.readers.tagging import CONLL_TAGS, ENTITY_TYPES, to_iob2

__all__ = ["CONLL_TAGS", "ENTITY_TYPES", "IMAGE_EXTENSIONS", "DataError", "Report",
           "image_classes", "to_iob2"]
