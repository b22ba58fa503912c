#!/usr/bin/env python3
"""Writes tests/data/tokenizer_goldens.json (tricky lines, pairs with truncation, decodes) and
tests/data/tokenizer_corpus.{txt,uncased.ids,cased.ids} (corpus lines and their ids), all
produced by Hugging Face's tokenizers (PyPI `tokenizers`, pinned below) with the BERT-Base
uncased vocabulary. The Python port of the former Node script (tools/hf/gen_tokenizer_goldens.mjs,
same Rust core and version): same inputs, same bytes out, except the "generator" field.

    python3 -m venv VENV && VENV/bin/pip install tokenizers==0.23.2
    VENV/bin/python tools/gen_tokenizer_goldens.py data/bert-base-uncased-vocab.txt CORPUS.txt [--out DIR]

CORPUS.txt was the full 11.9 MB pre-training corpus (see data/README.md); --out defaults to
tests/data.
"""
import argparse
import json
import os
import sys

import tokenizers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bert_pipeline import TOKENIZERS_VERSION, bert_tokenizer  # noqa: E402

# ---- tricky lines, written by hand ----
HAND = [
    'Hello, world!', 'The quick brown fox jumps over the lazy dog.', "Don't stop; it's O'Neil's U.S.A. trip, e.g. today.",
    'Héllo wörld, naïve café, façade, Ångström, crème brûlée.', 'ÀÁÂÃÄÅ àáâãäå ÇçÑñ ØøŒœÆæ', 'Straße groß ß ẞ',
    'İstanbul ıi İI', 'ǅungla ǆ Ǆ', 'ΟΔΥΣΣΕΥΣ Σίσυφος ς', 'ﬁnance ﬂow ﬀ', 'ＡＢＣ　ｄｅｆ１２３', 'Ⅻ ⅻ ① ②',
    '東京は日本の首都です。', '北京欢迎你！', '한국어 텍스트입니다', 'カタカナ ひらがな', '漢字とかなの混じった文', '𠀀𠀁 𪜀 CJK Ext B',
    'Русский текст, Ёлка!', 'Ελληνικά κείμενα', 'العربية نص', 'עברית טקסט', 'हिन्दी पाठ', 'ภาษาไทย', 'Tiếng Việt có dấu',
    '🥰 emoji 😀😃😄', '👍🏽 thumbs 👨‍👩‍👧‍👦 family', '🇺🇸🇫🇷 flags', '❤️ heart ☺️', 'a😀b😀c', ':-) ;-( :D <3',
    '!!!???...', '--- ___ *** ###', '«guillemets» “curly” ‘single’ „low“', '(parens) [brackets] {braces} <angles>',
    '¡Hola! ¿Qué tal?', 'wait…what', '— em dash – en dash', '§ ¶ † ‡ • ※', '@user #hashtag $5 50% 3.14 1,000,000 -42 +7',
    '€100 £50 ¥1000 ₹20 ₿', '∑∫√∞≈≠≤≥ ±×÷', 'x=y+1; if(a&&b||c) {return;}', 'C++ C# F# .NET Node.js',
    'https://example.com/path?q=1&r=two#frag', 'mailto:someone@example.org', 'www.test.co.uk/index.html', '<br/><b>bold</b>',
    '192.168.0.1:8080', '2024-01-15T10:30:00Z', '12:30pm 3rd 21st 1990s', 'phone: +1 (555) 123-4567',
    'tab\there', 'new\nline', 'carriage\rreturn', 'mixed \t\n\r  whitespace   runs', '\u00a0nbsp\u00a0here',
    'zero\u200bwidth\u200cjoin\u200d', 'soft\u00adhyphen', 'bom\ufeffhere', 'nul\u0000char', 'bell\u0007ctrl\u001b[0m',
    'del\u007fhere', 'vt\u000bff\u000cnel\u0085ls\u2028ps\u2029', 'replacement\ufffdchar', 'private\ue000use',
    'ideographic\u3000space', 'thin\u2009space\u200ahair', 'e\u0301 a\u0308\u0323 o\u0323\u0308', 'A\u030a vs \u00c5',
    'ḍ̇ q̣̇ combining order', 'Z̤̈a̗l̖g̘o̙ text', 'un\u0301icode\u0327 marks', 'ä (precomposed) vs ä (decomposed)',
    'supercalifragilisticexpialidocious', 'antidisestablishmentarianism', 'pneumonoultramicroscopicsilicovolcanoconiosis',
    'a' * 100, 'b' * 101, 'c' * 150 + ' short', 'x' * 99 + '!', 'hello' + 'é' * 97,
    'the [MASK] sat on the mat', 'the[MASK]sat', '[CLS] already [SEP] here [PAD]', '[mask] lowercase is not special',
    '[MASK [MASK] MASK]', '[UNK][UNK] twice', '[SEP][SEP]', 'unknowntokenzzzqqq', 'qwxzjvkq', 'ǂǃǁ clicks',
    'MiXeD CaSe WoRdS', 'ALL CAPS SENTENCE HERE', 'CamelCaseIdentifier snake_case_name kebab-case-name',
    "rock 'n' roll", 'can\'t won\'t shouldn\'t y\'all', '"quoted" \'single\' `back`', 'end.', '.start', '...',
    'a.b.c.d', 'x/y\\z|w', '~tilde ^caret', 'under_score', 'num3r1c m1x', '007 bond 1e10 0x1F 0b101',
    '', ' ', '   ', '\t\n', '.', 'a', 'Z', '1', '東', '😀', 'é',
]

# ---- generated lines: seeded mixes of fragments ----
FRAGS = [
    'the', 'BERT', 'model', 'café', 'naïve', '東京', '😀', '!!', '...', ',', "don't", 'https://x.org', '3.14',
    'über', 'Ωmega', 'привет', '\t', '  ', '\u200b', '[MASK]', 'résumé', 'coöperate', '한국', 'e\u0301', '“', '”', '(', ')',
    'ﬁ', 'ß', 'İ', '¿', '—', 'C++', '#tag', '@me', '100%', 'Ǆ', 'a\u0308', '🇫🇷', 'co-operate', 'x' * 30
]


def js_lcg(seed):
    """The Node script's generator: seed = (seed * 1103515245 + 12345) % 2^31 in JavaScript
    numbers, i.e. doubles. The product exceeds 2^53 and is rounded, so Python floats (the same
    IEEE doubles) reproduce it and exact integers would not."""
    state = float(seed)

    def rand(n):
        nonlocal state
        state = (state * 1103515245.0 + 12345.0) % 2147483648.0
        return int(state) % n
    return rand


def generated_lines():
    rand = js_lcg(12345)
    out = []
    for _ in range(230):
        n = 1 + rand(12)
        s = ""
        for _ in range(n):
            sep = "" if rand(3) == 0 else " "  # drawn before the fragment, as in the Node script
            s += sep + FRAGS[rand(len(FRAGS))]
        out.append(s)
    return out


# ---- pairs with every truncation strategy ----
PAIR_TEXTS = [
    ("What is the capital of France?", "Paris is the capital and most populous city of France."),
    ("Who wrote Moby-Dick?", "Herman Melville wrote it in 1851, and it became a classic of American literature."),
    ("short", "a much longer second sequence that will need to be truncated quite a bit more than the first"),
    ("a much longer first sequence that will need to be truncated quite a bit more than the second", "short"),
    ("Héllo wörld 東京", "naïve café 😀 [MASK] end"),
    ("one two three four five six", "seven eight nine ten eleven twelve"),
]
# The goldens keep the Node binding's strategy names; the Python binding spells them in snake case.
STRATEGIES = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}


def pair_cases():
    return [{"a": a, "b": b, "maxLength": max_length, "strategy": strategy}
            for a, b in PAIR_TEXTS for max_length in (0, 8, 9, 12, 16, 40) for strategy in STRATEGIES]


def run(vocab_path, cased, lines, pairs):
    t = bert_tokenizer(vocab_path, cased)
    single = []
    for text in lines:
        e = t.encode(text)
        single.append({"text": text, "ids": e.ids, "offsets": [list(o) for o in e.offsets]})
    pair_out = []
    for p in pairs:
        if p["maxLength"] > 0:
            t.enable_truncation(p["maxLength"], strategy=STRATEGIES[p["strategy"]])
        else:
            t.no_truncation()
        try:
            e = t.encode(p["a"], p["b"])
        except Exception:  # the Rust error (e.g. "sequence to truncate too short") is what is recorded
            pair_out.append({**p, "error": True})
            continue
        pair_out.append({**p, "ids": e.ids, "type_ids": e.type_ids, "offsets": [list(o) for o in e.offsets]})
    t.no_truncation()
    decode = [{"ids": s["ids"], "text": t.decode(s["ids"], skip_special_tokens=True)} for s in single[:150]]
    return {"single": single, "pairs": pair_out, "decode": decode}


# JavaScript's String.prototype.trim() whitespace (WhiteSpace and LineTerminator), which differs
# from Python's str.strip() (no U+FEFF, but U+001C..U+001F and U+0085).
JS_WHITESPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
                "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def pick_corpus_lines(corpus_path):
    """Every 20th non-blank line of the corpus, 3000 at most."""
    with open(corpus_path, encoding="utf-8", errors="replace", newline="") as f:
        corpus = [line for line in f.read().split("\n") if line.strip(JS_WHITESPACE)]
    return corpus[::20][:3000]


def write_text(path, text):
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def write_corpus(vocab_path, picked, out):
    write_text(os.path.join(out, "tokenizer_corpus.txt"), "\n".join(picked) + "\n")
    for cased in (False, True):
        enc = bert_tokenizer(vocab_path, cased).encode_batch(picked)
        write_text(os.path.join(out, f"tokenizer_corpus.{'cased' if cased else 'uncased'}.ids"),
                   "\n".join(" ".join(map(str, e.ids)) for e in enc) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vocab")
    parser.add_argument("corpus")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data"))
    args = parser.parse_args()
    if tokenizers.__version__ != TOKENIZERS_VERSION:
        sys.exit(f"tokenizers {tokenizers.__version__} is installed; the goldens need {TOKENIZERS_VERSION}")

    lines = HAND + generated_lines()
    pairs = pair_cases()
    goldens = {"generator": "tools/gen_tokenizer_goldens.py", "tokenizers": tokenizers.__version__,
               "uncased": run(args.vocab, False, lines, pairs), "cased": run(args.vocab, True, lines, pairs)}
    # JSON.stringify's layout: no spaces, non-ASCII written as is, control characters as \\u00xx.
    write_text(os.path.join(args.out, "tokenizer_goldens.json"),
               json.dumps(goldens, ensure_ascii=False, separators=(",", ":")))

    picked = pick_corpus_lines(args.corpus)
    write_corpus(args.vocab, picked, args.out)
    print(f"wrote {len(lines)} lines, {len(pairs)} pairs, {len(picked)} corpus lines to {args.out}")


if __name__ == "__main__":
    main()
