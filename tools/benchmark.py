"""`zoo benchmark`: side-by-side speed against keras-hub and transformers, reported as ratios.

  zoo benchmark models      BERT-base forward (seq/s), zoo vs keras_hub.models.BertBackbone
"""

import time


def register(subparsers):
    parser = subparsers.add_parser("benchmark", help="compare speed with keras-hub / transformers",
                                   description=__doc__)
    targets = parser.add_subparsers(dest="target", required=True, metavar="TARGET")
    models = targets.add_parser("models", help="BERT-base forward throughput vs keras-hub")
    models.add_argument("--batch-size", type=int, default=8)
    models.add_argument("--sequence-length", type=int, default=128)
    models.add_argument("--repeats", type=int, default=5)
    models.set_defaults(func=run_models)


def _throughput(fn, inputs, batch_size, repeats):
    fn(inputs)  # trace / warm up
    start = time.perf_counter()
    for _ in range(repeats):
        fn(inputs)
    return batch_size * repeats / (time.perf_counter() - start)


def run_models(args):
    import keras
    import keras_hub
    import numpy as np

    import zoo

    rng = np.random.default_rng(0)
    shape = (args.batch_size, args.sequence_length)
    ids = rng.integers(1, 30522, shape).astype("int32")
    ours = zoo.models.create("bert_base", dropout=0.0, attention_dropout=0.0)
    theirs = keras_hub.models.BertBackbone(
        vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768,
        intermediate_dim=3072, dropout=0.0, max_sequence_length=512, num_segments=2,
    )
    our_inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                  "padding_mask": np.ones_like(ids)}
    their_inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids),
                    "padding_mask": np.ones_like(ids)}
    rows = []
    for mode in ("eager call", "predict_on_batch"):
        for name, model, inputs in (("zoo", ours, our_inputs), ("keras-hub", theirs, their_inputs)):
            fn = model if mode == "eager call" else model.predict_on_batch
            rows.append((mode, name, _throughput(fn, inputs, args.batch_size, args.repeats)))
    print(f"BERT-base forward, backend {keras.backend.backend()}, fp32, batch {args.batch_size} "
          f"x seq {args.sequence_length}, {args.repeats} repeats")
    for mode in ("eager call", "predict_on_batch"):
        ours_rate, theirs_rate = (r[2] for r in rows if r[0] == mode)
        print(f"  {mode:17s} zoo {ours_rate:7.2f} seq/s   keras-hub {theirs_rate:7.2f} seq/s   "
              f"ratio {ours_rate / theirs_rate:.2f}")
    return 0
