#!/usr/bin/env python3
"""Hugging Face tokenizers' throughput on the same text as bench_tokenizer: one line at a time,
and encode_batch (Rust threads; RAYON_NUM_THREADS sets how many). VOCAB is BERT's vocab.txt
(WordPiece) or a byte-level BPE NAMEvocab.json with NAMEmerges.txt beside it (RoBERTa's pipeline).

    VENV/bin/python tools/bench_tokenizer_hf.py VOCAB TEXT [seconds] [cased]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_bert_pipeline import bert_tokenizer  # noqa: E402
from hf_roberta_pipeline import roberta_tokenizer  # noqa: E402


def rate(megabytes, budget_s, one_pass):
    """MB/s over repeated passes for at least budget_s, after one warm-up pass."""
    one_pass()
    passes = 0
    t0 = time.perf_counter()
    while True:
        one_pass()
        passes += 1
        secs = time.perf_counter() - t0
        if secs >= budget_s:
            return megabytes * passes / secs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    vocab, text_path = sys.argv[1:3]
    budget_s = float(sys.argv[3]) if len(sys.argv) > 3 else 3.0
    cased = len(sys.argv) > 4 and sys.argv[4] == "cased"
    if vocab.endswith("vocab.json"):
        t = roberta_tokenizer(vocab, vocab[:-len("vocab.json")] + "merges.txt")
    else:
        t = bert_tokenizer(vocab, cased)
    with open(text_path, encoding="utf-8", newline="") as f:
        lines = [line for line in f.read().split("\n") if line]
    megabytes = sum(len(line.encode("utf-8")) + 1 for line in lines) / 1e6

    def each_line():
        for line in lines:
            t.encode(line)

    one = rate(megabytes, budget_s, each_line)
    batch = rate(megabytes, budget_s, lambda: t.encode_batch(lines))
    print(f"MB/s 1 line at a time: {one:.2f}")
    print(f"MB/s encodeBatch (RAYON_NUM_THREADS={os.environ.get('RAYON_NUM_THREADS', 'all')}): {batch:.2f}")


if __name__ == "__main__":
    main()
