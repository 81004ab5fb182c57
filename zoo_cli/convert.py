"""`zoo convert SRC DST [--to zoo|hf]`: convert a checkpoint to a zoo model or to Hugging Face.

  zoo convert runs/mrpc hf/mrpc --to hf     # a fine-tuned run, for transformers' pipeline()

SRC is detected:
  zoo train run directory   config.yaml beside best.keras / final.keras (with --to hf): the
                            model with its head, label names as id2label, and the run's
                            tokenizer (tokenizer.json, tokenizer_config.json, vocab files) or
                            for ViT the image processor; --checkpoint picks best or final
  Hugging Face folder       config.json with a "model_type" (bert, openai-gpt, vit) and
                            model.safetensors (or shards); pytorch_model.bin is refused;
                            with --with-head its head, fine-tuned ones too
                            (BertForSequenceClassification, ...ForTokenClassification,
                            ...ForQuestionAnswering, ...ForMultipleChoice)
  a checkpoint by name      hf://ORG/NAME[@REVISION], ORG/NAME (no such local path) or a
                            pretrained preset (`zoo presets`),
                            downloaded into huggingface_hub's cache (HF_HOME; HF_HUB_OFFLINE=1
                            reads the cache only): a Hugging Face folder, or a keras-hub
                            preset kept on the hub
  keras-hub preset folder   config.json of a keras_hub>BertBackbone or >ViTBackbone and
                            model.weights.h5
  Google BERT checkpoint    a prefix PREFIX with PREFIX.index (or a folder holding exactly one
                            *.ckpt.index), with bert_config.json beside it or --bert-config
  zoo model                 a .keras file (with --to hf; labels default to LABEL_0, ...
                            and no tokenizer files: convert its run directory for those)

DST, written atomically (staged beside DST, renamed when complete; DST must not exist and
nothing is left there on failure):
  --to zoo (default)  one .keras file; load it with keras.saving.load_model after
                      `import zoo`
  --to hf             a folder with config.json and model.safetensors for transformers'
                      from_pretrained. Heads: MLM/NSP (BertForPreTraining), GPT-1 LM
                      (OpenAIGPTLMHeadModel), ViT classifier, sequence classification
                      (BertForSequenceClassification; STS-B as regression), span QA
                      (BertForQuestionAnswering), NER (BertForTokenClassification),
                      multiple choice (BertForMultipleChoice). GPT-1 classification and
                      feature-based NER have no transformers model and are refused.
"""

import os
import sys

from zoo_cli.arguments import add_checkpoint, add_command


def register(subparsers):
    parser = add_command(
        subparsers, "convert", "convert a checkpoint to a zoo .keras file or to Hugging Face",
        __doc__, run)
    parser.add_argument("src", metavar="SRC", help="checkpoint to read (format detected)")
    parser.add_argument("dst", metavar="DST",
                        help="file (--to zoo: must end in .keras) or folder (--to hf) to create")
    parser.add_argument("--to", choices=("zoo", "hf"), default="zoo",
                        help="output format (default: zoo)")
    parser.add_argument("--with-head", action="store_true",
                        help="keep the checkpoint's task head (MLM/NSP, LM, classifier)")
    add_checkpoint(parser, help="which model of a run directory SRC (default: best, falling "
                                "back to final)")
    parser.add_argument("--bert-config", metavar="JSON",
                        help="bert_config.json of a Google BERT checkpoint "
                             "(default: the one beside it)")


def run(args):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files
    from zoo.convert import ConversionError  # lazy: as above

    try:
        dst = args.dst  # a string, not a pathlib.Path: "gs://b/x" must keep its "//"
        if files.exists(dst):
            raise ConversionError(f"{dst}: already exists; choose a new destination")
        if args.to == "zoo" and not dst.endswith(".keras"):
            raise ConversionError(f"{dst}: --to zoo writes one .keras file; name it *.keras")
        if args.to == "zoo" and args.src.endswith(".keras"):
            raise ConversionError(f"{args.src}: already a zoo model; use --to hf")
        if _is_hub(args.src):
            if args.bert_config or args.checkpoint != "best":
                raise ConversionError(f"{args.src}: --bert-config and --checkpoint do not apply "
                                      "to a checkpoint by name")
            kind, model = _read_hub(args.src, args.with_head)
        elif _is_run_dir(args.src):
            if args.to != "hf" or args.with_head or args.bert_config:
                raise ConversionError(f"{args.src}: a run directory converts with --to hf only "
                                      "(its models are already .keras files; the head is "
                                      "always kept)")
            # lazy: loads TensorFlow; `zoo --help` imports this module
            from zoo_tasks import runs

            runs.convert_run(args.src, dst, args.checkpoint, progress=True)
            print(f"{args.src} (run, {args.checkpoint} checkpoint) -> {dst}")
            return 0
        else:
            if args.checkpoint != "best":
                raise ConversionError(f"{args.src}: --checkpoint applies to run directories "
                                      "only")
            kind, model = _read(args.src, args)
        if args.to == "hf":
            _write_huggingface(model, dst, kind)
        else:
            _write_keras(model, dst)
    except ConversionError as error:
        print(f"zoo convert: error: {error}", file=sys.stderr)
        return 1
    print(f"{args.src} ({kind}) -> {dst}")
    return 0


def _is_hub(src):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import hub, loading

    return hub.is_hub(loading.hub_name(src))


def _read_hub(src, with_head):
    """(format name, zoo model) for a checkpoint by name (`zoo.loading`)."""
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import loading

    found = loading.describe(src)
    name = f"{found.checkpoint.format}, {found.checkpoint.repo}@{found.checkpoint.commit[:12]}"
    return name, loading.load_model(found, with_head=with_head)


def _read(src, args):
    """(format name, zoo model) for SRC."""
    # lazy: loads TensorFlow; `zoo --help` imports this module
    import zoo.convert
    from zoo import files  # lazy: as above
    from zoo.convert import ConversionError  # lazy: as above
    from zoo.convert.core import read_json  # lazy: as above

    if args.bert_config and _checkpoint_prefix(src) is None:
        raise ConversionError(f"{src}: --bert-config applies to Google BERT checkpoints only")
    if src.endswith(".keras") and files.isfile(src):
        if args.with_head:
            raise ConversionError(f"{src}: a .keras file is read as saved (with its head if it "
                                  "has one); drop --with-head")
        return "zoo", _load_keras(src)
    if files.isfile(os.path.join(src, "config.json")):
        config = read_json(os.path.join(src, "config.json"))
        if "model_type" in config:
            return "huggingface", zoo.convert.from_huggingface(
                src, with_head=args.with_head, progress=True)
        if str(config.get("registered_name", "")).startswith("keras_hub>"):
            if args.with_head:
                raise ConversionError(f"{src}: keras-hub presets are read as backbones only; "
                                      "drop --with-head")
            return "keras-hub", zoo.convert.from_keras_hub(src, progress=True)
    prefix = _checkpoint_prefix(src)
    if prefix is not None:
        bert_config = args.bert_config or os.path.join(os.path.dirname(prefix),
                                                       "bert_config.json")
        return "google-bert", zoo.convert.from_bert_checkpoint(
            prefix, bert_config, with_head=args.with_head, progress=True)
    raise ConversionError(
        f"{src}: not a recognised checkpoint; expected a Hugging Face or keras-hub folder "
        "(config.json), a Google BERT checkpoint prefix (PREFIX.index) or a .keras file"
    )


def _is_run_dir(src):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files

    return files.isfile(os.path.join(src, "config.yaml")) and any(
        files.exists(os.path.join(src, name)) for name in ("best.keras", "final.keras"))


def _checkpoint_prefix(src):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo import files

    if files.isfile(f"{src}.index"):
        return src
    if files.isdir(src):
        indexes = files.glob(os.path.join(src, "*.ckpt.index"))
        if len(indexes) == 1:
            return indexes[0][:-len(".index")]
    return None


def _load_keras(path):
    import keras

    # lazy: loads TensorFlow; `zoo --help` imports this module
    import zoo.convert  # noqa: F401  (registers the head models for deserialization)
    from zoo.convert import ConversionError  # lazy: as above

    try:
        return keras.saving.load_model(path)
    except Exception as error:  # Keras raises many types for a damaged or foreign file
        raise ConversionError(f"{path}: cannot load this .keras file: {error}") from error


def _write_keras(model, dst):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    from zoo.convert.core import atomic_output

    with atomic_output(dst) as staged:
        model.save(str(staged))


def _write_huggingface(model, dst, kind):
    # lazy: loads TensorFlow; `zoo --help` imports this module
    import zoo.convert
    from zoo.convert import ConversionError  # lazy: as above

    if kind.startswith("huggingface"):
        raise ConversionError(f"{dst}: the source is already a Hugging Face checkpoint")
    zoo.convert.to_huggingface(model, dst, progress=True)
