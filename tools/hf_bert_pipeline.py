"""Hugging Face's BERT tokenizer pipeline (as BertWordPieceTokenizer builds it) from the PyPI
`tokenizers` package, shared by gen_tokenizer_goldens.py and bench_tokenizer_hf.py.

    python3 -m venv VENV && VENV/bin/pip install tokenizers==0.23.2
"""
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

TOKENIZERS_VERSION = "0.23.2"  # the version the committed goldens were made with


def bert_tokenizer(vocab_path, cased=False):
    model = models.WordPiece.from_file(vocab_path, unk_token="[UNK]", continuing_subword_prefix="##",
                                       max_input_chars_per_word=100)
    t = Tokenizer(model)
    t.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                              strip_accents=not cased, lowercase=not cased)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.post_processor = processors.BertProcessing(("[SEP]", t.token_to_id("[SEP]")),
                                                 ("[CLS]", t.token_to_id("[CLS]")))
    t.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    t.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    return t
