#!/usr/bin/env python3
"""Writes tests/data/tokenizer_json/: tokenizer directories as transformers 5 saves them
(tokenizer.json and tokenizer_config.json only, no vocab.txt / vocab.json / merges.txt), made by
loading the slow files with transformers and saving again:

  bert-base-uncased/  from data/bert-base-uncased-vocab.txt (the ids of tests/data/tokenizer_goldens.json)
  roberta-small/      from tests/data/bpe_trainer/roberta/{vocab.json,merges.txt}
  albert-small/       from tests/data/spiece/spiece.model (the ids of tests/data/spiece/goldens.json)

    python3 -m venv VENV && VENV/bin/pip install transformers==5.25.0 tokenizers==0.23.3 sentencepiece==0.2.3 protobuf
    VENV/bin/python tools/gen_tokenizer_json_goldens.py
"""
import os
import shutil
import sys
import tempfile

import transformers
from transformers import AlbertTokenizer, BertTokenizer, RobertaTokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "tests", "data", "tokenizer_json")
SOURCES = {
    "bert-base-uncased": (BertTokenizer, {"vocab.txt": "data/bert-base-uncased-vocab.txt"}),
    "roberta-small": (RobertaTokenizer, {"vocab.json": "tests/data/bpe_trainer/roberta/vocab.json",
                                         "merges.txt": "tests/data/bpe_trainer/roberta/merges.txt"}),
    "albert-small": (AlbertTokenizer, {"spiece.model": "tests/data/spiece/spiece.model"}),
}


def main():
    if not transformers.__version__.startswith("5."):
        sys.exit(f"needs transformers 5 (it saves tokenizer.json alone), found {transformers.__version__}")
    for name, (cls, files) in SOURCES.items():
        with tempfile.TemporaryDirectory() as src:
            for target, source in files.items():
                shutil.copy(os.path.join(ROOT, source), os.path.join(src, target))
            tok = cls.from_pretrained(src)
            out = os.path.join(OUT, name)
            shutil.rmtree(out, ignore_errors=True)
            tok.save_pretrained(out)
            print(name, sorted(os.listdir(out)), tok("Hello, world!")["input_ids"])


if __name__ == "__main__":
    main()
