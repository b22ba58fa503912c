#!/usr/bin/env python3
"""Loads a RoBERTa, ALBERT or ELECTRA checkpoint directory (written by xgrad or by transformers) with
transformers' from_pretrained (the class its config.json names: RobertaForMaskedLM,
AlbertForPreTraining, AlbertForMaskedLM, ElectraForPreTraining, ElectraForMaskedLM), runs a padded
batch with MLM labels (sentence-order labels for AlbertForPreTraining; replaced-token labels, 0 or 1
at every position, for ElectraForPreTraining, whose generator, when saved beside it, transformers
ignores), and compares with `bert_infer dump --grads` on the same directory
and inputs: last_hidden_state, the logits, the loss and every parameter gradient by its Hugging
Face name. Exits 1 if anything differs by more than 1e-4 (outputs) / 1e-3 (gradients), relative
to the largest magnitude.

  python3 tools/check_family_checkpoint.py DIR [--bert-infer build/bin/bert_infer]
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch
from safetensors.torch import load_file, save_file
import transformers

p = argparse.ArgumentParser()
p.add_argument("checkpoint")
p.add_argument("--bert-infer", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "bert_infer"))
a = p.parse_args()

with open(os.path.join(a.checkpoint, "config.json")) as f:
    architecture = json.load(f)["architectures"][0]
model = getattr(transformers, architecture).from_pretrained(a.checkpoint)
model.eval()
cfg = model.config
torch.manual_seed(0)
B, T = 2, min(9, cfg.max_position_embeddings - cfg.pad_token_id - 1)
ids = torch.randint(3, cfg.vocab_size, (B, T))
mask = torch.ones(B, T, dtype=torch.int64)
mask[1, T - 3:] = 0
ids[mask == 0] = cfg.pad_token_id
labels = torch.full((B, T), -100)
labels[0, 2], labels[1, 1] = 5, 7
if architecture == "ElectraForPreTraining":  # the discriminator: is each token replaced?
    labels = torch.randint(0, 2, (B, T))
extra = {"sentence_order_label": torch.tensor([0, 1])} if architecture == "AlbertForPreTraining" else {}
out = model(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=True, **extra)
out.loss.backward()

with tempfile.TemporaryDirectory() as tmp:
    inputs, dumped = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    save_file({"input_ids": ids, "attention_mask": mask, "labels": labels, **extra}, inputs)
    subprocess.run([a.bert_infer, "dump", "--model", a.checkpoint, "--inputs", inputs, "--out", dumped, "--grads"],
                   check=True)
    ours = load_file(dumped)


def err(x, ref):
    return float((x.float() - ref.float()).abs().max() / max(1.0, float(ref.abs().max())))


worst, failed = {}, False
logits = [("prediction_logits", out.prediction_logits), ("sop_logits", out.sop_logits)] \
    if architecture == "AlbertForPreTraining" else [("logits", out.logits)]
for name, ref, tol in [("last_hidden_state", out.hidden_states[-1], 1e-4), ("loss", out.loss.reshape(1), 1e-4)] + \
        [(n, r, 1e-4) for n, r in logits]:
    worst[name] = err(ours[name].reshape(ref.shape), ref.detach())
    failed |= worst[name] > tol
grads = 0
for n, prm in model.named_parameters():
    e = err(ours["grad." + n], prm.grad)
    worst["gradients"] = max(worst.get("gradients", 0.0), e)
    failed |= e > 1e-3
    grads += 1
print(f"{a.checkpoint}: {grads} gradients; max scaled errors " + ", ".join(f"{k} {v:.1e}" for k, v in worst.items()))
sys.exit(1 if failed else 0)
