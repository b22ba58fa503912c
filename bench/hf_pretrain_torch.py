#!/usr/bin/python3
"""PyTorch with Hugging Face's RobertaForMaskedLM or AlbertForPreTraining training exactly as
`bert_pretrain --benchmark --model FAMILY-SIZE` does: random token ids of the family's vocabulary,
AdamW, the MLM head at 15% of positions only, ALBERT's sentence-order head on the pooled output,
same batch and length. Tries each thread count and reports the best. Last line: 'tokens/s: X'.
Needs transformers (e.g. a venv made with --system-site-packages over Debian's python3-torch).

  python bench/hf_pretrain_torch.py --family roberta --model mini --batch 8 --seq-len 128 --steps 10 [--threads 1,2]"""
import argparse

import torch
import torch.nn.functional as F
from transformers import AlbertConfig, AlbertForPreTraining, RobertaConfig, RobertaForMaskedLM

from torch_peer import ALBERT_PRESETS, PRESETS, report_best

p = argparse.ArgumentParser()
p.add_argument("--family", choices=["roberta", "albert"], default="roberta")
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", default="1,2")
a = p.parse_args()
torch.manual_seed(0)
if a.family == "roberta":
    layers, hidden, heads = PRESETS[a.model]
    cfg = RobertaConfig(vocab_size=50265, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden, max_position_embeddings=max(514, a.seq_len + 2), type_vocab_size=1)
    model = RobertaForMaskedLM(cfg)
    encoder, mlm_head = model.roberta, model.lm_head
else:
    layers, hidden, heads, embedding = ALBERT_PRESETS[a.model]
    cfg = AlbertConfig(vocab_size=30000, embedding_size=embedding, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=max(512, a.seq_len))
    model = AlbertForPreTraining(cfg)
    encoder, mlm_head = model.albert, model.predictions
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
V, B, T = cfg.vocab_size, a.batch, a.seq_len
n_pred = max(1, round(0.15 * T))
ids = torch.randint(0, V, (B, T))
mask = torch.ones(B, T, dtype=torch.long)
types = torch.cat([torch.zeros(B, T // 2, dtype=torch.long), torch.ones(B, T - T // 2, dtype=torch.long)], 1)
positions = torch.tensor([b * T + (k * T) // n_pred for b in range(B) for k in range(n_pred)])
labels = torch.randint(0, V, (B * n_pred,))
sop = torch.randint(0, 2, (B,))


def step():
    opt.zero_grad(set_to_none=True)
    if a.family == "roberta":
        out = encoder(input_ids=ids, attention_mask=mask)
    else:
        out = encoder(input_ids=ids, attention_mask=mask, token_type_ids=types)
    rows = out.last_hidden_state.reshape(B * T, -1)[positions]  # the MLM head only where predictions are made
    loss = F.cross_entropy(mlm_head(rows), labels)
    if a.family == "albert":
        loss = loss + F.cross_entropy(model.sop_classifier(out.pooler_output), sop)
    loss.backward()
    opt.step()


report_best(step, a.threads, a.steps, B * T)
