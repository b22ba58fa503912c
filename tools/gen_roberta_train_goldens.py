#!/usr/bin/env python3
"""RoBERTa's pre-training update, step for step, in transformers + torch: tests/data/roberta_a's
RobertaForMaskedLM (dropout off, so both sides are deterministic), MLM loss on padded batches,
gradient clipping to norm 1, torch.optim.AdamW with RoBERTa's betas (0.9, 0.98) and eps 1e-6,
weight decay 0.01 except on biases and LayerNorm weights, and transformers'
get_linear_schedule_with_warmup (2 warm-up steps of 6). Records each step's loss and gradient
norm and the weights after the last step, for tests/test_roberta.cpp.

Run: /work/venv-hf/bin/python tools/gen_roberta_train_goldens.py
Writes tests/data/roberta_a/train_goldens.safetensors."""
import os

import torch
from safetensors.torch import save_file
from transformers import RobertaForMaskedLM, get_linear_schedule_with_warmup

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "..", "tests", "data", "roberta_a")
STEPS, WARMUP, LR = 6, 2, 3e-3

model = RobertaForMaskedLM.from_pretrained(DIR)
model.eval()  # no dropout
cfg = model.config
torch.manual_seed(5)
B, T = 2, 9
batches = []
for k in range(2):
    ids = torch.randint(3, cfg.vocab_size, (B, T))
    ids[:, 0] = 0
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[k, T - 3:] = 0
    ids[mask == 0] = cfg.pad_token_id
    labels = torch.full((B, T), -100)
    for b in range(B):
        for p in torch.randperm(T - 3)[:3] + 1:
            labels[b, p] = int(torch.randint(3, cfg.vocab_size, ()))
    batches.append((ids, mask, labels))

no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n]
decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n)]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=LR,
                        betas=(0.9, 0.98), eps=1e-6)
sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
losses, norms = [], []
for step in range(STEPS):
    ids, mask, labels = batches[step % 2]
    opt.zero_grad()
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    loss.backward()
    norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
    losses.append(float(loss))
    opt.step()
    sched.step()

g = {"losses": torch.tensor(losses), "grad_norms": torch.tensor(norms)}
for k, (ids, mask, labels) in enumerate(batches):
    g[f"input_ids.{k}"], g[f"attention_mask.{k}"], g[f"labels.{k}"] = ids, mask, labels
for n, p in model.named_parameters():
    g["weight." + n] = p.detach()
save_file({k: v.contiguous() for k, v in g.items()}, os.path.join(DIR, "train_goldens.safetensors"),
          {"generator": "tools/gen_roberta_train_goldens.py", "steps": str(STEPS), "warmup": str(WARMUP), "lr": str(LR)})
print("losses", [f"{l:.5f}" for l in losses], "grad norms", [f"{n:.4f}" for n in norms])
