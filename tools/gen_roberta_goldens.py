#!/usr/bin/env python3
"""A random-init Hugging Face RobertaForMaskedLM saved as transformers writes it
(save_pretrained: config.json + model.safetensors), with inputs (padding, so position ids start at
padding_idx + 1 and skip padding), outputs, the MLM loss and every parameter gradient, for
tests/models/roberta/test_roberta.cpp.

Run: python3 tools/gen_roberta_goldens.py
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)
Writes tests/data/roberta_a/{config.json, model.safetensors, goldens.safetensors}."""
import os

import torch
from safetensors.torch import save_file
from transformers import RobertaConfig, RobertaForMaskedLM

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "roberta_a")

torch.manual_seed(33)
cfg = RobertaConfig(vocab_size=101, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                    hidden_act="gelu", max_position_embeddings=20, type_vocab_size=1, layer_norm_eps=1e-5,
                    pad_token_id=1, bos_token_id=0, eos_token_id=2)
model = RobertaForMaskedLM(cfg)
with torch.no_grad():  # larger than the default init, so errors are not hidden by tiny values
    for n, p in model.named_parameters():
        p.normal_(0, 0.2 if "LayerNorm" not in n and "layer_norm" not in n else 1.0)
        if n.endswith("LayerNorm.weight") or n.endswith("layer_norm.weight"):
            p.add_(1.0)
    model.roberta.embeddings.position_embeddings.weight[cfg.pad_token_id].zero_()  # HF's padding row
model.eval()  # no dropout: the reference is deterministic

B, T = 3, 11
ids = torch.randint(3, cfg.vocab_size, (B, T))
ids[:, 0] = 0  # <s>
mask = torch.ones(B, T, dtype=torch.int64)
mask[0, T - 4:] = 0
mask[2, T - 1:] = 0
ids[mask == 0] = cfg.pad_token_id
labels = torch.full((B, T), -100)
for b, positions in enumerate([[1, 3, 5], [0, 2, 7, 8], [4]]):
    for p in positions:
        labels[b, p] = int(torch.randint(3, cfg.vocab_size, ()))
out = model(input_ids=ids, attention_mask=mask, labels=labels, output_hidden_states=True)
out.loss.backward()

os.makedirs(OUT, exist_ok=True)
model.save_pretrained(OUT, safe_serialization=True)
g = {"input_ids": ids, "attention_mask": mask, "labels": labels,
     "last_hidden_state": out.hidden_states[-1].contiguous(), "logits": out.logits.contiguous(),
     "loss": out.loss.reshape(1).detach()}
for n, p in model.named_parameters():
    g["grad." + n] = p.grad.contiguous()
save_file({k: v.detach().contiguous() for k, v in g.items()}, os.path.join(OUT, "goldens.safetensors"),
          {"generator": "tools/gen_roberta_goldens.py"})
print("wrote", os.path.normpath(OUT), sum(p.numel() for p in model.parameters()), "parameters;",
      "names:", [n for n, _ in model.named_parameters()][:3], "...")
