#!/usr/bin/python3
"""Sentence embeddings of tests/data/bert_a's golden batch as sentence-transformers computes them
(models/Pooling.py: mean over the attention mask with the count clamped at 1e-9, or the [CLS]
vector; models/Normalize.py: torch.nn.functional.normalize, p=2), from the reference's own
last_hidden_state, for tests/models/core/test_sentence_embedding.cpp.

Run: python3 tools/gen_pooling_goldens.py   (needs torch 1.13: pip install torch==1.13.1)
Writes tests/data/bert_a/pooling_goldens.safetensors."""
import os

import torch
import torch.nn.functional as F

from torch_bert import read_safetensors, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "tests", "data", "bert_a")

g = read_safetensors(os.path.join(DIR, "goldens.safetensors"))
h = g["last_hidden_state"].double()
mask = g["attention_mask"].unsqueeze(-1).double()
mean = (h * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
cls = h[:, 0]
write_safetensors(os.path.join(DIR, "pooling_goldens.safetensors"), {
    "mean": mean.float(), "mean_normalized": F.normalize(mean, p=2, dim=1).float(),
    "cls": cls.float(), "cls_normalized": F.normalize(cls, p=2, dim=1).float()})
print("wrote", os.path.join(DIR, "pooling_goldens.safetensors"))
