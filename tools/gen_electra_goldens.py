#!/usr/bin/env python3
"""Random-init Hugging Face ELECTRA models saved as transformers writes them (save_pretrained: config.json +
model.safetensors), with a padded batch, their labels, outputs, loss and every parameter gradient, for
tests/models/electra/test_electra.cpp: the discriminator (ElectraForPreTraining), the generator
(ElectraForMaskedLM) and the four task heads. Embeddings 6 wide under a hidden width of 8 (so
embeddings_project is exercised) but for the sequence classifier, whose equal widths have none.

Run: python3 tools/gen_electra_goldens.py
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1).
Writes tests/data/electra/<case>/{config.json, model.safetensors, goldens.safetensors}."""
import os

import torch
from safetensors.torch import save_file
from transformers import (ElectraConfig, ElectraForMaskedLM, ElectraForMultipleChoice, ElectraForPreTraining,
                          ElectraForQuestionAnswering, ElectraForSequenceClassification, ElectraForTokenClassification)
from transformers.utils import logging

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "electra")
logging.set_verbosity_error()

# Tiny, so the goldens stay a few kilobytes; the sizes differ so a transposed weight cannot pass.
BASE = dict(vocab_size=30, embedding_size=6, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=12, hidden_act="gelu", max_position_embeddings=12, type_vocab_size=2, layer_norm_eps=1e-12,
            pad_token_id=0)
B, T = 3, 7

CASES = {
    # name: class, extra config, labels
    "pretraining": (ElectraForPreTraining, dict(),  # 1 = replaced; padding positions carry labels the loss ignores
                    {"labels": torch.tensor([[0, 1, 0, 0, 1, 1, 0], [0, 0, 1, 0, 1, 0, 0], [1, 0, 0, 0, 0, 1, 1]])}),
    "mlm": (ElectraForMaskedLM, dict(),
            {"labels": torch.tensor([[-100, 5, -100, 17, -100, -100, -100], [-100, -100, 2, -100, 29, 11, -100],
                                     [8, -100, -100, -100, -100, 3, -100]])}),
    "seq": (ElectraForSequenceClassification, dict(embedding_size=8, num_labels=3, classifier_dropout=0.2),
            {"labels": torch.tensor([2, 0, 1])}),
    "token": (ElectraForTokenClassification, dict(num_labels=5),
              {"labels": torch.tensor([[-100, 1, 4, 0, -100, -100, -100], [-100, 2, 2, 3, 1, 0, -100],
                                       [-100, 4, 0, 1, 1, 3, -100]])}),
    "qa": (ElectraForQuestionAnswering, dict(),
           {"start_positions": torch.tensor([1, 3, 0]), "end_positions": torch.tensor([2, 40, 0])}),
}


def randomise(model):
    with torch.no_grad():  # larger than the default init, so errors are not hidden by tiny values
        for n, p in model.named_parameters():
            p.normal_(0, 0.3 if "LayerNorm" not in n else 1.0)
            if n.endswith("LayerNorm.weight"):
                p.add_(1.0)
    model.eval()  # no dropout: the reference is deterministic


def write(name, model, batch, labels):
    out = model(**batch, **labels)
    out.loss.backward()
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    g = {"input_ids": batch["input_ids"], "token_type_ids": batch["token_type_ids"], "attention_mask": batch["attention_mask"],
         "loss": out.loss.reshape(1)}
    g.update(labels)
    for k in ("logits", "start_logits", "end_logits"):
        if getattr(out, k, None) is not None:
            g[k] = out[k]
    for n, p in model.named_parameters():
        g["grad." + n] = p.grad
    save_file({k: v.detach().contiguous() for k, v in g.items()}, os.path.join(d, "goldens.safetensors"),
              {"generator": "tools/gen_electra_goldens.py"})
    print("wrote", os.path.normpath(d), sum(p.numel() for p in model.parameters()), "parameters")


torch.manual_seed(52)
ids = torch.randint(1, BASE["vocab_size"], (B, T))
types = torch.zeros(B, T, dtype=torch.int64)
types[:, 4:] = 1
mask = torch.ones(B, T, dtype=torch.int64)
mask[0, T - 3:] = 0  # padding
mask[2, T - 1:] = 0
ids[mask == 0] = 0
types[mask == 0] = 0

for seed, (name, (cls, extra, labels)) in enumerate(CASES.items()):
    torch.manual_seed(300 + seed)
    model = cls(ElectraConfig(**dict(BASE, **extra)))
    randomise(model)
    write(name, model, dict(input_ids=ids, token_type_ids=types, attention_mask=mask), labels)

# Multiple choice: (B, C, T) inputs, one score per choice, the right choice's id as the label.
torch.manual_seed(400)
C = 3
mc_ids = torch.randint(3, BASE["vocab_size"], (2, C, T))
mc_types = torch.zeros(2, C, T, dtype=torch.int64)
mc_types[:, :, 3:] = 1
mc_mask = torch.ones(2, C, T, dtype=torch.int64)
mc_mask[0, 1, 5:] = 0
mc_mask[1, 2, 4:] = 0
mc_ids[mc_mask == 0] = 0
mc_types[mc_mask == 0] = 0
model = ElectraForMultipleChoice(ElectraConfig(**BASE))
randomise(model)
write("multiple_choice", model, dict(input_ids=mc_ids, token_type_ids=mc_types, attention_mask=mc_mask),
      {"labels": torch.tensor([2, 0])})
