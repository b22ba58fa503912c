#!/usr/bin/python3
"""Writes tests/data/core_goldens.json: inputs, outputs and gradients computed by PyTorch for a
few composite computations the core tests check against (test_goldens.cpp).

Run with Debian's python3 and python3-torch (1.13):  /usr/bin/python3 tools/gen_core_goldens.py
Inputs come from a fixed torch seed; everything is float32, as xgrad computes it.
"""
import json
import math
import os

import torch

torch.manual_seed(1234)
cases = {}


def t(x):
    return {"shape": list(x.shape), "data": [float(v) for v in x.detach().reshape(-1).tolist()]}


def ints(x):
    return [int(v) for v in x]


# 1. softmax + cross-entropy with ignore_index, mean and sum, logits with a large dynamic range
logits = (torch.randn(8, 11) * 6).requires_grad_()
targets = torch.tensor([3, -100, 0, 10, 7, -100, 7, 1])
for red in ("mean", "sum"):
    logits.grad = None
    loss = torch.nn.functional.cross_entropy(logits, targets, ignore_index=-100, reduction=red)
    loss.backward()
    cases[f"cross_entropy_{red}"] = {
        "logits": t(logits), "targets": ints(targets), "loss": float(loss),
        "grad_logits": t(logits.grad), "softmax": t(torch.softmax(logits, -1)),
    }

# 2. layer_norm forward and backward (BERT's eps, and a wide row)
for name, shape, eps in (("layer_norm_small", (5, 24), 1e-12), ("layer_norm_wide", (3, 768), 1e-5)):
    x = (torch.randn(*shape) * 3 + 1).requires_grad_()
    w = torch.randn(shape[-1]).requires_grad_()
    b = torch.randn(shape[-1]).requires_grad_()
    gy = torch.randn(*shape)
    y = torch.nn.functional.layer_norm(x, (shape[-1],), w, b, eps)
    y.backward(gy)
    cases[name] = {"x": t(x), "w": t(w), "b": t(b), "eps": eps, "grad_y": t(gy), "y": t(y),
                   "grad_x": t(x.grad), "grad_w": t(w.grad), "grad_b": t(b.grad)}

# 3. masked scaled-dot-product attention, gelu MLP and a residual, through to an MSE loss
B, H, T, D = 2, 3, 5, 4
q = torch.randn(B, H, T, D).requires_grad_()
k = torch.randn(B, H, T, D).requires_grad_()
v = torch.randn(B, H, T, D).requires_grad_()
w1 = (torch.randn(D, 2 * D) * 0.5).requires_grad_()
mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.float32)
additive = (1.0 - mask)[:, None, None, :] * -10000.0
target = torch.randn(B, H, T, 2 * D)
scores = q @ k.transpose(-1, -2) / math.sqrt(D) + additive
ctx = torch.softmax(scores, -1) @ v
out = torch.nn.functional.gelu(ctx @ w1) + torch.tanh(ctx).repeat(1, 1, 1, 2)
loss = torch.nn.functional.mse_loss(out, target)
loss.backward()
cases["attention_block"] = {"q": t(q), "k": t(k), "v": t(v), "w1": t(w1), "mask": t(additive),
                            "target": t(target), "out": t(out), "loss": float(loss),
                            "grad_q": t(q.grad), "grad_k": t(k.grad), "grad_v": t(v.grad),
                            "grad_w1": t(w1.grad)}

# 4. binary cross-entropy with logits (extreme logits) and log_softmax over an inner axis
x = torch.tensor([[-30.0, -2.0, 0.0, 2.0, 30.0], [5.0, -5.0, 0.5, -0.5, 100.0]], requires_grad=True)
y = torch.tensor([[0.0, 1.0, 0.5, 0.0, 1.0], [1.0, 0.0, 0.2, 0.9, 0.0]])
loss = torch.nn.functional.binary_cross_entropy_with_logits(x, y)
loss.backward()
cases["bce_with_logits"] = {"x": t(x), "y": t(y), "loss": float(loss), "grad_x": t(x.grad)}

z = torch.randn(3, 4, 5).requires_grad_()
gz = torch.randn(3, 4, 5)
ls = torch.log_softmax(z, 1)
ls.backward(gz)
cases["log_softmax_axis1"] = {"x": t(z), "grad_y": t(gz), "y": t(ls), "grad_x": t(z.grad)}

out_path = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "core_goldens.json")
os.makedirs(os.path.dirname(out_path), exist_ok=True)
with open(out_path, "w") as f:
    json.dump({"generator": "tools/gen_core_goldens.py", "torch": torch.__version__, "cases": cases}, f)
print("wrote", os.path.normpath(out_path))
