#!/usr/bin/python3
"""Loads a checkpoint directory written by xgrad (config.json + model.safetensors) into the
plain-PyTorch BERT of tools/torch_bert.py (Hugging Face names), runs the inputs, and compares with
`bert_infer dump` on the same checkpoint and inputs: outputs, losses and, with --grads, every
gradient. Exits 1 if anything differs by more than 1e-4 (outputs) / 1e-3 (gradients), relative
to the largest magnitude.

  /usr/bin/python3 tools/check_checkpoint.py CHECKPOINT_DIR [--bert-infer build/bin/bert_infer]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import BertForPreTraining, read_safetensors, write_safetensors  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("checkpoint")
p.add_argument("--bert-infer", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin", "bert_infer"))
a = p.parse_args()

cfg = json.load(open(os.path.join(a.checkpoint, "config.json")))
model = BertForPreTraining(cfg)
weights = read_safetensors(os.path.join(a.checkpoint, "model.safetensors"))
missing, unexpected = model.load_state_dict({k: v.float() for k, v in weights.items()}, strict=False)
assert not missing and not unexpected, (missing, unexpected)
model.eval()

torch.manual_seed(0)
B, T = 3, min(16, cfg["max_position_embeddings"])
ids = torch.randint(1, cfg["vocab_size"], (B, T))
mask = torch.ones(B, T, dtype=torch.long)
mask[1, T - 5:] = 0
ids[mask == 0] = 0
types = torch.zeros(B, T, dtype=torch.long)
types[:, T // 2:] = 1
labels = torch.full((B, T), -100)
labels[0, 2], labels[1, 4], labels[2, 7], labels[2, 9] = 5, 6, 7, 8
nsp = torch.tensor([1, 0, 1])
with tempfile.TemporaryDirectory() as tmp:
    inputs, out = os.path.join(tmp, "in.safetensors"), os.path.join(tmp, "out.safetensors")
    write_safetensors(inputs, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types, "labels": labels,
                               "next_sentence_label": nsp})
    subprocess.run([a.bert_infer, "dump", "--model", a.checkpoint, "--inputs", inputs, "--out", out, "--grads"], check=True)
    ours = read_safetensors(out)
ref = model(ids, types, mask, labels, nsp)
ref["loss"].backward()
worst_out = worst_grad = 0.0
for k in ("last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits", "loss", "mlm_loss", "nsp_loss"):
    e = float((ours[k].reshape(ref[k].shape) - ref[k].detach()).abs().max() / max(1.0, float(ref[k].abs().max())))
    worst_out = max(worst_out, e)
    print(f"{k:24s} max scaled error {e:.2e}")
for n, prm in model.named_parameters():
    e = float((ours["grad." + n] - prm.grad).abs().max() / max(1.0, float(prm.grad.abs().max())))
    worst_grad = max(worst_grad, e)
print(f"{sum(1 for _ in model.parameters())} gradients: max scaled error {worst_grad:.2e}")
ok = worst_out <= 1e-4 and worst_grad <= 1e-3
print("checkpoint loads into PyTorch with matching outputs and gradients" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
