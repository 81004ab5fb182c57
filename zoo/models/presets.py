"""Model sizes as data: preset name -> (backbone class name, constructor arguments).

`SIZES` are the sizes, with random weights. `PRESETS` also holds each pretrained preset of
`zoo.models.pretrained_presets` under the size its checkpoint has (its size preset with its
overrides), so that a pretrained name is a preset wherever one is asked for (its family, its
image size, its parameter count without a download)."""

from zoo.models.pretrained_presets import PRETRAINED

# BERT sizes: Devlin et al. 2019 section 3 (Base, Large) and the 24 smaller models released
# with Turc et al. 2019 (Tiny L2/H128, Mini L4/H256, Small L4/H512, Medium L8/H512), heads = H/64.
# Intermediate width is 4H in all of them (the constructor's default).
_BERT = dict(vocabulary_size=30522, max_sequence_length=512, num_segments=2)
# ViT sizes: Dosovitskiy et al. 2021, Table 1 (Base, Large, Huge); Tiny and Small from DeiT.
_VIT = dict(image_size=224, num_channels=3)

PRESETS = {
    "bert_tiny": ("BertBackbone", dict(_BERT, num_layers=2, hidden_dim=128, num_heads=2)),
    "bert_mini": ("BertBackbone", dict(_BERT, num_layers=4, hidden_dim=256, num_heads=4)),
    "bert_small": ("BertBackbone", dict(_BERT, num_layers=4, hidden_dim=512, num_heads=8)),
    "bert_medium": ("BertBackbone", dict(_BERT, num_layers=8, hidden_dim=512, num_heads=8)),
    "bert_base": ("BertBackbone", dict(_BERT, num_layers=12, hidden_dim=768, num_heads=12)),
    "bert_large": ("BertBackbone", dict(_BERT, num_layers=24, hidden_dim=1024, num_heads=16)),
    # GPT-1: Radford et al. 2018 section 4.1; 40,478 BPE tokens in the released vocabulary.
    "gpt1": ("GPTBackbone", dict(vocabulary_size=40478, num_layers=12, hidden_dim=768,
                                 num_heads=12, max_sequence_length=512)),
    # GPT-1 Table 5's "LSTM w/ aux LM": "a single layer 2048 unit LSTM" (section 5), GPT-1's
    # vocabulary and framework; zoo.models.lstm says what the paper leaves open.
    "gpt1_lstm": ("LSTMBackbone", dict(vocabulary_size=40478, hidden_dim=2048, num_layers=1,
                                       max_sequence_length=512)),
    "vit_tiny16": ("ViTBackbone", dict(_VIT, patch_size=16, num_layers=12, hidden_dim=192,
                                       num_heads=3)),
    "vit_small16": ("ViTBackbone", dict(_VIT, patch_size=16, num_layers=12, hidden_dim=384,
                                        num_heads=6)),
    "vit_base16": ("ViTBackbone", dict(_VIT, patch_size=16, num_layers=12, hidden_dim=768,
                                       num_heads=12)),
    "vit_large16": ("ViTBackbone", dict(_VIT, patch_size=16, num_layers=24, hidden_dim=1024,
                                        num_heads=16)),
    "vit_huge14": ("ViTBackbone", dict(_VIT, patch_size=14, num_layers=32, hidden_dim=1280,
                                       num_heads=16)),
}
SIZES = tuple(PRESETS)
for _name, _entry in PRETRAINED.items():
    _class_name, _config = PRESETS[_entry["size"]]
    PRESETS[_name] = (_class_name, {**_config, **_entry["overrides"]})
del _name, _entry, _class_name, _config
