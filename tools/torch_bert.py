"""BERT in plain PyTorch with Hugging Face's module tree and parameter names (transformers is not
installable here): the reference for tests/models/bert/test_bert.cpp and tools/check_checkpoint.py.
Matches transformers' BertForPreTraining (absolute positions, post-LN, tied decoder).

Dropout is a constructor argument, not read from the config (whose hidden_dropout_prob the
golden generators set to 0.1 while computing without dropout): BertForPreTraining(c,
hidden_dropout=0.1, attention_dropout=0.1) applies it in train mode where transformers' BertModel
does (the embeddings' output, the attention probabilities, the attention output projection and the
FFN output projection, before each residual add; none in the pooler or the heads). The default 0.0
computes exactly as before. attention="sdpa" (PyTorch >= 2.0) runs the attention core as
torch.nn.functional.scaled_dot_product_attention with a boolean padding mask; the default "manual"
is the explicit softmax(q k^T / sqrt(d) + additive mask) v, as before."""
import json
import math
import struct

import torch
import torch.nn as nn
import torch.nn.functional as F

ATTENTION = ("manual", "sdpa")


def dropout(x, p, training):
    """F.dropout, skipped (no random draws) when off: p == 0 keeps the old computation exactly."""
    return F.dropout(x, p, True) if training and p > 0 else x


ACT = {"gelu": F.gelu, "gelu_new": lambda x: F.gelu(x, approximate="tanh"), "relu": F.relu, "tanh": torch.tanh}


class Embeddings(nn.Module):
    def __init__(self, c, hidden_dropout=0.0):
        super().__init__()
        self.dropout = hidden_dropout
        self.word_embeddings = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], c["hidden_size"])
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], c["hidden_size"])
        self.LayerNorm = nn.LayerNorm(c["hidden_size"], eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        pos = torch.arange(ids.shape[1])[None, :]
        h = self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings(types))
        return dropout(h, self.dropout, self.training)


class SelfAttention(nn.Module):
    def __init__(self, c, attention_dropout=0.0, attention="manual"):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.dropout, self.attention = attention_dropout, attention
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(self, x, mask):
        """mask: (B, 1, 1, T), additive float for "manual", boolean (True: attend) for "sdpa"."""
        B, T, H = x.shape
        hd = H // self.heads
        split = lambda t: t.view(B, T, self.heads, hd).permute(0, 2, 1, 3)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        if self.attention == "sdpa":
            p = self.dropout if self.training else 0.0
            ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        else:
            probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd) + mask, -1)
            ctx = dropout(probs, self.dropout, self.training) @ v
        return ctx.permute(0, 2, 1, 3).reshape(B, T, H)


class Output(nn.Module):
    def __init__(self, n_in, n_out, eps, hidden_dropout=0.0):
        super().__init__()
        self.dropout = hidden_dropout
        self.dense, self.LayerNorm = nn.Linear(n_in, n_out), nn.LayerNorm(n_out, eps=eps)

    def forward(self, h, residual):
        return self.LayerNorm(dropout(self.dense(h), self.dropout, self.training) + residual)


class Attention(nn.Module):
    def __init__(self, c, hidden_dropout=0.0, attention_dropout=0.0, attention="manual"):
        super().__init__()
        self.self = SelfAttention(c, attention_dropout, attention)
        self.output = Output(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"], hidden_dropout)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = ACT[c["hidden_act"]]

    def forward(self, x):
        return self.act(self.dense(x))


class Layer(nn.Module):
    def __init__(self, c, hidden_dropout=0.0, attention_dropout=0.0, attention="manual"):
        super().__init__()
        self.attention = Attention(c, hidden_dropout, attention_dropout, attention)
        self.intermediate = Intermediate(c)
        self.output = Output(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"], hidden_dropout)

    def forward(self, x, mask):
        x1 = self.attention.output(self.attention.self(x, mask), x)
        return self.output(self.intermediate(x1), x1)


class Encoder(nn.Module):
    def __init__(self, c, **kw):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c, **kw) for _ in range(c["num_hidden_layers"])])


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))


class BertModel(nn.Module):
    def __init__(self, c, hidden_dropout=0.0, attention_dropout=0.0, attention="manual"):
        super().__init__()
        self.embeddings = Embeddings(c, hidden_dropout)
        self.encoder = Encoder(c, hidden_dropout=hidden_dropout, attention_dropout=attention_dropout, attention=attention)
        self.pooler = Pooler(c)
        self.set_attention(attention)

    def set_attention(self, attention):
        """"manual" or "sdpa" (F.scaled_dot_product_attention, PyTorch >= 2.0) in every layer."""
        if attention not in ATTENTION:
            raise ValueError(f"attention is one of {ATTENTION}, not {attention!r}")
        if attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
            raise ValueError(f"attention='sdpa' needs PyTorch >= 2.0, this is {torch.__version__}")
        self.attention = attention
        for layer in self.encoder.layer:
            layer.attention.self.attention = attention

    def forward(self, ids, types, mask):
        if self.attention == "sdpa":
            attn_mask = mask.bool()[:, None, None, :]
        else:
            attn_mask = (1.0 - mask.float())[:, None, None, :] * torch.finfo(torch.float32).min
        h = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            h = layer(h, attn_mask)
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
    def __init__(self, c, hidden_dropout=0.0, attention_dropout=0.0, attention="manual"):
        super().__init__()
        self.config = c
        self.bert = BertModel(c, hidden_dropout, attention_dropout, attention)
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
