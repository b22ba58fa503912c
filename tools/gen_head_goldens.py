#!/usr/bin/env python3
"""Random-init Hugging Face task heads (BERT's, RoBERTa's and ALBERT's) saved as transformers writes them (save_pretrained:
config.json + model.safetensors), with a padded batch, their labels, outputs, loss and every
parameter gradient, for tests/models/core/test_heads.cpp; and what from_pretrained reports when the BERT
pre-training checkpoint tests/data/bert_a is loaded into BertForSequenceClassification.

Run: python3 tools/gen_head_goldens.py [--only CASE,...]
(needs transformers==4.45.2 and torch 1.13: pip install transformers==4.45.2 torch==1.13.1).
--only writes those cases alone and leaves the others' files as they are.
Writes tests/data/heads/<case>/{config.json, model.safetensors, goldens.safetensors} and
tests/data/heads/loading_info.json."""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import (AlbertConfig, AlbertForMaskedLM, AlbertForMultipleChoice, AlbertForQuestionAnswering,
                          BertForMaskedLM, BertForMultipleChoice,
                          RobertaForMultipleChoice, AlbertForSequenceClassification,
                          AlbertForTokenClassification, BertConfig, BertForQuestionAnswering, BertForSequenceClassification,
                          BertForTokenClassification, RobertaConfig, RobertaForQuestionAnswering,
                          RobertaForSequenceClassification, RobertaForTokenClassification)
from transformers.utils import logging

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "heads")
logging.set_verbosity_error()

# Tiny, so the goldens stay a few kilobytes; the sizes differ so a transposed weight cannot pass.
BASE = dict(vocab_size=30, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=12,
            hidden_act="gelu", max_position_embeddings=12, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=0)
# RoBERTa: one token type, padding id 1, positions from padding_idx + 1 (room for 7 + 2)
ROBERTA = dict(BASE, type_vocab_size=1, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)
# ALBERT: factorised embeddings (6 wide), 2 layers sharing one group
ALBERT = dict(vocab_size=30, embedding_size=6, hidden_size=8, num_hidden_layers=2, num_hidden_groups=1, num_attention_heads=2,
              intermediate_size=12, hidden_act="gelu_new", max_position_embeddings=12, type_vocab_size=2, pad_token_id=0)
B, T = 3, 7

CASES = {
    # name: class, config class, extra config, labels maker
    "seq_single": (BertForSequenceClassification,
                   dict(id2label={0: "negative", 1: "neutral", 2: "positive"},
                        label2id={"negative": 0, "neutral": 1, "positive": 2}, classifier_dropout=0.2),
                   lambda g: {"labels": torch.tensor([2, 0, 1])}),
    "seq_regression": (BertForSequenceClassification, dict(num_labels=1),
                       lambda g: {"labels": torch.tensor([0.5, -1.25, 2.0])}),
    "seq_multi": (BertForSequenceClassification, dict(num_labels=3, problem_type="multi_label_classification"),
                  lambda g: {"labels": torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]])}),
    "token": (BertForTokenClassification, dict(num_labels=5),
              lambda g: {"labels": torch.tensor([[-100, 1, 4, 0, -100, -100, -100], [-100, 2, 2, 3, 1, 0, -100],
                                                 [-100, 4, 0, 1, 1, 3, -100]])}),
    # the second row's end lies beyond the window (clamped to T and ignored, as transformers does)
    "qa": (BertForQuestionAnswering, dict(),
           lambda g: {"start_positions": torch.tensor([1, 3, 0]), "end_positions": torch.tensor([2, 40, 0])}),
    "roberta_seq": (RobertaForSequenceClassification, dict(num_labels=3, classifier_dropout=0.3),
                    lambda g: {"labels": torch.tensor([1, 2, 0])}),
    "roberta_token": (RobertaForTokenClassification, dict(num_labels=4),
                      lambda g: {"labels": torch.tensor([[-100, 1, 3, 0, -100, -100, -100], [-100, 2, 2, 3, 1, 0, -100],
                                                         [-100, 0, 0, 1, 1, 3, -100]])}),
    "roberta_qa": (RobertaForQuestionAnswering, dict(),
                   lambda g: {"start_positions": torch.tensor([2, 1, 5]), "end_positions": torch.tensor([3, 4, 9])}),
    "albert_seq": (AlbertForSequenceClassification, dict(num_labels=1),  # regression
                   lambda g: {"labels": torch.tensor([1.5, -0.5, 0.25])}),
    "albert_token": (AlbertForTokenClassification, dict(num_labels=3),
                     lambda g: {"labels": torch.tensor([[-100, 1, 2, 0, -100, -100, -100], [-100, 2, 2, 0, 1, 0, -100],
                                                        [-100, 0, 0, 1, 1, 2, -100]])}),
    "albert_qa": (AlbertForQuestionAnswering, dict(),
                  lambda g: {"start_positions": torch.tensor([3, 0, 2]), "end_positions": torch.tensor([4, 0, 6])}),
    # masked-LM alone (bert_pretrain --pairing doc-sentences|full-sentences): labels at masked positions only
    "mlm": (BertForMaskedLM, dict(),
            lambda g: {"labels": torch.tensor([[-100, 5, -100, 17, -100, -100, -100], [-100, -100, 2, -100, 29, 11, -100],
                                                [8, -100, -100, -100, -100, 3, -100]])}),
    "albert_mlm": (AlbertForMaskedLM, dict(),
                   lambda g: {"labels": torch.tensor([[-100, -100, 9, 4, -100, -100, -100], [-100, 1, -100, -100, 22, -100, -100],
                                                       [-100, -100, -100, 14, -100, 27, -100]])}),
}
# --only NAME,...: write those cases alone (regenerated elsewhere, the others move by float rounding)
ONLY = set(sys.argv[sys.argv.index("--only") + 1].split(",")) if "--only" in sys.argv else None
if ONLY is not None and not ONLY <= set(CASES):
    sys.exit(f"--only: no case {sorted(ONLY - set(CASES))}; the cases: {', '.join(CASES)}")
# Added after the multiple-choice goldens were made, which draw their inputs from the random state
# the cases leave: these run on a forked state, so a full run still makes the same inputs.
LATER_CASES = {"mlm", "albert_mlm"}

torch.manual_seed(44)
ids = torch.randint(1, BASE["vocab_size"], (B, T))
types = torch.zeros(B, T, dtype=torch.int64)
types[:, 4:] = 1
mask = torch.ones(B, T, dtype=torch.int64)
mask[0, T - 3:] = 0  # padding
mask[2, T - 1:] = 0
ids[mask == 0] = 0
types[mask == 0] = 0

# RoBERTa's batch: <s> first, padding with id 1 (its positions skip padding)
roberta_ids = ids.clone()
roberta_ids[roberta_ids < 3] = 3
roberta_ids[:, 0] = 0
roberta_ids[mask == 0] = 1

def write_case(seed, name, cls, extra, make_labels):
    torch.manual_seed(100 + seed)
    roberta = name.startswith("roberta")
    if roberta:
        model = cls(RobertaConfig(**ROBERTA, **extra))
    elif name.startswith("albert"):
        model = cls(AlbertConfig(**ALBERT, **extra))
    else:
        model = cls(BertConfig(**BASE, **extra))
    with torch.no_grad():  # larger than the default init, so errors are not hidden by tiny values
        for n, p in model.named_parameters():
            p.normal_(0, 0.3 if "LayerNorm" not in n else 1.0)
            if n.endswith("LayerNorm.weight"):
                p.add_(1.0)
        if roberta:
            model.roberta.embeddings.position_embeddings.weight[ROBERTA["pad_token_id"]].zero_()  # HF's padding row
    model.eval()  # no dropout: the reference is deterministic
    labels = make_labels(None)
    batch = dict(input_ids=roberta_ids, attention_mask=mask) if roberta else dict(input_ids=ids, token_type_ids=types,
                                                                                attention_mask=mask)
    out = model(**batch, **labels)
    out.loss.backward()
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    g = {"input_ids": batch["input_ids"], "token_type_ids": types if not roberta else torch.zeros_like(types),
         "attention_mask": mask, "loss": out.loss.reshape(1)}
    g.update(labels)
    for k in ("logits", "start_logits", "end_logits"):
        if getattr(out, k, None) is not None:
            g[k] = out[k]
    for n, p in model.named_parameters():
        g["grad." + n] = p.grad
    save_file({k: v.detach().contiguous() for k, v in g.items()}, os.path.join(d, "goldens.safetensors"),
              {"generator": "tools/gen_head_goldens.py"})
    print("wrote", os.path.normpath(d), sum(p.numel() for p in model.parameters()), "parameters")


for seed, (name, (cls, extra, make_labels)) in enumerate(CASES.items()):
    if ONLY is not None and name not in ONLY:
        continue
    if name in LATER_CASES:
        with torch.random.fork_rng():
            write_case(seed, name, cls, extra, make_labels)
    else:
        write_case(seed, name, cls, extra, make_labels)

if ONLY is not None:
    sys.exit(0)

# Multiple choice: (B, C, T) inputs, one score per choice, the right choice's id as the label.
C = 3
mc_ids = torch.randint(3, BASE["vocab_size"], (2, C, T))
mc_types = torch.zeros(2, C, T, dtype=torch.int64)
mc_types[:, :, 3:] = 1
mc_mask = torch.ones(2, C, T, dtype=torch.int64)
mc_mask[0, 1, 5:] = 0
mc_mask[1, 2, 4:] = 0
mc_labels = torch.tensor([2, 0])
MC = {"multiple_choice": (BertForMultipleChoice, BertConfig(**BASE, classifier_dropout=0.2), 0),
      "roberta_multiple_choice": (RobertaForMultipleChoice, RobertaConfig(**ROBERTA), 1),
      "albert_multiple_choice": (AlbertForMultipleChoice, AlbertConfig(**ALBERT), 0)}
for seed, (name, (cls, config, pad)) in enumerate(MC.items()):
    torch.manual_seed(200 + seed)
    model = cls(config)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0, 0.3 if "LayerNorm" not in n else 1.0)
            if n.endswith("LayerNorm.weight"):
                p.add_(1.0)
        if name.startswith("roberta"):
            model.roberta.embeddings.position_embeddings.weight[pad].zero_()
    model.eval()
    ids = mc_ids.clone()
    if name.startswith("roberta"):
        ids[:, :, 0] = 0  # <s>
    ids[mc_mask == 0] = pad
    types = mc_types.clone() if not name.startswith("roberta") else torch.zeros_like(mc_types)
    types[mc_mask == 0] = 0
    out = model(input_ids=ids, token_type_ids=types, attention_mask=mc_mask, labels=mc_labels)
    out.loss.backward()
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    model.save_pretrained(d, safe_serialization=True)
    g = {"input_ids": ids, "token_type_ids": types, "attention_mask": mc_mask, "loss": out.loss.reshape(1),
         "labels": mc_labels, "logits": out.logits}
    for n, p in model.named_parameters():
        g["grad." + n] = p.grad
    save_file({k: v.detach().contiguous() for k, v in g.items()}, os.path.join(d, "goldens.safetensors"),
              {"generator": "tools/gen_head_goldens.py"})
    print("wrote", os.path.normpath(d), sum(p.numel() for p in model.parameters()), "parameters")

# A pre-training checkpoint into a classification head: what transformers initialises and drops.
_, info = BertForSequenceClassification.from_pretrained(os.path.join(HERE, "..", "tests", "data", "bert_a"),
                                                        num_labels=3, output_loading_info=True)
with open(os.path.join(OUT, "loading_info.json"), "w") as f:
    json.dump({"generator": "tools/gen_head_goldens.py", "checkpoint": "tests/data/bert_a",
               "architecture": "BertForSequenceClassification", "newly_initialised": sorted(info["missing_keys"]),
               "dropped": sorted(info["unexpected_keys"])}, f, indent=2)
    f.write("\n")
print("loading info:", info)
