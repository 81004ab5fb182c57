"""Pretrained presets as data: zoo name -> the released checkpoint's hub repo and revision, the
size preset (with overrides) that its weights have, a description and the weights' licence.

These are the checkpoints the papers released, as the Hugging Face Hub holds them with
`model.safetensors` (keras-hub's `bert_presets.py` is the same idea for Kaggle handles).
`revision` is "main": the hub cannot be reached from where this table was written, so no commit
hash is pinned here; a run records the commit it resolved, and a user pins one with
`hf://REPO@COMMIT` or `NAME@COMMIT`.
"""

PRETRAINED = {
    # BERT: Devlin et al. 2019, the checkpoints of google-research/bert, converted by Hugging Face.
    "bert_base_uncased": dict(
        repo="google-bert/bert-base-uncased", revision="main", size="bert_base", overrides={},
        description="BERT-Base, uncased English (Wikipedia + BooksCorpus), 30,522 WordPieces",
        license="Apache-2.0"),
    "bert_base_cased": dict(
        repo="google-bert/bert-base-cased", revision="main", size="bert_base",
        overrides=dict(vocabulary_size=28996),
        description="BERT-Base, cased English, 28,996 WordPieces", license="Apache-2.0"),
    "bert_large_uncased": dict(
        repo="google-bert/bert-large-uncased", revision="main", size="bert_large", overrides={},
        description="BERT-Large, uncased English, 30,522 WordPieces", license="Apache-2.0"),
    "bert_large_cased": dict(
        repo="google-bert/bert-large-cased", revision="main", size="bert_large",
        overrides=dict(vocabulary_size=28996),
        description="BERT-Large, cased English, 28,996 WordPieces", license="Apache-2.0"),
    "bert_base_multilingual_cased": dict(
        repo="google-bert/bert-base-multilingual-cased", revision="main", size="bert_base",
        overrides=dict(vocabulary_size=119547),
        description="BERT-Base, cased, 104 languages' Wikipedias, 119,547 WordPieces",
        license="Apache-2.0"),
    # GPT-1: Radford et al. 2018, OpenAI's released weights.
    "gpt1_openai": dict(
        repo="openai-community/openai-gpt", revision="main", size="gpt1", overrides={},
        description="GPT-1, OpenAI's language model (BooksCorpus), 40,478 BPE tokens",
        license="MIT"),
    # ViT: Dosovitskiy et al. 2021, google-research/vision_transformer, converted by Hugging Face.
    # The ImageNet fine-tuned checkpoints have no pre-logits (pooler) layer; the 21k ones do.
    "vit_base16_imagenet": dict(
        repo="google/vit-base-patch16-224", revision="main", size="vit_base16",
        overrides=dict(pooler=False),
        description="ViT-B/16, ImageNet-21k pretrained, fine-tuned on ImageNet-1k at 224",
        license="Apache-2.0"),
    "vit_base16_in21k": dict(
        repo="google/vit-base-patch16-224-in21k", revision="main", size="vit_base16",
        overrides={}, description="ViT-B/16, ImageNet-21k pretrained (no fine-tuning)",
        license="Apache-2.0"),
    "vit_large16_imagenet": dict(
        repo="google/vit-large-patch16-224", revision="main", size="vit_large16",
        overrides=dict(pooler=False),
        description="ViT-L/16, ImageNet-21k pretrained, fine-tuned on ImageNet-1k at 224",
        license="Apache-2.0"),
    # Sentence embeddings: a MiniLM BERT (6 x 384) trained on sentence pairs (Reimers and
    # Gurevych 2019); its folder also holds the pooling settings of sentence-transformers.
    "all_minilm_l6_v2": dict(
        repo="sentence-transformers/all-MiniLM-L6-v2", revision="main", size="bert_base",
        overrides=dict(num_layers=6, hidden_dim=384, num_heads=12, intermediate_dim=1536),
        description="all-MiniLM-L6-v2, sentence-transformers' sentence embedder (mean pooling)",
        license="Apache-2.0"),
}
