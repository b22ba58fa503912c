#!/usr/bin/env python3
"""Linear probes of checkpoints' sentence vectors: for each checkpoint directory, `bert_infer embed`
with --pooling cls (the first token's last hidden state, what the sequence classifiers read) and
--pooling mean, then a logistic regression (scikit-learn, standardised features) fitted on the
training set's vectors and scored on the dev set. Also the mean cosine similarity between the
first-token vectors of different sentences: near 1, they hardly depend on the sentence.

  python3 tools/probe_pooling.py --train TRAIN.tsv --dev DEV.tsv CHECKPOINT...
(TSVs with a header and label, text columns, as bert_finetune reads them; needs scikit-learn)"""
import argparse
import os
import subprocess

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

p = argparse.ArgumentParser()
p.add_argument("checkpoints", nargs="+")
p.add_argument("--train", required=True)
p.add_argument("--dev", required=True)
p.add_argument("--bert-infer", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "bert_infer"))
a = p.parse_args()


def read(path):
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [r[0] for r in rows], [r[1] for r in rows]


def embed(checkpoint, texts, pooling):
    out = subprocess.run([a.bert_infer, "embed", "--model", checkpoint, "--pooling", pooling], input="\n".join(texts) + "\n",
                         capture_output=True, text=True, check=True).stdout
    return np.array([[float(v) for v in line.split()] for line in out.strip().split("\n")])


(train_y, train_x), (dev_y, dev_x) = read(a.train), read(a.dev)
print("| checkpoint | first-token probe | mean-pooled probe | first-token cosine between sentences |")
print("|---|---|---|---|")
for c in a.checkpoints:
    scores = {}
    for pooling in ("cls", "mean"):
        tr, dv = embed(c, train_x, pooling), embed(c, dev_x, pooling)
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(tr, train_y)
        scores[pooling] = probe.score(dv, dev_y)
        if pooling == "cls":
            unit = dv / np.linalg.norm(dv, axis=1, keepdims=True)
            sim = unit @ unit.T
            scores["cosine"] = (sim.sum() - len(sim)) / (len(sim) * (len(sim) - 1))
    print(f"| {c} | {scores['cls']:.3f} | {scores['mean']:.3f} | {scores['cosine']:.3f} |")
