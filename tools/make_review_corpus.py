#!/usr/bin/env python3
"""Turns data/sentiment_uci.tsv (3,000 review sentences: Amazon, IMDB, Yelp) into a pre-training
corpus in the BERT format, a domain unlike the bundled corpus (Moby-Dick and State of the Union
addresses): consumer reviews, short and colloquial. Each document is SIZE consecutive sentences of
one source; documents alternate between the sources, so the last 2% that bert_pretrain holds out
for evaluation come from all three. Labels are not used.

usage: tools/make_review_corpus.py [data/sentiment_uci.tsv] [OUT] [--size 10]
"""
import argparse
import csv
import itertools

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("tsv", nargs="?", default="data/sentiment_uci.tsv")
parser.add_argument("out", nargs="?", default="runs/review_corpus.txt")
parser.add_argument("--size", type=int, default=10, help="sentences per document")
args = parser.parse_args()

by_source = {}
with open(args.tsv, newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
        by_source.setdefault(row["source"], []).append(" ".join(row["text"].split()))
docs = {s: [lines[i:i + args.size] for i in range(0, len(lines), args.size)] for s, lines in by_source.items()}
with open(args.out, "w", encoding="utf-8") as out:
    n = 0
    for group in itertools.zip_longest(*docs.values()):
        for doc in group:
            if doc:
                out.write("\n".join(doc) + "\n\n")
                n += 1
print(f"{args.out}: {n} documents, {sum(len(v) for v in by_source.values())} sentences from {', '.join(docs)}")
