"""`zoo data`: vocabularies, pretraining shards and sample datasets.

  zoo data vocab    --corpus FILES --size N --kind wordpiece|bpe --out DIR
  zoo data pretrain --corpus FILES --vocab V --out DIR
  zoo data samples  --out DIR
"""

import argparse


def register(subparsers):
    parser = subparsers.add_parser("data", help="build vocabularies, pretraining data, samples",
                                   description=__doc__)
    commands = parser.add_subparsers(dest="data_command", required=True, metavar="WHAT")

    vocab = commands.add_parser("vocab", help="train a WordPiece or BPE vocabulary on a corpus")
    vocab.add_argument("--corpus", nargs="+", required=True, help="plain-text files")
    vocab.add_argument("--size", type=int, required=True, help="vocabulary size")
    vocab.add_argument("--kind", choices=("wordpiece", "bpe"), required=True)
    vocab.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                       help="lower-case (and strip accents for wordpiece); --no-lowercase: cased")
    vocab.add_argument("--out", required=True, help="output directory")
    vocab.set_defaults(func=run_vocab)

    pretrain = commands.add_parser(
        "pretrain", help="sentence-pair TFRecord shards with NSP labels for BERT pretraining")
    pretrain.add_argument("--corpus", nargs="+", required=True,
                          help="one sentence per line, a blank line between documents")
    pretrain.add_argument("--vocab", required=True, help="vocab.txt or a tokenizer directory")
    pretrain.add_argument("--out", required=True, help="output directory")
    pretrain.add_argument("--max-sequence-length", type=int, nargs="+", default=[128, 512])
    pretrain.add_argument("--shards", type=int, default=4)
    pretrain.add_argument("--seed", type=int, default=12345)
    pretrain.set_defaults(func=run_pretrain)

    samples = commands.add_parser("samples", help="write small learnable datasets in every format")
    samples.add_argument("--out", required=True, help="output directory")
    samples.add_argument("--seed", type=int, default=0)
    samples.set_defaults(func=run_samples)


def run_vocab(args):
    from zoo.tokenizers.training import train_vocabulary

    train_vocabulary(args.corpus, size=args.size, kind=args.kind, out=args.out,
                     lowercase=args.lowercase)
    return 0


def run_pretrain(args):
    from zoo.data.pretraining import write_pretraining_data

    write_pretraining_data(args.corpus, vocab=args.vocab, out=args.out,
                           max_sequence_lengths=args.max_sequence_length, shards=args.shards,
                           seed=args.seed)
    return 0


def run_samples(args):
    from zoo.data.samples import write_samples

    write_samples(args.out, seed=args.seed)
    return 0
