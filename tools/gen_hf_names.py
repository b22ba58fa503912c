#!/usr/bin/python3
"""The tensor names Hugging Face transformers uses for each registered BERT architecture, for
tests/models/core/test_registry.cpp: "saved" (what save_pretrained writes to model.safetensors, tied copies
dropped) and "state_dict" (what the model holds, tied copies and buffers included).

Run: python3 tools/gen_hf_names.py
     (needs transformers<4.46 and torch 1.13: pip install 'transformers<4.46' torch==1.13.1)
Writes tests/data/hf_names.json."""
import json
import os
import tempfile

import torch
import transformers
from safetensors import safe_open

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "hf_names.json")

CONFIG = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
              hidden_act="gelu", hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1, max_position_embeddings=12,
              type_vocab_size=2, initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
              position_embedding_type="absolute")

result = {"transformers_version": transformers.__version__, "torch_version": torch.__version__, "config": CONFIG,
          "architectures": {}}
for arch in ["BertModel", "BertForPreTraining", "BertForMaskedLM"]:
    model = getattr(transformers, arch)(transformers.BertConfig(**CONFIG))
    with tempfile.TemporaryDirectory() as d:
        model.save_pretrained(d, safe_serialization=True)
        with safe_open(os.path.join(d, "model.safetensors"), "pt") as f:
            saved = sorted(f.keys())
        with open(os.path.join(d, "config.json")) as f:
            assert json.load(f)["architectures"] == [arch]
    result["architectures"][arch] = {"saved": saved, "state_dict": sorted(model.state_dict().keys())}

with open(OUT, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
print(f"wrote {OUT}")
