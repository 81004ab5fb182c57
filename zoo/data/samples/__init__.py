"""Small synthetic datasets in every official format, learnable by rule: `zoo data samples`.

Each dataset is written byte-for-byte in the layout of the real files (same names, headers,
columns, quoting, byte-order mark), so a config that points at the samples works unchanged
when pointed at the real benchmark. The labels follow simple rules a small model picks up in
a few epochs, so demos and tests train well above chance without a download:

    CoLA         unacceptable sentences have scrambled word order or broken agreement
    SST-2        the label is the polarity of the adjectives (charming / tedious ...)
    MRPC, QQP    paraphrases reorder or reword the same facts; others change one of them
    STS-B        the score falls with the number of changed content words
    MNLI, SNLI,  entailment: the hypothesis only repeats premise words; contradiction: it
    RTE, WNLI,   negates them (not, never, nobody); neutral: it adds new words
    SciTail      (RTE, WNLI, SciTail collapse neutral and contradiction into one label)
    QNLI         the sentence answers the question if it has the same person and a place
    SQuAD        the answer follows a cue ("was born in", "works for"); 2.0 adds questions
                 about people the paragraph never mentions
    SWAG         the right ending uses the object the context picked up
    RACE         the right option is the one the article states
    Story Cloze  the right ending has the mood of the story
    CoNLL-2003   names, places, companies and nationalities come from a gazetteer
    images       each class is one shape in its own colour family (circle, square, triangle)
    corpus       one document per person or film: one sentence per line, blank line between

Examples:
    >>> import tempfile
    >>> from zoo.data import read_examples
    >>> from zoo.data.samples import LAYOUT, write_samples
    >>> out = tempfile.mkdtemp() + "/samples"
    >>> _ = write_samples(out, seed=0)
    >>> next(iter(read_examples("glue/sst2", f"{out}/{LAYOUT['glue/sst2']['train']}")))
    {'id': '2', 'sentence1': 'a delightful , charming script ', 'label': '1'}

One module per task family, named by it (`classification`: GLUE, SNLI, SciTail; `span_qa`;
`multiple_choice`: RACE, SWAG, Story Cloze; `tagging`; `image_classification`; `pretraining`:
the corpus), written about the world in `words`; `common` holds the layout and file writers.
"""

import copy
import json
import os
import random

from zoo import files
from zoo.data.samples.classification import (
    write_cola,
    write_mnli,
    write_mrpc,
    write_qnli,
    write_qqp,
    write_rte,
    write_scitail,
    write_snli,
    write_sst2,
    write_stsb,
    write_wnli,
)
from zoo.data.samples.common import CORPUS, LAYOUT, MANIFEST, TRAIN, training_rows
from zoo.data.samples.image_classification import write_images
from zoo.data.samples.multiple_choice import KINDS, write_race, write_story_cloze, write_swag
from zoo.data.samples.pretraining import write_corpus
from zoo.data.samples.span_qa import write_squad
from zoo.data.samples.tagging import write_conll2003
from zoo.data.samples.words import FIRST, LAST


def write_samples(out, seed=0, train_rows=TRAIN):
    """Write every sample dataset, the pretraining corpus and a manifest under `out`.

    The tree is built in a temporary directory next to `out` and renamed into place, so `out`
    is never half-written. An existing `out` is replaced only if it is an empty directory or
    holds a previous samples tree (it has a manifest.json); anything else is left alone and is
    an error.

    Args:
        out: the output directory.
        seed: the same seed writes the same bytes.
        train_rows: training rows of the sentence(-pair) and multiple-choice datasets (GLUE,
            SNLI, SciTail, SWAG, Story Cloze); more rows make comparison tasks such as MRPC
            learnable from random initialization (`zoo demo` uses 4000).

    Returns:
        The manifest: {"seed", "tasks": {task: {split: path under out}}, "corpus"}.

    Examples:
        >>> import tempfile
        >>> manifest = write_samples(tempfile.mkdtemp() + "/samples")
        >>> manifest["tasks"]["glue/mnli"]["dev_matched"]
        'glue/MNLI/dev_matched.tsv'
    """
    out = files.absolute(out)
    if files.exists(out) and not (files.isdir(out) and (
            not files.listdir(out) or files.isfile(os.path.join(out, MANIFEST)))):
        raise FileExistsError(f"{out} exists and is not a samples directory (no {MANIFEST}): "
                              "choose another output directory")
    parent = os.path.dirname(out)
    files.makedirs(parent)
    tmp = files.scratch_directory(parent, ".samples-")
    try:
        if not files.is_remote(tmp):
            os.chmod(tmp, 0o755)  # mkdtemp makes it private; the result is an ordinary directory
        _write_all(tmp, seed, train_rows)
        manifest = {"seed": seed, "train_rows": train_rows, "tasks": copy.deepcopy(LAYOUT),
                    "corpus": CORPUS}
        files.write_text(os.path.join(tmp, MANIFEST), json.dumps(manifest, indent=2) + "\n")
        if files.exists(out):
            # Not `tmp + ".old"`: ram:// would take that for a child of `tmp`.
            old = os.path.join(parent, f".old{os.path.basename(tmp)}")
            files.move_directory(out, old)
            try:
                files.move_directory(tmp, out)
            except BaseException:
                files.move_directory(old, out)
                raise
            files.rmtree(old)
        else:
            files.move_directory(tmp, out)
    except BaseException:
        files.remove_quietly(tmp)
        raise
    return manifest


def _write_all(root, seed, train_rows):
    with training_rows(train_rows):
        for write in _WRITERS:
            write(root, random.Random(f"{seed}/{write.__name__}"))  # one stream per dataset


_WRITERS = [write_cola, write_sst2, write_mrpc, write_qqp, write_stsb, write_mnli, write_qnli,
            write_rte, write_wnli, write_snli, write_scitail, write_squad, write_race, write_swag,
            write_story_cloze, write_conll2003, write_images, write_corpus]

__all__ = ["CORPUS", "FIRST", "KINDS", "LAST", "LAYOUT", "MANIFEST", "TRAIN", "write_samples"]
