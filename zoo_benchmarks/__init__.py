"""The measurement lab: zoo measured against other libraries, beside the product, never in it.

It imports zoo and zoo_tasks; they never import it (tests/test_layout.py), and the wheel does
not ship it: it runs from a clone of the repository. (Not `benchmarks`: pysbd, which zoo
requires, installs a top-level package of that name, and a PyPI distribution holds it.)

  `zoo benchmark`       side-by-side speed: report.py runs the sections (models, finetune,
                        pretrain, bucketing, serving, tokenizers, data, generate); common.py,
                        weights.py, contenders.py and workers.py are what they share;
                        generate_contenders.py is what generate's processes run
                        (`python -m zoo_benchmarks.generate` too, on a GPU without TensorFlow)
  gpu.py                BERT pretraining steps on one GPU, zoo on JAX vs transformers
                        (`python -m zoo_benchmarks.gpu`)
  transformers_recipe   zoo's training recipe in transformers and torch: the reference zoo's
                        training steps are checked against, and the "transformers" row of
                        `zoo reproduce` (bert/imdb)
  baselines.py          the `baseline:` rows of `zoo reproduce` (bag of words)
  rows.py               those rows' trainers, which `zoo reproduce` hands to
                        zoo_tasks.reproduce; commands.py their command line

This file imports nothing: the torch worker processes import the lab without TensorFlow.
"""
