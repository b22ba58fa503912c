#!/usr/bin/env python3
"""Loads a classifier checkpoint bert_finetune wrote (OUT/best) with transformers'
AutoModelForSequenceClassification and AutoTokenizer and prints its accuracy on a labelled TSV
(header row, label in the first column, text in the second), to compare with bert_finetune's
report: equal accuracy means the checkpoint, its labels and its tokenizer mean the same in both.

Run: python3 tools/check_classifier_checkpoint.py OUT/best dev.tsv [max_len]
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)."""
import sys

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

directory, tsv = sys.argv[1], sys.argv[2]
max_len = int(sys.argv[3]) if len(sys.argv) > 3 else 128
tok = AutoTokenizer.from_pretrained(directory)
model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
rows = [line.rstrip("\n").split("\t") for line in open(tsv, encoding="utf-8")][1:]
correct = 0
with torch.no_grad():
    for i in range(0, len(rows), 32):
        batch = rows[i:i + 32]
        enc = tok([r[1] for r in batch], truncation=True, max_length=max_len, padding=True, return_tensors="pt")
        predicted = model(**enc).logits.argmax(-1)
        correct += sum(model.config.id2label[int(p)] == r[0] for p, r in zip(predicted, batch))
print(f"{type(model).__name__} labels {model.config.id2label}: accuracy {correct / len(rows)} on {len(rows)} lines")
