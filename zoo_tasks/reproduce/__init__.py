"""`zoo reproduce`: a paper's table as a grid of ordinary runs, our numbers beside the paper's.

A table is data, one YAML file under configs/reproduce/<family>/<table>.yaml:

    title, source        what the table is and where its numbers come from
    reference            the row the paper's effects are read against (e.g. full)
    paper_title          what the paper's column is called (default "paper"; bert/imdb:
                         "reported elsewhere", other models and budgets)
    corpus               {from: [paths under --data-root], strip_html, text_column}: the
                         corpus is `zoo data corpus` of those documents (RUN/data/corpus),
                         not --data-root's corpus/*.txt (bert/imdb: aclImdb's train/)
    vocabulary           {kind: wordpiece|bpe, size: N}: learnt on the corpus unless
                         `--set model.vocabulary=DIR` names one; {kind: checkpoint}: the
                         table's checkpoint's own (bert/imdb_pretrained)
    checkpoint           a pretrained checkpoint the rows start from (a Hugging Face folder,
                         hf://ORG/NAME or a pretrained preset name): `{checkpoint}` in the
                         settings, e.g. `model.init_checkpoint={checkpoint}`; `zoo reproduce
                         --checkpoint` gives another (recorded in RUN/reproduce.json)
    subset               {splits: {name: {from, examples}}, labels, seed}: a stratified,
                         seeded sample of the labelled examples under --data-root (each
                         label's share kept; splits of one source share no example;
                         zoo_tasks.reproduce.subsets), written first as
                         RUN/data/subset/<name>.csv (id, text, label): `{subset}` in the
                         settings, e.g. `data.train_file={subset}/train.csv`
    pretraining          {name: {experiment, set: [k=v ...], shards: bool, train_examples}}:
                         the pretraining runs the rows start from (shards: the experiment
                         reads `zoo data pretrain` shards, written from the corpus)
    columns              {name: {title, experiment, metric, percent, set, train_examples, score}}:
                         one fine-tuning task per column; `metric` is a key of its metrics.json, a
                         fraction shown x 100 (`percent: false`: shown as it is, e.g. perplexity,
                         SQuAD F1); `source: pretraining` reads the row's pretraining run; `source:
                         zero_shot` with `task` (one of zoo_tasks.zero_shot.TASKS) scores the row's
                         language model on the task's dev file, no fine-tuning (`zoo evaluate
                         --zero-shot`; GPT-1 Figure 2 right); `score: test` (default dev): the
                         number is the final model's on data.test_file, scored once after
                         training (CELL/test.json), data.dev_file being what training evaluates
                         and recipes are chosen on (a lab row, which scores its dev file once at
                         the end and chooses nothing on it, is given the test file as its dev
                         file). All are checked as each cell finishes
    rows                 {name: {title, pretraining: name|null, updates: N, set: [...], experiments:
                         {column: experiment}, paper: {column: number}, baseline}}: null is "w/o
                         pre-training" (random initialization); `baseline: bag_of_words` is no
                         network (zoo_benchmarks.baselines: one cell per column, no seeds,
                         RUN/cells/<row>/<column>); `library: transformers` trains the row's
                         pretraining and cells with transformers and torch on zoo's batches and
                         recipe (zoo_benchmarks.transformers_recipe;
                         RUN/transformers/pretraining/<name>, after all of zoo's steps); `updates`
                         starts from the pretraining's model after N updates (its pretraining then
                         keeps a checkpoint at every evaluation, `train.keep_checkpoints`; N must be
                         a step that evaluates); `experiments` replaces a column's experiment in
                         this row (BERT Table 7's feature-based rows)
    scales               {paper|small|sample|cpu: {description, seeds, rows, columns, set,
                         pretraining_set, finetuning_set, pretraining_overrides: {name: [...]},
                         column_overrides and row_overrides: {name: [...]}, vocabulary_size,
                         dupe_factor (of the `zoo data pretrain` shards, default 1)}}

`{data_root}` in any of these settings is --data-root (a task of your own data names its
files: `data.train_file={data_root}/train`); `{subset}` and `{checkpoint}` are as above.
`set` of a scale applies to every run, `pretraining_set` / `finetuning_set` to one kind,
`pretraining_overrides` to one pretraining (e.g. a smaller size of each BERT Table 6 row); a
pretraining's `model.*` settings carry over to the rows that start from it (the architecture
must match its checkpoint). Then a column's `set` and the scale's `column_overrides` for it, a
row's `set` and the scale's `row_overrides` for it; the user's `--set` comes last and wins.

The `baseline:` and `library:` rows are trained by the repository's measurement lab
(zoo_benchmarks/rows.py), which zoo_tasks never imports and the wheel does not ship: `zoo
reproduce` hands its trainers in (`reproduce(..., lab=...)`) when it runs from a clone;
without them zoo's own rows still run, and a lab row stops with a message saying so.

Every cell is an ordinary run directory under RUN (`RUN/pretraining/<name>`,
`RUN/cells/<row>/<column>/seed_<s>`; a zero-shot cell is `RUN/cells/<row>/<column>` with its
metrics.json and predictions/), trained by `zoo_tasks.runs.train` exactly as `zoo train`
would (RUN/commands.sh holds those commands). A finished cell (final.keras) is never
retrained; an interrupted one resumes from its backup, so a killed `zoo reproduce` run again
ends with the same numbers. RUN/table.md and RUN/table.csv put the paper's number and ours
(mean ± std over seeds of the final evaluation) side by side, with whether each effect
against the reference row has the paper's sign.
"""

from zoo_tasks.reproduce.report import describe, dry_run, write_outputs
from zoo_tasks.reproduce.run import reproduce, results
from zoo_tasks.reproduce.tables import (
    SCALES,
    TABLE_ROOT,
    TableError,
    command,
    load_table,
    plan,
    table_names,
    table_path,
)

__all__ = ["SCALES", "TABLE_ROOT", "TableError", "command", "describe", "dry_run",
           "load_table", "plan", "reproduce", "results", "table_names", "table_path",
           "write_outputs"]
