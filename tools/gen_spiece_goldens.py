#!/usr/bin/env python3
"""Trains the small test spiece.model with ALBERT's settings and writes tokenizer goldens.

Reference: transformers' slow AlbertTokenizer (sentencepiece-based), transformers 4.45.2,
sentencepiece 0.2.x. Usage: python3 tools/gen_spiece_goldens.py
(needs pip install transformers==4.45.2 'sentencepiece>=0.2,<0.3')
Writes tests/data/spiece/{spiece.model, goldens.json}.
"""
import json
import os

import sentencepiece as spm
from transformers import AlbertTokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "spiece")
CORPUS = os.path.join(ROOT, "data", "pretrain_corpus_small.txt")


def train():
    # ALBERT's spiece.model: unigram, <pad> 0, <unk> 1, [CLS] 2, [SEP] 3, [MASK] 4, no bos/eos.
    # ALBERT lower-cases before training (do_lower_case); the corpus is fed as-is here.
    spm.SentencePieceTrainer.train(
        input=CORPUS, model_prefix=os.path.join(OUT, "spiece"), model_type="unigram",
        vocab_size=2000, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], character_coverage=1.0,
        input_sentence_size=0, shuffle_input_sentence=False, num_threads=1)
    os.remove(os.path.join(OUT, "spiece.vocab"))


HARD = [
    "", " ", "Hello World", "  runs   of\tspaces\tand\ttabs  ", "line one\nline two\r\n",
    "Café naïve résumé Ångström", "``quoted like this'' and 'single'", "It costs 1,000 or 9,9 dollars, 12,",
    "a1, b22, 3,", "東京 is in 日本", "emoji 😀 here 🚀!", "MiXeD CaSe TeXt", "ﬁ ligature and ① circled",
    "Ünïcödé ÀÉÎÕÜ", "tab\tat\tend\t", "numbers 2019, 2020,and 2021,",
    # special tokens written in the text: matched whole, [MASK] taking the whitespace before it
    "the cat [MASK] on the mat", "[MASK]", "two [MASK][MASK] masks", "a [CLS] b [SEP] c", "<unk> and <pad>",
    "no space[MASK]here", "  [MASK]  spaced  ", "[mask] is not [MASK]",
]


def main():
    os.makedirs(OUT, exist_ok=True)
    if not os.path.exists(os.path.join(OUT, "spiece.model")):  # keep the committed model; delete it to retrain
        train()
    tok = AlbertTokenizer(os.path.join(OUT, "spiece.model"))
    with open(CORPUS, encoding="utf-8") as f:
        corpus = [l.rstrip("\n") for l in f if l.strip()][:40]
    singles = [{"text": t, "ids": tok.encode(t)} for t in HARD + corpus]
    pairs = []
    for a, b in zip(HARD + corpus[:8], corpus[8:16] + HARD):
        e = tok(a, b)
        pairs.append({"a": a, "b": b, "ids": e["input_ids"], "type_ids": e["token_type_ids"]})
    decoded = [{"ids": s["ids"], "text": tok.decode(s["ids"], skip_special_tokens=True)} for s in singles]
    special = {t: tok.convert_tokens_to_ids(t) for t in ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]}
    with open(os.path.join(OUT, "goldens.json"), "w", encoding="utf-8") as f:
        json.dump({"provenance": "tools/gen_spiece_goldens.py: transformers 4.45.2 AlbertTokenizer (slow), sentencepiece "
                   + spm.__version__, "vocab_size": tok.vocab_size, "special": special, "singles": singles,
                   "pairs": pairs, "decoded": decoded}, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
