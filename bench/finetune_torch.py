#!/usr/bin/python3
"""PyTorch with Hugging Face's BertForSequenceClassification fine-tuning exactly as
`bert_finetune --benchmark` does: a BERT of the size preset (bert_pretrain's sizes, BERT's 30522
token vocabulary), random token ids with no padding, two labels, dropout on, cross-entropy,
AdamW, same batch and length. Searches its fastest setting (bench/torch_peer.py: thread count,
then AdamW implementation) and reports it. Last lines: 'setting: torch=... threads=T interop=I
optimizer=O attention=A' and 'examples/s: X'. Needs transformers (build/venv-ort: Debian's
python3-torch with PyPI's transformers 4.45.2; build/venv-torch2: PyPI's PyTorch 2.15 with
transformers 5.25).

  python bench/finetune_torch.py --model mini --batch 32 --seq-len 128 --steps 5 [--threads 1,2]
      [--optimizer all|fused,foreach,single] [--attention auto|eager|sdpa]

--optimizer and --attention as bench/hf_pretrain_torch.py's."""
import argparse

import torch
from transformers import BertConfig, BertForSequenceClassification

from torch_peer import PRESETS, adamw, choose, search, supported_optimizers

p = argparse.ArgumentParser()
p.add_argument("--model", default="mini")
p.add_argument("--batch", type=int, default=32)
p.add_argument("--seq-len", type=int, default=128)
p.add_argument("--steps", type=int, default=5)
p.add_argument("--labels", type=int, default=2)
p.add_argument("--threads", default="1,2")
p.add_argument("--optimizer", default="all", help="AdamW implementations to try: fused, foreach, single (comma-separated) or all")
p.add_argument("--attention", default="auto", help="transformers' attn_implementation: auto, eager, sdpa")
a = p.parse_args()
optimizers = choose(a.optimizer, supported_optimizers(), "--optimizer")
attn = {} if a.attention == "auto" else {"attn_implementation": a.attention}
torch.manual_seed(0)
layers, hidden, heads = PRESETS[a.model]
cfg = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                 intermediate_size=4 * hidden, max_position_embeddings=max(512, a.seq_len), num_labels=a.labels, **attn)
model = BertForSequenceClassification(cfg).train()
opt = None


def use_optimizer(variant):
    global opt
    opt = None  # the previous variant's state goes before the new one's is made
    opt = adamw(model.parameters(), variant, lr=5e-5, weight_decay=0.01)


B, T = a.batch, a.seq_len
ids = torch.randint(0, cfg.vocab_size, (B, T))
mask = torch.ones(B, T, dtype=torch.long)
types = torch.cat([torch.zeros(B, T // 2, dtype=torch.long), torch.ones(B, T - T // 2, dtype=torch.long)], 1)
labels = torch.randint(0, a.labels, (B,))


def step():
    opt.zero_grad(set_to_none=True)
    model(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=labels).loss.backward()
    opt.step()


attention = getattr(model.config, "_attn_implementation", None) or "eager"  # what transformers chose
search(step, a.threads, [("optimizer", optimizers, use_optimizer), ("attention", [attention], lambda _: None)], a.steps, B,
       unit="examples")
