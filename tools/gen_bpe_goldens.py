#!/usr/bin/env python3
"""Writes tests/data/bpe_goldens.json and tests/data/tokenizer_corpus.roberta.ids: byte-level BPE
ids, offsets and decodes produced by Hugging Face's RobertaTokenizerFast (transformers 4.45.2,
tokenizers 0.20.3, PyPI) on GPT-2's vocab.json and merges.txt (data/gpt2-*). With those files the
special tokens are appended: <s> 50257, </s> 50258, <unk> 50259, <pad> 50260, <mask> 50261.

    VENV/bin/python tools/gen_bpe_goldens.py [--out DIR]

Lines: the WordPiece goldens' hand-written and generated lines (tools/gen_tokenizer_goldens.py),
lines for what byte-level BPE does differently (whitespace runs, tabs, newlines, emoji sequences,
contractions, numbers, <mask> with the space before it), pairs with every truncation strategy,
decodes of the encodings and of random id sequences (bytes that are not valid UTF-8 among them),
and the ids of the first 1000 lines of tests/data/tokenizer_corpus.txt.
"""
import argparse
import json
import os
import random
import sys

import tokenizers
import transformers
from transformers import RobertaTokenizerFast

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_tokenizer_goldens import HAND, PAIR_TEXTS, STRATEGIES, generated_lines  # noqa: E402

ROOT = os.path.join(HERE, "..")
VOCAB = os.path.join(ROOT, "data", "gpt2-vocab.json")
MERGES = os.path.join(ROOT, "data", "gpt2-merges.txt")

BPE_LINES = [
    "tab\tseparated\tvalues", "\ttab first", "trailing tab\t", "a\t\tb", "new\nline\n\nparagraph", "\n\n\nx",
    "crlf\r\nline", "two  spaces", "three   spaces", "ten          spaces", "  leading", "trailing  ", "   ",
    " \t \n mixed", "a \nb", "a \n b", "x\u3000\u3000y", "\u00a0\u00a0nbsp", " \u2003em", "end \u2028",
    "it's they're we've I'm you'll he'd don't", "IT'S THEY'RE I'M", "'s 't 're 've 'm 'll 'd", "''s ''t", "'sup 'llama",
    "rock'n'roll", "o'clock ma'am", "it\u2019s curly", "he said 'hi'", "?'s", " 's", "'S",
    "123 4567 89012345 1,234.56 -7 +8 1e-9", "3.14159 2024 10:30 50%", "x1y2z3", "abc123def", "١٢٣ ٤٥٦ arabic digits",
    "Ⅻ roman ½ ⅓ fractions ²³ super", "🙂🙃 😀😃😄😁", "👩‍💻 👨‍👩‍👧 🏳️‍🌈", "👍🏻👍🏼👍🏽👍🏾👍🏿", "🇯🇵🇩🇪🇬🇧", "#️⃣ 1️⃣ keycaps",
    "emoji😀glued", " 😀 spaced", "a\u0301\u0302\u0303 stacked marks", "e\u0301", "\u0301 leading mark",
    "the <mask> sat", "the  <mask>", "the\t<mask>", "<mask>x", "x<mask>", "<mask> <mask>", "  <mask>  ",
    "x" + " " * 300 + "<mask>", "hello <s>world</s>", "<s><s></s>", "<pad> <unk>", "<mas k> <MASK> < mask>", "Ġ literal G-dot Ċ",
    "\u0120\u0120 stand-ins", "ĠĠ", "é", "ÿ", "\u00ad soft", "\x7f del", "\x01\x02 controls",
    "日本語のテキスト", "中文 文本", "한국어", "Здравствуй, мир!", "مرحبا بالعالم", "शब्द", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math", "𠀀",
    "supercalifragilisticexpialidocious" * 3, "x" * 300, "ab" * 150, "!" * 50, " " * 40 + "end",
    "https://example.com/a_b-c?d=e&f=g#h", "user@example.org", "C:\\Program Files\\x", "<html><body>hi</body></html>",
    "def f(x):\n    return x**2  # square\n", "SELECT * FROM t WHERE a='b';", "{\"json\": [1, 2, {\"k\": null}]}",
]

PAIR_EXTRA = [("the <mask> sat", "on the   mat"), ("tabs\tand\nnewlines", "😀 emoji 👩‍💻")]


def roberta(add_prefix_space=False, trim_offsets=True):
    t = RobertaTokenizerFast(VOCAB, MERGES, add_prefix_space=add_prefix_space, trim_offsets=trim_offsets)
    return t.backend_tokenizer


def single(t, lines):
    out = []
    for text in lines:
        e = t.encode(text)
        out.append({"text": text, "ids": e.ids, "offsets": [list(o) for o in e.offsets]})
    return out


def pairs(t):
    out = []
    for a, b in PAIR_TEXTS + PAIR_EXTRA:
        for max_length in (0, 8, 9, 12, 16, 40):
            for strategy, snake in STRATEGIES.items():
                if max_length > 0:
                    t.enable_truncation(max_length, strategy=snake)
                else:
                    t.no_truncation()
                case = {"a": a, "b": b, "maxLength": max_length, "strategy": strategy}
                try:
                    e = t.encode(a, b)
                except Exception:  # the Rust error ("sequence to truncate too short") is what is recorded
                    out.append({**case, "error": True})
                    continue
                out.append({**case, "ids": e.ids, "type_ids": e.type_ids, "offsets": [list(o) for o in e.offsets]})
    t.no_truncation()
    return out


def random_ids(t):
    """Id sequences of every kind: byte tokens (ids 0..255 here are the 256 byte stand-ins, so
    stray continuation and lead bytes), words, special tokens."""
    rng = random.Random(7)
    n = t.get_vocab_size(with_added_tokens=True)
    seqs = []
    for _ in range(300):
        seq = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            seq.append(rng.randrange(256) if r < 0.5 else rng.randrange(n - 5, n) if r < 0.6 else rng.randrange(n))
        seqs.append(seq)
    return seqs


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data"))
    args = parser.parse_args()
    if (tokenizers.__version__, transformers.__version__) != ("0.20.3", "4.45.2"):
        sys.exit(f"tokenizers {tokenizers.__version__}, transformers {transformers.__version__} installed; "
                 "the goldens need 0.20.3 and 4.45.2")
    t = roberta()
    lines = HAND + BPE_LINES + generated_lines()
    base = single(t, lines)
    decodes = []
    for s in base:
        decodes.append({"ids": s["ids"], "skip": True, "text": t.decode(s["ids"], skip_special_tokens=True)})
        decodes.append({"ids": s["ids"], "skip": False, "text": t.decode(s["ids"], skip_special_tokens=False)})
    for seq in random_ids(t):
        decodes.append({"ids": seq, "skip": True, "text": t.decode(seq, skip_special_tokens=True)})
        decodes.append({"ids": seq, "skip": False, "text": t.decode(seq, skip_special_tokens=False)})
    goldens = {
        "generator": "tools/gen_bpe_goldens.py", "tokenizers": tokenizers.__version__,
        "transformers": transformers.__version__,
        "single": base,
        "add_prefix_space": single(roberta(add_prefix_space=True), HAND + BPE_LINES),
        "no_trim_offsets": single(roberta(trim_offsets=False), HAND + BPE_LINES),
        "pairs": pairs(t),
        "decode": decodes,
    }
    with open(os.path.join(args.out, "bpe_goldens.json"), "w", encoding="utf-8", newline="") as f:
        json.dump(goldens, f, ensure_ascii=False, separators=(",", ":"))

    with open(os.path.join(args.out, "tokenizer_corpus.txt"), encoding="utf-8", newline="") as f:
        corpus = f.read().split("\n")[:1000]
    enc = t.encode_batch(corpus)
    with open(os.path.join(args.out, "tokenizer_corpus.roberta.ids"), "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(" ".join(map(str, e.ids)) for e in enc) + "\n")
    print(f"wrote {len(lines)} lines, {len(goldens['pairs'])} pairs, {len(decodes)} decodes, {len(corpus)} corpus lines")


if __name__ == "__main__":
    main()
