"""Tokenizers that run in tf.data and inside a SavedModel (tensorflow-text / keras-hub ops only).

Every tokenizer is a Keras layer with `get_config`, built on TF ops only (no py_function), and
gives the same ids as transformers (tests/test_tokenizers.py):

    tokenizer = zoo.tokenizers.from_huggingface("hf_dir")  # vocab.txt, or vocab.json+merges.txt
    tokenizer = zoo.tokenizers.from_directory("vocab_dir")  # written by `zoo data vocab`
    ids = tokenizer(["Hello world!", ""])        # (batch, None) ragged int32, no special tokens
    ids, starts, ends = tokenizer.tokenize_with_offsets(["Héllo"])
        # + int64 spans in Unicode characters (code points) of the ORIGINAL strings, [start, end)
        #   like transformers' offset_mapping: SQuAD answer_start / NER spans index the same way
    tokenizer.detokenize(ids)                    # (batch,) strings
    tokenizer.vocabulary_size(), tokenizer.get_vocabulary()
    tokenizer.token_to_id("[CLS]"), tokenizer.id_to_token(101)

    WordPieceTokenizer(vocabulary, lowercase=True, strip_accents=None, split_on_cjk=True)
        BERT (== BertTokenizer); .cls_token_id .sep_token_id .pad_token_id .mask_token_id
        .unk_token_id
    GPTTokenizer(vocabulary, merges, lowercase=True, special_tokens=())
        GPT-1 `</w>` BPE (== OpenAIGPTTokenizer); .unk_token_id; GPT1_SPECIAL_TOKENS appends
        GPT-1's _start_/_delimiter_/_classify_ fine-tuning tokens
    ByteLevelBPETokenizer(vocabulary, merges, add_prefix_space=False)
        GPT-2 style byte-level BPE (== GPT2Tokenizer)
    train_vocabulary(corpus_files, size=, kind="wordpiece" | "bpe", out=, lowercase=True)
    saving.save_huggingface(tokenizer, folder)   # tokenizer.json + tokenizer_config.json +
        # vocabulary files that transformers' AutoTokenizer loads to the same ids

Packing (BERT `[CLS] A [SEP] B [SEP]`, GPT-1 input transformations) is `zoo.data.packing`.
"""

from zoo.tokenizers.bpe import GPT1_SPECIAL_TOKENS, ByteLevelBPETokenizer, GPTTokenizer
from zoo.tokenizers.loading import from_directory, from_huggingface
from zoo.tokenizers.training import train_vocabulary
from zoo.tokenizers.wordpiece import WordPieceTokenizer

__all__ = ["GPT1_SPECIAL_TOKENS", "ByteLevelBPETokenizer", "GPTTokenizer", "WordPieceTokenizer",
           "from_directory", "from_huggingface", "train_vocabulary"]
