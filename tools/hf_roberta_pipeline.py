"""Hugging Face's RoBERTa tokenizer pipeline (what RobertaTokenizerFast builds from vocab.json and
merges.txt) from the PyPI `tokenizers` package alone, for bench_tokenizer_hf.py:
added special tokens (<mask> lstrip), ByteLevel pre-tokenizer, BPE, RobertaProcessing, ByteLevel
decoder.
"""
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors


def roberta_tokenizer(vocab_path, merges_path, add_prefix_space=False):
    t = Tokenizer(models.BPE.from_file(vocab_path, merges_path))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=add_prefix_space)
    t.decoder = decoders.ByteLevel()
    t.add_special_tokens(["<s>", "</s>", "<unk>", "<pad>", AddedToken("<mask>", lstrip=True, normalized=False)])
    t.post_processor = processors.RobertaProcessing(("</s>", t.token_to_id("</s>")), ("<s>", t.token_to_id("<s>")),
                                                    trim_offsets=True, add_prefix_space=add_prefix_space)
    return t
