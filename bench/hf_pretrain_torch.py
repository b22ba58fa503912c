#!/usr/bin/python3
"""PyTorch with Hugging Face's RobertaForMaskedLM or AlbertForPreTraining training exactly as
`bert_pretrain --benchmark --model FAMILY-SIZE` does: random token ids of the family's vocabulary,
AdamW, the MLM head at 15% of positions only, ALBERT's sentence-order head on the pooled output,
same batch and length, dropout as the family's config (RoBERTa 0.1, ALBERT 0, as xgrad's). Searches
its fastest setting (bench/torch_peer.py: thread count, then AdamW implementation) and reports it.
Last lines: 'setting: torch=... threads=T interop=I optimizer=O attention=A' and 'tokens/s: X'.
Needs transformers (build/venv-ort: Debian's python3-torch with PyPI's transformers 4.45.2;
build/venv-torch2: PyPI's PyTorch 2.15 with transformers 5.25).

  python bench/hf_pretrain_torch.py --family roberta --model mini --batch 8 --seq-len 128 --steps 10 [--threads 1,2]
      [--optimizer all|fused,foreach,single] [--attention auto|eager|sdpa]

--optimizer: torch.optim.AdamW's implementations to try (as bench/bert_pretrain_torch.py's).
--attention: transformers' attn_implementation; "auto" (the default) is transformers' own choice
(sdpa where this torch and model have it, else eager); the setting line names the one it ran."""
import argparse

import torch
import torch.nn.functional as F
from transformers import AlbertConfig, AlbertForPreTraining, RobertaConfig, RobertaForMaskedLM

from torch_peer import ALBERT_PRESETS, PRESETS, adamw, choose, search, supported_optimizers

p = argparse.ArgumentParser()
p.add_argument("--family", choices=["roberta", "albert"], default="roberta")
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--threads", default="1,2")
p.add_argument("--optimizer", default="all", help="AdamW implementations to try: fused, foreach, single (comma-separated) or all")
p.add_argument("--attention", default="auto", help="transformers' attn_implementation: auto, eager, sdpa")
a = p.parse_args()
optimizers = choose(a.optimizer, supported_optimizers(), "--optimizer")
attn = {} if a.attention == "auto" else {"attn_implementation": a.attention}
torch.manual_seed(0)
if a.family == "roberta":
    layers, hidden, heads = PRESETS[a.model]
    cfg = RobertaConfig(vocab_size=50265, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=4 * hidden, max_position_embeddings=max(514, a.seq_len + 2), type_vocab_size=1, **attn)
    model = RobertaForMaskedLM(cfg)
    encoder, mlm_head = model.roberta, model.lm_head
else:
    layers, hidden, heads, embedding = ALBERT_PRESETS[a.model]
    cfg = AlbertConfig(vocab_size=30000, embedding_size=embedding, hidden_size=hidden, num_hidden_layers=layers,
                       num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=max(512, a.seq_len), **attn)
    model = AlbertForPreTraining(cfg)
    encoder, mlm_head = model.albert, model.predictions
model.train()
opt = None


def use_optimizer(variant):
    global opt
    opt = None  # the previous variant's state goes before the new one's is made
    opt = adamw(model.parameters(), variant, lr=1e-4, weight_decay=0.01)


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


attention = getattr(model.config, "_attn_implementation", None) or "eager"  # what transformers chose
search(step, a.threads, [("optimizer", optimizers, use_optimizer), ("attention", [attention], lambda _: None)], a.steps, B * T)
