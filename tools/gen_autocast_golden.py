#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/amp/test_autocast.cpp into
tests/amp/golden/autocast_golden.safetensors.

Metadata:
  "dtypes.<low>"  (low = bfloat16 or float16): the result dtype of each op below under
                  torch.autocast("cpu", dtype=<low>), as "op:inputs:dtype;..." where inputs is
                  float32 (every floating input float32), low (every one <low>) or mixed (the
                  second one <low>).
Tensors of the training case (float32 parameters, torch.autocast("cpu", torch.bfloat16)): a
Conv2d(1, 4, 3) -> BatchNorm2d(4) -> ReLU -> flatten -> Linear(64, 5) model and cross-entropy,
  model.x, model.target              the batch
  model.p.<name>                     the parameters before the step (state_dict names)
  model.logits, model.loss           forward results (logits bfloat16, loss float32)
  model.g.<name>                     each parameter's gradient
  model.running_mean, model.running_var   batch norm's statistics after the forward
and of an LSTM(6, 5, num_layers=2) over x [7, 3, 6] in the same region:
  lstm.x, lstm.p.<name>, lstm.out, lstm.h, lstm.c, lstm.g.<name>, lstm.gx   (gradients of
  out.float().sum() + h.float().sum())

Run: /path/to/python-with-torch-and-safetensors tools/gen_autocast_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "amp", "golden")

# Each op takes (x, y, w): 4x4 tensors, y the "second" input of binary ops.
OPS = {
    "matmul": lambda x, y, w: torch.matmul(x, y),
    "mm": lambda x, y, w: torch.mm(x, y),
    "bmm": lambda x, y, w: torch.bmm(x[None], y[None]),
    "linear": lambda x, y, w: F.linear(x, y),
    "conv1d": lambda x, y, w: F.conv1d(x[None], y[:, :, None]),
    "conv2d": lambda x, y, w: F.conv2d(x[None, None], y[None, None, :2, :2]),
    "sdpa": lambda x, y, w: F.scaled_dot_product_attention(x[None], y[None], x[None]),
    "exp": lambda x, y, w: torch.exp(x),
    "log": lambda x, y, w: torch.log(x.abs()),
    "rsqrt": lambda x, y, w: torch.rsqrt(x.abs()),
    "pow_scalar": lambda x, y, w: torch.pow(x, 2),
    "pow_tensor": lambda x, y, w: torch.pow(x.abs(), y),
    "tanh": lambda x, y, w: torch.tanh(x),
    "relu": lambda x, y, w: F.relu(x),
    "gelu": lambda x, y, w: F.gelu(x),
    "add": lambda x, y, w: x + y,
    "mul": lambda x, y, w: x * y,
    "sum": lambda x, y, w: torch.sum(x),
    "mean": lambda x, y, w: torch.mean(x),
    "prod": lambda x, y, w: torch.prod(x),
    "softmax": lambda x, y, w: torch.softmax(x, 1),
    "log_softmax": lambda x, y, w: torch.log_softmax(x, 1),
    "layer_norm": lambda x, y, w: F.layer_norm(x, (4,)),
    "group_norm": lambda x, y, w: F.group_norm(x[None], 2),
    "nll_loss": lambda x, y, w: F.nll_loss(x, torch.tensor([0, 1, 2, 3])),
    "cross_entropy": lambda x, y, w: F.cross_entropy(x, torch.tensor([0, 1, 2, 3])),
    "mse_loss": lambda x, y, w: F.mse_loss(x, y),
    "bce_with_logits": lambda x, y, w: F.binary_cross_entropy_with_logits(x, y.sigmoid()),
    "cat": lambda x, y, w: torch.cat([x, y]),
    "stack": lambda x, y, w: torch.stack([x, y]),
    "where": lambda x, y, w: torch.where(x > 0, x, y),
    "dropout": lambda x, y, w: F.dropout(x, 0.5),
    "max_pool2d": lambda x, y, w: F.max_pool2d(x[None, None], 2),
}


def dtype_table(low):
    entries = []
    for kind in ("float32", "low", "mixed"):
        torch.manual_seed(0)
        x, y, w = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
        if kind == "low":
            x, y, w = x.to(low), y.to(low), w.to(low)
        if kind == "mixed":
            y = y.to(low)
        with torch.autocast("cpu", dtype=low):
            for name, fn in OPS.items():
                try:
                    result = str(fn(x, y, w).dtype).replace("torch.", "")
                except RuntimeError:
                    result = "error"
                entries.append(f"{name}:{kind}:{result}")
    return ";".join(entries)


def main():
    os.makedirs(OUT, exist_ok=True)
    tensors, meta = {}, {}
    for low in (torch.bfloat16, torch.float16):
        meta["dtypes." + str(low).replace("torch.", "")] = dtype_table(low)

    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 5))
    with torch.no_grad():  # batch norm's affine parameters away from ones and zeros
        model[1].weight.uniform_(0.5, 1.5)
        model[1].bias.uniform_(-0.5, 0.5)
    x = torch.randn(3, 1, 6, 6)
    target = torch.tensor([0, 4, 2])
    tensors["model.x"], tensors["model.target"] = x, target
    for name, p in model.state_dict().items():
        if p.is_floating_point():
            tensors["model.p." + name] = p.clone()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        loss = F.cross_entropy(logits, target)
    assert logits.dtype == torch.bfloat16 and loss.dtype == torch.float32
    loss.backward()
    tensors["model.logits"], tensors["model.loss"] = logits.detach(), loss.detach()
    for name, p in model.named_parameters():
        tensors["model.g." + name] = p.grad
    tensors["model.running_mean"] = model[1].running_mean.clone()
    tensors["model.running_var"] = model[1].running_var.clone()

    torch.manual_seed(2)
    lstm = nn.LSTM(6, 5, num_layers=2)
    x = torch.randn(7, 3, 6, requires_grad=True)
    tensors["lstm.x"] = x.detach().clone()
    for name, p in lstm.named_parameters():
        tensors["lstm.p." + name] = p.detach().clone()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out, (h, c) = lstm(x)
    assert out.dtype == h.dtype == c.dtype == torch.bfloat16
    (out.float().sum() + h.float().sum()).backward()
    tensors["lstm.out"], tensors["lstm.h"], tensors["lstm.c"] = out.detach(), h.detach(), c.detach()
    tensors["lstm.gx"] = x.grad
    for name, p in lstm.named_parameters():
        tensors["lstm.g." + name] = p.grad

    tensors = {k: v.contiguous() for k, v in tensors.items()}
    save_file(tensors, os.path.join(OUT, "autocast_golden.safetensors"), metadata=meta)
    print(f"wrote {len(tensors)} tensors")


if __name__ == "__main__":
    main()
