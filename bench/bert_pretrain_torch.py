#!/usr/bin/python3
"""PyTorch training BERT exactly as `bert_pretrain --benchmark` does: random token ids, AdamW,
dropout 0.1 where BERT has it (the embeddings' output, attention probabilities, attention and FFN
output projections), MLM head at 15% of positions only, NSP, same batch and length. Searches its
fastest setting (bench/torch_peer.py: thread count, then AdamW implementation, then attention
path) and reports it. Last lines: 'setting: torch=... threads=T interop=I optimizer=O
attention=A' and 'tokens/s: X'. Runs on Debian's python3-torch 1.13 and on PyTorch 2.x.

  python bench/bert_pretrain_torch.py --model mini --batch 8 --seq-len 128 --steps 10 [--threads 1,2]
      [--optimizer all|fused,foreach,single] [--attention all|sdpa,manual] [--dropout 0.1] [--autocast]

--optimizer: torch.optim.AdamW's implementations to try (same hyper-parameters, weight decay on
every parameter as before): "fused" (CPU from PyTorch 2.4), "foreach", "single" (the default loop).
--attention: "sdpa" (torch.nn.functional.scaled_dot_product_attention with the boolean padding
mask and dropout_p, PyTorch >= 2.0) or "manual" (softmax(q k^T / sqrt(d) + mask), dropout, @ v).
"all" (the default of both): every one this torch has.
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
from torch_bert import ATTENTION, BertForPreTraining  # noqa: E402
from torch_peer import PRESETS, adamw, choose, search, supported_optimizers  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", default="1,2")
p.add_argument("--optimizer", default="all", help="AdamW implementations to try: fused, foreach, single (comma-separated) or all")
p.add_argument("--attention", default="all", help="attention paths to try: sdpa, manual (comma-separated) or all")
p.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout, as bert_pretrain's BertConfig")
p.add_argument("--autocast", action="store_true")
a = p.parse_args()
optimizers = choose(a.optimizer, supported_optimizers(), "--optimizer")
attentions = choose(a.attention, [x for x in reversed(ATTENTION) if x != "sdpa" or hasattr(F, "scaled_dot_product_attention")],
                    "--attention")
layers, hidden, heads = PRESETS[a.model]
cfg = dict(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
           intermediate_size=4 * hidden, hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2,
           layer_norm_eps=1e-12, pad_token_id=0)
torch.manual_seed(0)
model = BertForPreTraining(cfg, hidden_dropout=a.dropout, attention_dropout=a.dropout, attention=attentions[0])
model.train()
if a.autocast:
    # LayerNorm in fp32, as bert_pretrain --precision bf16 does (bf16 GEMMs, fp32 activations):
    # PyTorch 1.13's CPU autocast leaves layer_norm off its fp32 list and its CPU kernel refuses a
    # bf16 input with fp32 weights (the MLM head's LayerNorm after a bf16 dense + GELU); 2.x's takes
    # that input but returns bf16, which would carry the residual stream in bf16. On both the input
    # is cast to fp32 here, so the normalisation and the residual stream stay fp32.
    for m in model.modules():
        if isinstance(m, torch.nn.LayerNorm):
            m.register_forward_pre_hook(lambda mod, inp: tuple(t.float() for t in inp))
opt = None


def use_optimizer(variant):
    global opt
    opt = None  # the previous variant's state goes before the new one's is made
    opt = adamw(model.parameters(), variant, lr=1e-4, weight_decay=0.01)


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


search(step, a.threads, [("optimizer", optimizers, use_optimizer), ("attention", attentions, model.bert.set_attention)],
       a.steps, B * T)
