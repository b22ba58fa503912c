#!/usr/bin/python3
"""Writes tests/data/nn_goldens.safetensors: PyTorch 1.13 references for every nn layer
(forward output, input and parameter gradients) and optimizer trajectories (test_nn_parity.cpp,
test_optim.cpp).

Run with Debian's python3 and python3-torch:  /usr/bin/python3 tools/gen_nn_goldens.py [--add-missing]
--add-missing keeps every tensor the file holds, byte for byte, and adds the ones it lacks (a
full regeneration on another CPU moves the existing tensors in their last bits)
The layers are written here in plain PyTorch with Hugging Face's BERT module names, so the
parameter names are those of HF checkpoints. Tensor names: "<case>.<param name>" for weights,
"<case>.in.*" inputs, "<case>.out" output, "<case>.grad.*" gradients.
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_bert import write_safetensors

torch.manual_seed(2024)
out = {}


def put(name, t):
    out[name] = t.detach().to(torch.float32).contiguous().clone()  # a copy: params change in place


def record_module(case, module, inputs, forward):
    """Runs forward(*inputs), backprops a fixed random upstream gradient, stores everything."""
    for n, p in module.named_parameters():
        with torch.no_grad():
            p.normal_(0, 0.5)  # larger than BERT's 0.02 so errors are not hidden by tiny values
        put(f"{case}.{n}", p)
    for k, x in inputs.items():
        put(f"{case}.in.{k}", x)
        if x.requires_grad:
            x.grad = None
    y = forward(**inputs)
    gy = torch.randn_like(y)
    put(f"{case}.out", y)
    put(f"{case}.in.grad_out", gy)
    y.backward(gy)
    for n, p in module.named_parameters():
        put(f"{case}.grad.{n}", p.grad)
    for k, x in inputs.items():
        if x.requires_grad:
            put(f"{case}.grad.in.{k}", x.grad)


# ---------------- layers, HF BERT layout ----------------
class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)

    def forward(self, x, mask):
        B, T, H = x.shape
        hd = H // self.heads
        split = lambda t: t.view(B, T, self.heads, hd).permute(0, 2, 1, 3)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(hd)
        additive = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min
        probs = torch.softmax(scores + additive, -1)
        return (probs @ v).permute(0, 2, 1, 3).reshape(B, T, H)


class ProjectResidual(nn.Module):
    def __init__(self, n_in, n_out, eps, pre_ln):
        super().__init__()
        self.dense, self.LayerNorm, self.pre_ln = nn.Linear(n_in, n_out), nn.LayerNorm(n_out, eps=eps), pre_ln

    def forward(self, h, residual):
        y = self.dense(h) + residual
        return y if self.pre_ln else self.LayerNorm(y)


class Attention(nn.Module):
    def __init__(self, hidden, heads, eps, pre_ln):
        super().__init__()
        self.self = SelfAttention(hidden, heads)
        self.output = ProjectResidual(hidden, hidden, eps, pre_ln)


class Intermediate(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.dense = nn.Linear(hidden, inter)

    def forward(self, x):
        return F.gelu(self.dense(x))


class EncoderLayer(nn.Module):
    def __init__(self, hidden, heads, inter, eps=1e-12, pre_ln=False):
        super().__init__()
        self.pre_ln = pre_ln
        self.attention = Attention(hidden, heads, eps, pre_ln)
        self.intermediate = Intermediate(hidden, inter)
        self.output = ProjectResidual(inter, hidden, eps, pre_ln)

    def forward(self, x, mask):
        if self.pre_ln:
            h = self.attention.output.LayerNorm(x)
            x1 = self.attention.output(self.attention.self(h, mask), x)
            return self.output(self.intermediate(self.output.LayerNorm(x1)), x1)
        x1 = self.attention.output(self.attention.self(x, mask), x)
        return self.output(self.intermediate(x1), x1)


class Encoder(nn.Module):
    def __init__(self, n, **kw):
        super().__init__()
        self.layer = nn.ModuleList([EncoderLayer(**kw) for _ in range(n)])

    def forward(self, x, mask):
        for l in self.layer:
            x = l(x, mask)
        return x


B, T, H = 2, 5, 8
mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.float32)

lin = nn.Linear(5, 7)
record_module("linear", lin, {"x": torch.randn(2, 3, 5, requires_grad=True)}, lambda x: lin(x))

emb = nn.Embedding(10, 6, padding_idx=0)
ids = torch.tensor([[3, 0, 9, 3], [1, 2, 0, 7]])
put("embedding.in.ids", ids.float())
record_module("embedding", emb, {}, lambda: emb(ids))

ln = nn.LayerNorm(6, eps=1e-12)
record_module("layer_norm", ln, {"x": (torch.randn(3, 4, 6) * 2 + 1).requires_grad_()}, lambda x: ln(x))

acts = {"gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "relu": F.relu, "tanh": torch.tanh}
for name, f in acts.items():
    x = torch.randn(4, 9, requires_grad=True)
    put(f"act_{name}.in.x", x)
    y = f(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    put(f"act_{name}.out", y)
    put(f"act_{name}.in.grad_out", gy)
    put(f"act_{name}.grad.in.x", x.grad)

put("mask", mask)
att = SelfAttention(H, 2)
record_module("attention", att, {"x": torch.randn(B, T, H, requires_grad=True)}, lambda x: att(x, mask))
for case, pre in (("encoder_layer_post_ln", False), ("encoder_layer_pre_ln", True)):
    layer = EncoderLayer(H, 2, 16, pre_ln=pre)
    record_module(case, layer, {"x": torch.randn(B, T, H, requires_grad=True)}, lambda x, l=layer: l(x, mask))
enc = Encoder(2, hidden=H, heads=2, inter=16)
record_module("encoder", enc, {"x": torch.randn(B, T, H, requires_grad=True)}, lambda x: enc(x, mask))

# ---------------- optimizers: 10 steps, warm-up 3 then linear decay ----------------
STEPS, WARMUP = 10, 3
lin_lambda = lambda s: s / WARMUP if s < WARMUP else max(0.0, (STEPS - s) / (STEPS - WARMUP))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 3)
        self.LayerNorm = nn.LayerNorm(3)

    def forward(self, x):
        return self.LayerNorm(torch.tanh(self.dense(x)))


opt_x, opt_y = torch.randn(6, 4), torch.randn(6, 3)
put("optim.in.x", opt_x)
put("optim.in.y", opt_y)
init = Tiny()
with torch.no_grad():
    for p in init.parameters():
        p.normal_(0, 0.5)
for n, p in init.named_parameters():
    put(f"optim.init.{n}", p)


def groups(model, wd):
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def lamb_step(params, state, lr, b1=0.9, b2=0.999, eps=1e-6, bias_correction=True):
    """Straightforward LAMB (You et al. 2019), with bias correction unless told; params are (p, weight_decay).
    The no-decay parameters (biases, LayerNorm) take no trust ratio, as ALBERT's LAMB excludes
    them from layer adaptation (exclude_from_layer_adaptation defaults to the decay exclusions)."""
    for p, wd in params:
        g = p.grad
        st = state.setdefault(p, {"m": torch.zeros_like(p), "v": torch.zeros_like(p), "t": 0})
        st["t"] += 1
        st["m"].mul_(b1).add_(g, alpha=1 - b1)
        st["v"].mul_(b2).addcmul_(g, g, value=1 - b2)
        mhat = st["m"] / (1 - b1 ** st["t"]) if bias_correction else st["m"]
        vhat = st["v"] / (1 - b2 ** st["t"]) if bias_correction else st["v"]
        r = mhat / (vhat.sqrt() + eps) + wd * p
        wn, rn = p.norm(), r.norm()
        trust = (wn / rn) if (wd != 0 and wn > 0 and rn > 0) else torch.tensor(1.0)
        p.sub_(lr * trust * r)


torch_optimizers = {
    "adamw": lambda m: torch.optim.AdamW(groups(m, 0.01), lr=0.1, betas=(0.9, 0.999), eps=1e-8),
    "adam": lambda m: torch.optim.Adam(groups(m, 0.01), lr=0.1),
    "sgd_momentum": lambda m: torch.optim.SGD(groups(m, 0.01), lr=0.1, momentum=0.9),
    "sgd_nesterov": lambda m: torch.optim.SGD(groups(m, 0.01), lr=0.1, momentum=0.9, nesterov=True),
    "sgd": lambda m: torch.optim.SGD(groups(m, 0.01), lr=0.1),
    "sgd_dampening": lambda m: torch.optim.SGD(groups(m, 0.01), lr=0.1, momentum=0.9, dampening=0.5),
}
for name in list(torch_optimizers) + ["lamb", "lamb_no_bias_correction"]:
    lamb = name.startswith("lamb")
    model = Tiny()
    model.load_state_dict(init.state_dict())
    if not lamb:
        opt = torch_optimizers[name](model)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lin_lambda)
    lamb_state = {}
    wd_of = {n: (0.0 if (n.endswith("bias") or "LayerNorm" in n) else 0.01) for n, _ in model.named_parameters()}
    for step in range(STEPS):
        model.zero_grad()
        F.mse_loss(model(opt_x), opt_y).backward()
        if not lamb:
            opt.step()
            sched.step()
        else:
            with torch.no_grad():
                lamb_step([(p, wd_of[n]) for n, p in model.named_parameters()], lamb_state, 0.1 * lin_lambda(step),
                          bias_correction=name == "lamb")
        for n, p in model.named_parameters():
            put(f"optim.{name}.step{step + 1}.{n}", p)

# ---------------- gradient clipping ----------------
model = Tiny()
model.load_state_dict(init.state_dict())
F.mse_loss(model(opt_x), opt_y).backward()
norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
put("clip.norm", norm.reshape(1))
for n, p in model.named_parameters():
    put(f"clip.grad.{n}", p.grad)

meta = {"generator": "tools/gen_nn_goldens.py", "torch": torch.__version__}
path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "nn_goldens.safetensors")
if "--add-missing" in sys.argv and os.path.exists(path):
    with open(path, "rb") as f:
        blob = f.read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    meta = header.pop("__metadata__", meta)
    for name, e in header.items():  # every stored tensor is F32 (write_safetensors' default)
        begin, end = e["data_offsets"]
        data = bytearray(blob[8 + size + begin:8 + size + end])
        out[name] = torch.frombuffer(data, dtype=torch.float32).reshape(e["shape"]).clone()
write_safetensors(path, out, meta)
print("wrote", os.path.normpath(path), len(out), "tensors")
