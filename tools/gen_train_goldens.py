#!/usr/bin/env python3
"""A pre-training update, step for step, in transformers + torch, for tests/models/roberta/test_roberta.cpp and
tests/models/albert/test_albert.cpp: tests/data/roberta_a's RobertaForMaskedLM (MLM loss) or tests/data/albert_a's
AlbertForPreTraining (MLM + sentence-order loss; its layers shared: 4 distinct layers applied 8
times), dropout off so both sides are deterministic, padded batches, gradient clipping to norm 1,
torch.optim.AdamW (RoBERTa's betas (0.9, 0.98) for RoBERTa, torch's for ALBERT; eps 1e-6), weight decay 0.01 except on biases and LayerNorm weights, and transformers'
get_linear_schedule_with_warmup (2 warm-up steps of 6). Records each step's loss and gradient
norm and the weights after the last step.

Run: python3 tools/gen_train_goldens.py roberta|albert
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)
Writes tests/data/{roberta_a,albert_a}/train_goldens.safetensors."""
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import AlbertForPreTraining, RobertaForMaskedLM, get_linear_schedule_with_warmup

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILY = sys.argv[1] if len(sys.argv) > 1 else "roberta"
DIR = os.path.join(HERE, "..", "tests", "data", FAMILY + "_a")
STEPS, WARMUP, LR = 6, 2, 3e-3
# eps 1e-6 for both (BERT's original): with 1e-8 Adam turns float noise in the exactly-zero
# gradient of attention key biases into full-size steps, which no two implementations share.
BETAS, EPS = ((0.9, 0.98), 1e-6) if FAMILY == "roberta" else ((0.9, 0.999), 1e-6)

model = (RobertaForMaskedLM if FAMILY == "roberta" else AlbertForPreTraining).from_pretrained(DIR)
model.eval()  # no dropout
cfg = model.config
torch.manual_seed(5)
B, T = 2, 9
batches = []
for k in range(2):
    ids = torch.randint(3, cfg.vocab_size, (B, T))
    ids[:, 0] = 0 if FAMILY == "roberta" else 2  # <s> / [CLS]
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[k, T - 3:] = 0
    ids[mask == 0] = cfg.pad_token_id
    labels = torch.full((B, T), -100)
    for b in range(B):
        for p in torch.randperm(T - 3)[:3] + 1:
            labels[b, p] = int(torch.randint(3, cfg.vocab_size, ()))
    batches.append((ids, mask, labels, torch.tensor([k, 1 - k])))  # the last: sentence-order labels

no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n]
decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n or "layer_norm" in n)]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=LR,
                        betas=BETAS, eps=EPS)
sched = get_linear_schedule_with_warmup(opt, WARMUP, STEPS)
losses, norms = [], []
for step in range(STEPS):
    ids, mask, labels, order = batches[step % 2]
    opt.zero_grad()
    if FAMILY == "roberta":
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    else:
        loss = model(input_ids=ids, attention_mask=mask, labels=labels, sentence_order_label=order).loss
    loss.backward()
    norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
    losses.append(float(loss))
    opt.step()
    sched.step()

g = {"losses": torch.tensor(losses), "grad_norms": torch.tensor(norms)}
for k, (ids, mask, labels, order) in enumerate(batches):
    g[f"input_ids.{k}"], g[f"attention_mask.{k}"], g[f"labels.{k}"] = ids, mask, labels
    g[f"sentence_order_label.{k}"] = order
for n, p in model.named_parameters():
    g["weight." + n] = p.detach()
save_file({k: v.contiguous() for k, v in g.items()}, os.path.join(DIR, "train_goldens.safetensors"),
          {"generator": "tools/gen_train_goldens.py " + FAMILY, "steps": str(STEPS), "warmup": str(WARMUP), "lr": str(LR)})
print("losses", [f"{l:.5f}" for l in losses], "grad norms", [f"{n:.4f}" for n in norms])
