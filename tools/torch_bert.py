"""BERT in plain PyTorch with Hugging Face's module tree and parameter names (transformers is not
installable here): the reference for tests/test_bert.cpp and tools/check_checkpoint.py.
Matches transformers' BertForPreTraining (absolute positions, post-LN, tied decoder)."""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

ACT = {"gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"), "relu": F.relu, "tanh": torch.tanh}


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])[None, :]
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(types))


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(self, x, additive):
        B, T, H = x.shape
        hd = H // self.heads
        split = lambda t: t.view(B, T, self.heads, hd).permute(0, 2, 1, 3)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + additive, -1)
        return (probs @ v).permute(0, 2, 1, 3).reshape(B, T, H)


class Output(nn.Module):
    def __init__(self, n_in, n_out, eps):
        super().__init__()
        self.dense, self.LayerNorm = nn.Linear(n_in, n_out), nn.LayerNorm(n_out, eps=eps)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = Output(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"])


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = ACT[c["hidden_act"]]

    def forward(self, x):
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = Attention(c)
        self.intermediate = Intermediate(c)
        self.output = Output(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, additive):
        x1 = self.attention.output(self.attention.self(x, additive), x)
        return self.output(self.intermediate(x1), x1)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings, self.encoder, self.pooler = Embeddings(c), Encoder(c), Pooler(c)

    def forward(self, ids, types, mask):
        additive = (1.0 - mask.float())[:, None, None, :] * torch.finfo(torch.float32).min
        h = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            h = layer(h, additive)
        return h, self.pooler(h)


class Transform(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])
        self.act = ACT[c["hidden_act"]]

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class LMHead(nn.Module):
    def __init__(self, c, tied):
        super().__init__()
        self.transform = Transform(c)
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))
        self.tied = [tied]  # a list, so the embedding is not registered twice

    def forward(self, h):
        return self.transform(h) @ self.tied[0].weight.t() + self.bias


class Heads(nn.Module):
    def __init__(self, c, tied):
        super().__init__()
        self.predictions = LMHead(c, tied)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.bert = BertModel(c)
        self.cls = Heads(c, self.bert.embeddings.word_embeddings)

    def forward(self, ids, types, mask, labels=None, nsp=None):
        h, pooled = self.bert(ids, types, mask)
        logits = self.cls.predictions(h)
        nsp_logits = self.cls.seq_relationship(pooled)
        out = {"last_hidden_state": h, "pooler_output": pooled, "prediction_logits": logits, "seq_relationship_logits": nsp_logits}
        if labels is not None:
            out["mlm_loss"] = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
            out["nsp_loss"] = F.cross_entropy(nsp_logits, nsp)
            out["loss"] = out["mlm_loss"] + out["nsp_loss"]
        return out


# ---- safetensors without the safetensors package ----
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32}


def write_safetensors(path, tensors, metadata=None, dtype="F32"):
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        dt = dtype if t.is_floating_point() else "I64"
        t = t.to(DTYPES[dt])
        data = t.view(torch.uint8).numpy().tobytes() if dt == "BF16" else t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, en = e["data_offsets"]
        raw = bytearray(data[b:en])
        if e["dtype"] == "BF16":
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]) if raw else torch.zeros(0, dtype=DTYPES[e["dtype"]])
        out[name] = t.reshape(e["shape"]).clone()
    return out
