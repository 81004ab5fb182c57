"""`zoo evaluate`: the benchmark's metrics of a trained run, and its predictions file.

  zoo evaluate --run-dir runs/mrpc                       # dev set, best checkpoint
  zoo evaluate --run-dir runs/mnli --split dev           # matched and mismatched
  zoo evaluate --run-dir runs/mrpc --data other/dev.tsv  # any file in the official format
  zoo evaluate --model hf://ORG/sentiment --data reviews.csv --out scored/   # no run

Prints one JSON object of metrics and writes the predictions in the format `zoo score` reads:
  GLUE, SNLI, SciTail, image_folder  RUN/predictions/<split>.tsv (index<TAB>prediction)
  squad_v1, squad_v2                 RUN/predictions/<split>.json ({id: answer}); squad_v2
                                     also <split>_na_prob.json and RUN/null_threshold.json
  swag, race, story_cloze            RUN/predictions/<split>.tsv (id<TAB>chosen index)
  conll2003                          RUN/predictions/<split>.txt (the gold file plus a
                                     predicted-tag column, conlleval's input)
A file without labels (a test set) gives predictions only.

--model scores a checkpoint by name or folder (`zoo export --model`'s, with --task and --set)
on --data, your own file in its task's format (text_classification: a table with `text` and
`label` columns, or data.text_column=... ; question_answering: SQuAD JSON; token_classification:
CoNLL or JSON lines), before any training; its predictions go to --out when given.

Zero-shot (GPT-1 section 5, Figure 2 right): a GPT-1 language model, not fine-tuned, scored
with the paper's heuristics on a benchmark file:

  zoo evaluate --zero-shot glue/sst2 --run-dir runs/gpt1_pretrain --data SST-2/dev.tsv
  zoo evaluate --zero-shot race --run-dir runs/gpt1_pretrain --data RACE/dev
  zoo evaluate --zero-shot glue/cola --run-dir runs/gpt1_pretrain --data CoLA/dev.tsv

--run-dir is a gpt1/pretrain run directory, a .keras file beside vocab.json + merges.txt, or a
Hugging Face OpenAI GPT folder. glue/sst2: "very" is appended and the next-word probabilities
of "positive" and "negative" compared; race, story_cloze, swag: the choice with the highest
average token log-probability given the context (and question); glue/cola: the sentence's
average token log-probability above a threshold, by default the one that maximises MCC on the
evaluated file itself (an oracle: the paper gives none; the output says so), or --threshold.
Predictions go to RUN/predictions/zero_shot/<task>.tsv (GLUE tasks: index<TAB>prediction;
multiple choice: id<TAB>prediction, the chosen index).
"""

import json
import os

from zoo_cli.arguments import (
    add_checkpoint,
    add_command,
    add_model,
    add_model_options,
    add_run_dir,
    check_model_options,
    load_model,
)


def register(subparsers):
    parser = add_command(subparsers, "evaluate", "metrics and predictions of a trained run",
                         __doc__, run)
    source = parser.add_mutually_exclusive_group(required=True)
    add_run_dir(source, help="the run directory (with --zero-shot: the language model's run "
                             "directory or checkpoint)", required=False)
    add_model(source, help="a checkpoint by name or folder, with its head, scored on --data")
    add_model_options(parser)
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="--model: write the predictions files here (they go to the run "
                        "directory with --run-dir)")
    parser.add_argument("--split", default="dev", help="dev (default), test, or another "
                        "split of the task; with --data, the name of the predictions file")
    parser.add_argument("--data", default=None, help="evaluate this file instead of the "
                        "split's file under data.dir (required with --zero-shot)")
    add_checkpoint(parser)
    parser.add_argument("--zero-shot", default=None, metavar="TASK",
                        help="score a GPT-1 language model without fine-tuning on --data: "
                        "glue/sst2, glue/cola, race, story_cloze or swag")
    parser.add_argument("--threshold", type=float, default=None, help="--zero-shot glue/cola: "
                        "fixed threshold on the average token log-probability (default: the "
                        "one maximising MCC on --data)")
    parser.add_argument("--batch-size", type=int, default=8,
                        help="--zero-shot: sequences per forward pass")


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo_tasks import runs

    if args.zero_shot:
        # lazy: loads TensorFlow; `zoo --help` imports this module
        from zoo_tasks import zero_shot

        if not args.data:
            raise ValueError("--zero-shot needs --data, the benchmark file to score")
        result = zero_shot.evaluate(args.zero_shot, args.run_dir, args.data,
                                    threshold=args.threshold, batch_size=args.batch_size)
        print(json.dumps(result, sort_keys=True))
        return 0
    if args.threshold is not None:
        raise ValueError("--threshold is for --zero-shot glue/cola")
    check_model_options(args)
    if args.model is not None:
        if not args.data:
            raise ValueError("--model needs --data, the file to score")
        metrics = runs.evaluate_model(load_model(args), args.data, args.split, args.out)
        print(json.dumps(metrics, sort_keys=True))
        if args.out:
            print(f"predictions: {args.out}")
        return 0
    if args.out is not None:
        raise ValueError("--out is for --model (a run's predictions go to its directory)")
    metrics = runs.evaluate_run(args.run_dir, args.split, args.data, args.checkpoint)
    print(json.dumps(metrics, sort_keys=True))
    print(f"predictions: {os.path.join(args.run_dir, 'predictions')}")
    return 0
