#!/usr/bin/env python3
"""Checks a tokenizer directory written by xgrad against Hugging Face transformers.

    python tools/check_tokenizer_files.py DIR LINES [--bert-infer build/bin/bert_infer]

1. transformers' AutoTokenizer (fast and slow) loads DIR and gives the same ids as
   `bert_infer tokenize --model DIR` on every line of LINES;
2. transformers' own save_pretrained of that tokenizer writes the same tokenizer_config.json and
   special_tokens_map.json fields (differences are listed; added_tokens.json, tokenizer.json and
   the version-specific extra_special_tokens are transformers' own additions).
Works with transformers 4.x (`pip install "transformers<5"`, whose save_pretrained writes the same
three files) and 5.x (which reads them, but writes tokenizer.json instead).
Exits 1 when ids differ.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from transformers import AutoTokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("lines")
    ap.add_argument("--bert-infer", default="build/bin/bert_infer")
    a = ap.parse_args()
    with open(a.lines, encoding="utf-8", newline="\n") as f:  # lines as getline splits them
        lines = [l.rstrip("\n") for l in f]
    with open(a.lines, "rb") as f:
        out = subprocess.run([a.bert_infer, "tokenize", "--model", a.dir], stdin=f, capture_output=True, check=True)
    ours = [[int(x) for x in l.split()] for l in out.stdout.decode().splitlines()]
    assert len(ours) == len(lines), (len(ours), len(lines))
    bad = 0
    for fast in (True, False):
        tok = AutoTokenizer.from_pretrained(a.dir, use_fast=fast)
        diff = [i for i, l in enumerate(lines) if tok(l)["input_ids"] != ours[i]]
        print(f"{type(tok).__name__}: {len(lines) - len(diff)}/{len(lines)} lines give the same ids")
        for i in diff[:5]:
            print(f"  line {i + 1}: {lines[i]!r}\n    ours {ours[i]}\n    hf   {tok(lines[i])['input_ids']}")
        bad += len(diff)
    with tempfile.TemporaryDirectory() as tmp:
        AutoTokenizer.from_pretrained(a.dir, use_fast=True).save_pretrained(tmp)
        print("transformers re-saves:", sorted(os.listdir(tmp)))
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            if not os.path.exists(os.path.join(tmp, name)):  # transformers 5 writes no special_tokens_map.json
                continue
            with open(os.path.join(a.dir, name), encoding="utf-8") as f:
                mine = json.load(f)
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                theirs = json.load(f)
            for k in sorted(set(mine) | set(theirs)):
                if mine.get(k, "<absent>") != theirs.get(k, "<absent>"):
                    print(f"  {name} {k}: ours {mine.get(k, '<absent>')!r}, transformers {theirs.get(k, '<absent>')!r}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
