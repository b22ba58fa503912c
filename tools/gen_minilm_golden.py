#!/usr/bin/python3
"""Sentence embeddings of all-MiniLM-L6-v2 (tools/get_minilm.sh) as sentence-transformers computes
them: transformers' BertModel, mean pooling over the attention mask, L2 normalisation
(the model's modules.json: Transformer, Pooling mean, Normalize), on real sentences (the text
column of data/sentiment_uci.tsv). sentence-transformers itself is not needed: its two modules
are the four lines in `reference`.

  python3 tools/gen_minilm_golden.py --model DIR            writes the golden
  python3 tools/gen_minilm_golden.py --model DIR --bert-infer build/bin/bert_infer --lines 3000
      also runs bert_infer embed --pooling mean --normalize on the first N sentences and prints the
      largest difference from the reference.
The golden (first 8 sentences, every dimension) goes to tests/data/minilm/{sentences.txt,
embeddings.txt}, for tests/cli/minilm_embeddings.sh.
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)"""
import argparse
import csv
import os
import subprocess

import numpy as np
import torch
import torch.nn.functional as F
from transformers import AutoModel, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
GOLDEN_SENTENCES = 8


def reference(model_dir, sentences, batch=64):
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(sentences), batch):
            enc = tok(sentences[i:i + batch], padding=True, truncation=True, max_length=256, return_tensors="pt")
            h = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).float()
            mean = (h * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
            out.append(F.normalize(mean, p=2, dim=1))
    return torch.cat(out).numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--bert-infer")
    ap.add_argument("--lines", type=int, default=200)
    a = ap.parse_args()
    with open(os.path.join(ROOT, "data", "sentiment_uci.tsv"), newline="") as f:
        sentences = [row["text"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    sentences = sentences[: max(a.lines, GOLDEN_SENTENCES)]
    ref = reference(a.model, sentences)

    out = os.path.join(ROOT, "tests", "data", "minilm")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "sentences.txt"), "w") as f:
        f.writelines(s + "\n" for s in sentences[:GOLDEN_SENTENCES])
    with open(os.path.join(out, "embeddings.txt"), "w") as f:
        for v in ref[:GOLDEN_SENTENCES]:
            f.write(" ".join(f"{x:.8g}" for x in v) + "\n")
    print(f"golden: {GOLDEN_SENTENCES} sentences x {ref.shape[1]} dimensions in {out}")

    if a.bert_infer:
        got = subprocess.run([a.bert_infer, "embed", "--model", a.model, "--pooling", "mean", "--normalize"],
                             input="\n".join(sentences) + "\n", capture_output=True, text=True, check=True).stdout
        ours = np.array([[float(x) for x in line.split()] for line in got.splitlines()])
        assert ours.shape == ref.shape, (ours.shape, ref.shape)
        diff = np.abs(ours - ref).max()
        cos = (ours * ref).sum(1).min()
        print(f"bert_infer vs reference on {len(sentences)} sentences: max |difference| {diff:.3g}, "
              f"lowest cosine {cos:.9f}")


if __name__ == "__main__":
    main()
