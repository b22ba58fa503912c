#!/usr/bin/env python3
"""Writes tests/data/bpe_train_corpus.txt and, for each setting below, the vocab.json and
merges.txt Hugging Face's BpeTrainer (tokenizers 0.20.3, PyPI) trains from it behind a ByteLevel
pre-tokenizer with ByteLevel.alphabet() as the initial alphabet, into tests/data/bpe_trainer/NAME/.

    VENV/bin/python tools/gen_bpe_trainer_goldens.py [--out DIR]

The corpus: the first 300 lines of data/pretrain_corpus_small.txt and the byte-level hard lines of
tools/gen_bpe_goldens.py (tabs, runs of spaces, emoji, scripts, contractions, numbers). Each
setting is trained twice in fresh tokenizers to show the result does not depend on hash order.
"""
import argparse
import os
import sys

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_bpe_goldens import BPE_LINES  # noqa: E402

ROOT = os.path.join(HERE, "..")
SETTINGS = {
    "roberta": dict(vocab_size=800, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                    add_prefix_space=False),
    "prefix_space": dict(vocab_size=600, min_frequency=0, special_tokens=[], add_prefix_space=True),
    "min_frequency": dict(vocab_size=5000, min_frequency=8, special_tokens=["<pad>"], add_prefix_space=False),
}


def train(corpus, s):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=s["add_prefix_space"])
    trainer = trainers.BpeTrainer(vocab_size=s["vocab_size"], min_frequency=s["min_frequency"],
                                  special_tokens=s["special_tokens"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train([corpus], trainer)
    return tok


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data"))
    args = parser.parse_args()
    if tokenizers.__version__ != "0.20.3":
        sys.exit(f"tokenizers {tokenizers.__version__} is installed; the goldens need 0.20.3")
    with open(os.path.join(ROOT, "data", "pretrain_corpus_small.txt"), encoding="utf-8", newline="") as f:
        head = f.read().split("\n")[:300]
    corpus = os.path.join(args.out, "bpe_train_corpus.txt")
    with open(corpus, "w", encoding="utf-8", newline="") as f:
        f.write("\n".join(head + BPE_LINES) + "\n")
    for name, s in SETTINGS.items():
        out = os.path.join(args.out, "bpe_trainer", name)
        os.makedirs(out, exist_ok=True)
        train(corpus, s).model.save(out)
        again = os.path.join(out, "again")
        os.makedirs(again, exist_ok=True)
        train(corpus, s).model.save(again)
        for f in ("vocab.json", "merges.txt"):
            with open(os.path.join(out, f), "rb") as a, open(os.path.join(again, f), "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{name}/{f} differs between two trainings")
            os.remove(os.path.join(again, f))
        os.rmdir(again)
        with open(os.path.join(out, "merges.txt"), encoding="utf-8") as m:
            print(f"{name}: {sum(1 for _ in m) - 1} merges")


if __name__ == "__main__":
    main()
