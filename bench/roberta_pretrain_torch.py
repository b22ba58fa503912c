#!/usr/bin/python3
"""PyTorch with Hugging Face's RobertaForMaskedLM training exactly as `bert_pretrain --benchmark
--model roberta-SIZE` does: random token ids of RoBERTa's vocabulary (50265), one segment, AdamW
with RoBERTa's beta2 0.98 and eps 1e-6, the LM head at 15% of positions only, same batch and
length. Tries each thread count and reports the best. Last line: 'tokens/s: X'. Needs transformers
(e.g. a venv made with --system-site-packages over Debian's python3-torch).

  python bench/roberta_pretrain_torch.py --model mini --batch 8 --seq-len 128 --steps 10 [--threads 1,2]"""
import argparse

import torch
import torch.nn.functional as F
from transformers import RobertaConfig, RobertaForMaskedLM

from torch_peer import PRESETS, report_best

p = argparse.ArgumentParser()
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", default="1,2")
a = p.parse_args()
layers, hidden, heads = PRESETS[a.model]
V = 50265
cfg = RobertaConfig(vocab_size=V, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                    intermediate_size=4 * hidden, max_position_embeddings=max(514, a.seq_len + 2), type_vocab_size=1,
                    attn_implementation="eager")
torch.manual_seed(0)
model = RobertaForMaskedLM(cfg)
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, betas=(0.9, 0.98), eps=1e-6)
B, T = a.batch, a.seq_len
n_pred = max(1, round(0.15 * T))
ids = torch.randint(0, V, (B, T))
mask = torch.ones(B, T, dtype=torch.long)
positions = torch.tensor([b * T + (k * T) // n_pred for b in range(B) for k in range(n_pred)])
labels = torch.randint(0, V, (B * n_pred,))


def step():
    opt.zero_grad(set_to_none=True)
    h = model.roberta(input_ids=ids, attention_mask=mask).last_hidden_state
    rows = h.reshape(B * T, -1)[positions]  # the LM head only where predictions are made
    loss = F.cross_entropy(model.lm_head(rows), labels)
    loss.backward()
    opt.step()


report_best(step, a.threads, a.steps, B * T)
