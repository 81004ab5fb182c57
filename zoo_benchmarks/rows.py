"""The rows of `zoo reproduce` that zoo does not train, as zoo_tasks.reproduce runs them: a
`baseline:` row's cells and a `library:` row's pretraining and cells.

`zoo reproduce` hands `TRAINERS` to `zoo_tasks.reproduce.reproduce` (its `lab`), which never
imports the lab: from an installed wheel, without it, zoo's own rows still run.
"""

from zoo_benchmarks import baselines, transformers_recipe

# (step kind, the row's `baseline` or `library`) -> train(config, run_dir, progress): writes
# the run directory's metrics.json last, as the step's finished mark.
TRAINERS = {
    ("baseline", "bag_of_words"): baselines.bag_of_words,
    ("library_pretraining", "transformers"): transformers_recipe.pretrain,
    ("library_finetuning", "transformers"): transformers_recipe.finetune,
}
