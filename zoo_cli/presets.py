"""`zoo presets [NAME ...]`: the model presets, sizes and pretrained, with their parameters.

  zoo presets                        # every size and every pretrained preset
  zoo presets --pretrained           # the pretrained presets only
  zoo presets bert_base_uncased      # the presets named

A size (bert_base, gpt1, vit_base16, ...) builds a model with random weights. A pretrained
preset (bert_base_uncased, gpt1_openai, vit_base16_imagenet, ...) is a released checkpoint on
the Hugging Face Hub, at REPO@REVISION, of the size shown; `model.preset`,
`model.init_checkpoint`, `zoo convert` and `zoo.models.create` take its name and download it
once into huggingface_hub's cache (HF_HOME). Parameters are counted from the sizes, without
building weights or downloading anything; CACHED says whether the cache holds the checkpoint
(so that it loads with HF_HUB_OFFLINE=1).
"""

from zoo_cli.arguments import add_command


def register(subparsers):
    parser = add_command(subparsers, "presets",
                         "list the model presets: sizes and pretrained checkpoints", __doc__,
                         run)
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these presets")
    parser.add_argument("--pretrained", action="store_true",
                        help="only the pretrained presets")


def run(args):
    # lazy: loads Keras; `zoo --help` imports this module
    import zoo.models
    from zoo import hub  # lazy: as above
    from zoo.models.presets import PRESETS  # lazy: as above
    from zoo.models.pretrained_presets import PRETRAINED  # lazy: as above

    known = zoo.models.names() + zoo.models.pretrained_names()
    unknown = [name for name in args.names if name not in known]
    if unknown:
        raise KeyError(f"unknown preset(s) {', '.join(unknown)}; known: {', '.join(known)}")
    chosen = args.names or known
    sizes = [name for name in chosen if name not in PRETRAINED and not args.pretrained]
    pretrained = [name for name in chosen if name in PRETRAINED]
    counts = {}  # a pretrained preset of a size's very config counts once

    def count(name):
        key = repr(PRESETS[name])
        if key not in counts:
            counts[key] = zoo.models.count_parameters(name)
        return f"{counts[key]:,}"

    if sizes:
        rows = [(name, PRESETS[name][0], _shape(PRESETS[name][1]), count(name))
                for name in sizes]
        _table(("SIZE", "BACKBONE", "LAYERS x HIDDEN, HEADS", "PARAMETERS"), rows)
    if sizes and pretrained:
        print()
    if pretrained:
        rows, notes = [], []
        for name in pretrained:
            entry = PRETRAINED[name]
            rows.append((name, f"{entry['repo']}@{entry['revision']}", _size(entry),
                         count(name), "yes" if hub.cached(name) else "no"))
            notes.append(f"    {entry['description']} ({entry['license']})")
        _table(("PRETRAINED", "REPO@REVISION", "SIZE", "PARAMETERS", "CACHED"), rows, notes)
    return 0


def _shape(config):
    heads = config.get("num_heads")
    return f"{config['num_layers']} x {config['hidden_dim']}" + (f", {heads}" if heads else "")


def _size(entry):
    """The size preset, and how the checkpoint differs from it, in short."""
    overrides, parts = dict(entry["overrides"]), []
    if {"num_layers", "hidden_dim", "num_heads"} & set(overrides):
        parts.append(_shape({**_config(entry["size"]), **overrides}))
    if "vocabulary_size" in overrides:
        parts.append(f"vocabulary {overrides['vocabulary_size']:,}")
    if overrides.get("pooler") is False:
        parts.append("no pooler")
    return entry["size"] + (f": {'; '.join(parts)}" if parts else "")


def _config(size):
    # lazy: loads Keras; `zoo --help` imports this module
    from zoo.models.presets import PRESETS

    return PRESETS[size][1]


def _table(header, rows, notes=None):
    """Columns aligned (numbers to the right); `notes`: a line under each row."""
    widths = [max(len(str(row[i])) for row in (header, *rows)) for i in range(len(header))]
    for i, row in enumerate((header, *rows)):
        cells = [str(cell).rjust(width) if cell.replace(",", "").isdigit() else
                 str(cell).ljust(width) for cell, width in zip(row, widths)]
        print("  ".join(cells).rstrip())
        if notes and i:
            print(notes[i - 1])
