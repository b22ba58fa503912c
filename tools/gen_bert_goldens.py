#!/usr/bin/python3
"""Random-init BERTs in plain PyTorch (tools/torch_bert.py, Hugging Face names) written as HF
checkpoint directories, with inputs (padding, MLM labels, NSP labels), outputs, losses and every
parameter gradient, for tests/models/bert/test_bert.cpp.

Run: /usr/bin/python3 tools/gen_bert_goldens.py   (Debian's python3-torch 1.13)
Writes tests/data/bert_<name>/{config.json, model.safetensors, goldens.safetensors}."""
import json
import os

import torch

from torch_bert import BertForPreTraining, write_safetensors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data")

SHAPES = {
    # name: config, weight dtype on disk
    "a": (dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
               hidden_act="gelu", max_position_embeddings=40, type_vocab_size=2, layer_norm_eps=1e-12), "F32"),
    "b": (dict(vocab_size=120, hidden_size=48, num_hidden_layers=3, num_attention_heads=6, intermediate_size=96,
               hidden_act="gelu_new", max_position_embeddings=24, type_vocab_size=3, layer_norm_eps=1e-5), "F16"),
}

for name, (cfg, dtype) in SHAPES.items():
    torch.manual_seed({"a": 11, "b": 22}[name])
    cfg = dict(cfg, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, initializer_range=0.02, pad_token_id=0)
    model = BertForPreTraining(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.normal_(0, 0.2 if "LayerNorm" not in n else 1.0)
            if "LayerNorm.weight" in n:
                p.add_(1.0)
            if dtype == "F16":  # what the F16 file holds is what the reference computes with
                p.copy_(p.half().float())
    B, T = 3, 12 if name == "a" else 9
    ids = torch.randint(1, cfg["vocab_size"], (B, T))
    types = torch.randint(0, cfg["type_vocab_size"], (B, T))
    mask = torch.ones(B, T, dtype=torch.int64)
    mask[0, T - 4:] = 0  # padding
    mask[2, T - 1:] = 0
    ids[mask == 0] = 0
    labels = torch.full((B, T), -100)
    for b, positions in enumerate([[1, 3, 5], [0, 2, 7, 8], [4]]):
        for p in positions:
            labels[b, p] = int(torch.randint(1, cfg["vocab_size"], ()))
    nsp = torch.tensor([0, 1, 1])
    out = model(ids, types, mask, labels, nsp)
    out["loss"].backward()

    d = os.path.join(OUT, f"bert_{name}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(dict(cfg, model_type="bert", architectures=["BertForPreTraining"]), f, indent=2)
    state = {n: p for n, p in model.named_parameters()}
    if name == "b":  # a bare-BertModel-style name set: no "bert." prefix, TF-era gamma/beta
        state = {(n[len("bert."):] if n.startswith("bert.") else n).replace("LayerNorm.weight", "LayerNorm.gamma")
                 .replace("LayerNorm.bias", "LayerNorm.beta"): p for n, p in state.items()}
        state["cls.predictions.decoder.weight"] = model.bert.embeddings.word_embeddings.weight  # tied copy
    write_safetensors(os.path.join(d, "model.safetensors"), state, {"format": "pt"}, dtype=dtype)
    g = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask, "labels": labels, "next_sentence_label": nsp}
    for k in ("last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits"):
        g[k] = out[k]
    for k in ("loss", "mlm_loss", "nsp_loss"):
        g[k] = out[k].reshape(1)
    for n, p in model.named_parameters():
        g["grad." + n] = p.grad
    write_safetensors(os.path.join(d, "goldens.safetensors"), g, {"generator": "tools/gen_bert_goldens.py"})
    print("wrote", os.path.normpath(d), sum(p.numel() for p in model.parameters()), "parameters")
