#!/usr/bin/python3
"""PyTorch 1.13 (Debian python3-torch) training BERT exactly as `bert_pretrain --benchmark` does:
random token ids, AdamW, MLM head at 15% of positions only, NSP, same batch and length. Tries
each thread count and reports the best. Last line: 'tokens/s: X'.

  /usr/bin/python3 bench/bert_pretrain_torch.py --model mini --batch 8 --seq-len 128 --steps 10 [--threads 1,2] [--autocast]

--autocast runs forward and losses under torch.autocast("cpu", dtype=torch.bfloat16), PyTorch's own
mixed precision (linear layers and matmuls in bf16 through oneDNN, fp32 weights and AdamW), the
peer of bert_pretrain --precision bf16."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import BertForPreTraining  # noqa: E402
from torch_peer import PRESETS, report_best  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", default="1,2")
p.add_argument("--autocast", action="store_true")
a = p.parse_args()
layers, hidden, heads = PRESETS[a.model]
cfg = dict(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
           intermediate_size=4 * hidden, hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2,
           layer_norm_eps=1e-12, pad_token_id=0)
torch.manual_seed(0)
model = BertForPreTraining(cfg)
model.train()
if a.autocast:
    # PyTorch 1.13's CPU autocast leaves layer_norm off its fp32 list, and its CPU kernel refuses a
    # bf16 input with fp32 weights (the MLM head's LayerNorm after a bf16 dense + GELU): cast the
    # input to fp32 there, as PyTorch 2.x's autocast policy does.
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.register_forward_pre_hook(lambda mod, inp: tuple(t.float() for t in inp))
drop = torch.nn.Dropout(0.1)  # BERT's dropout sites: embeddings, attention probabilities, sub-layer outputs
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
B, T = a.batch, a.seq_len
n_pred = max(1, round(0.15 * T))
ids = torch.randint(0, 30522, (B, T))
types = torch.cat([torch.zeros(B, T // 2, dtype=torch.long), torch.ones(B, T - T // 2, dtype=torch.long)], 1)
mask = torch.ones(B, T, dtype=torch.long)
positions = torch.tensor([b * T + (k * T) // n_pred for b in range(B) for k in range(n_pred)])
labels = torch.randint(0, 30522, (B * n_pred,))
nsp = torch.randint(0, 2, (B,))


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast):
        h, pooled = model.bert(ids, types, mask)
        rows = h.reshape(B * T, -1)[positions]  # the MLM head only where predictions are made
        loss = F.cross_entropy(model.cls.predictions(rows), labels) + F.cross_entropy(model.cls.seq_relationship(pooled), nsp)
    loss.backward()
    opt.step()


report_best(step, a.threads, a.steps, B * T)
