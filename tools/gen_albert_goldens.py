#!/usr/bin/env python3
"""A random-init Hugging Face AlbertForPreTraining saved as transformers writes it
(save_pretrained: config.json + model.safetensors), with 4 layers drawn from 2 groups of 2 shared
layers, a factorised embedding, inputs with padding, MLM labels and sentence-order labels, outputs,
losses and every parameter gradient, for tests/models/albert/test_albert.cpp.

Run: python3 tools/gen_albert_goldens.py
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1)
Writes tests/data/albert_a/{config.json, model.safetensors, goldens.safetensors}."""
import os

import torch
from safetensors.torch import save_file
from transformers import AlbertConfig, AlbertForPreTraining

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "albert_a")

torch.manual_seed(44)
cfg = AlbertConfig(vocab_size=97, embedding_size=16, hidden_size=32, num_hidden_layers=4, num_hidden_groups=2,
                   inner_group_num=2, num_attention_heads=4, intermediate_size=64, hidden_act="gelu_new",
                   max_position_embeddings=24, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0)
model = AlbertForPreTraining(cfg)
with torch.no_grad():  # larger than the default init, so errors are not hidden by tiny values
    for n, p in model.named_parameters():
        p.normal_(0, 0.2 if "LayerNorm" not in n and "layer_norm" not in n else 1.0)
        if n.endswith("LayerNorm.weight") or n.endswith("layer_norm.weight"):
            p.add_(1.0)
model.eval()

B, T = 3, 10
ids = torch.randint(1, cfg.vocab_size, (B, T))
types = torch.randint(0, cfg.type_vocab_size, (B, T))
mask = torch.ones(B, T, dtype=torch.int64)
mask[0, T - 3:] = 0
mask[2, T - 1:] = 0
ids[mask == 0] = cfg.pad_token_id
labels = torch.full((B, T), -100)
for b, positions in enumerate([[1, 3, 5], [0, 2, 7, 8], [4]]):
    for p in positions:
        labels[b, p] = int(torch.randint(1, cfg.vocab_size, ()))
sop = torch.tensor([0, 1, 1])
out = model(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels, sentence_order_label=sop,
            output_hidden_states=True)
out.loss.backward()
# transformers returns only the sum; recompute the parts as it does.
ce = torch.nn.CrossEntropyLoss()
mlm_loss = ce(out.prediction_logits.view(-1, cfg.vocab_size), labels.view(-1))
sop_loss = ce(out.sop_logits.view(-1, 2), sop.view(-1))

os.makedirs(OUT, exist_ok=True)
model.save_pretrained(OUT, safe_serialization=True)
pooled = model.albert.pooler_activation(model.albert.pooler(out.hidden_states[-1][:, 0]))
g = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels,
     "sentence_order_label": sop, "last_hidden_state": out.hidden_states[-1], "pooler_output": pooled,
     "prediction_logits": out.prediction_logits, "sop_logits": out.sop_logits, "loss": out.loss.reshape(1),
     "mlm_loss": mlm_loss.reshape(1), "sop_loss": sop_loss.reshape(1)}
for n, p in model.named_parameters():
    g["grad." + n] = p.grad
save_file({k: v.detach().contiguous() for k, v in g.items()}, os.path.join(OUT, "goldens.safetensors"),
          {"generator": "tools/gen_albert_goldens.py"})
print("wrote", os.path.normpath(OUT), sum(p.numel() for p in model.parameters()), "parameters;",
      len([n for n, _ in model.named_parameters()]), "tensors")
