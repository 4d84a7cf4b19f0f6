#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_conv_transpose.cpp into
tests/nn/golden/conv_transpose_golden.safetensors.

Cases (float64, on the CPU: PyTorch's slow_conv_transpose2d). Metadata "case<i>" is
"KIND,key=value,..." with KIND conv_transpose2d or conv_transpose1d and keys
  stride, padding, output_padding, dilation   one int (1d) or "h w" (2d)
  groups, bias (0 or 1)
Tensors:
  case<i>.x, case<i>.w, case<i>.b (with bias), case<i>.gy   input, weight, bias, upstream gradient
  case<i>.y                                                  the output
  case<i>.gx, case<i>.gw, case<i>.gb (with bias)            the gradients of sum(y * gy)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_conv_transpose_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden",
                   "conv_transpose_golden.safetensors")


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def c2(x, cin, cout, k, s=1, p=0, op=0, g=1, d=1, bias=True):
    """A 2-D case: x is the input's sizes without channels ([N, H, W] or [H, W] unbatched)."""
    return dict(kind="conv_transpose2d", x=(x[0], cin, *x[1:]) if len(x) == 3 else (cin, *x),
                w=(cin, cout // g, *pair(k)), cout=cout, s=pair(s), p=pair(p), op=pair(op), d=pair(d), g=g,
                bias=bias)


def c1(x, cin, cout, k, s=1, p=0, op=0, g=1, d=1, bias=True):
    """A 1-D case: x is [N, L] or [L] (unbatched)."""
    return dict(kind="conv_transpose1d", x=(x[0], cin, x[1]) if len(x) == 2 else (cin, x[0]),
                w=(cin, cout // g, k), cout=cout, s=s, p=p, op=op, d=d, g=g, bias=bias)


CASES = [
    c2((2, 5, 5), 4, 3, 3),                                                  # the plain case
    c2((2, 4, 5), 3, 2, (3, 4), s=(2, 3), p=(1, 2), op=(1, 2)),              # rectangular, both paddings
    c2((2, 4, 3), 2, 3, 3, s=(1, 2), op=(1, 0), d=(2, 1)),                   # output_padding >= stride < dilation
    c2((2, 5, 4), 4, 6, 3, s=2, p=1, g=2, bias=False),                       # groups, no bias
    c2((5, 6), 4, 3, 3, s=2, p=1, op=1),                                     # unbatched
    c2((1, 4, 4), 4, 4, 3, s=2, op=1, g=4, d=2),                             # depthwise, dilated
    c2((2, 3, 2), 2, 3, 1, s=3, op=2),                                       # 1x1 kernel, big stride
    c2((2, 4, 4), 3, 2, 4, s=2, p=1),                                        # DCGAN's 4/2/1
    c2((1, 3, 3), 2, 2, 2, op=2, d=3, p=1),                                  # output_padding 2 < dilation 3
    c2((3, 2, 3), 6, 4, (2, 3), s=(2, 1), p=(0, 1), g=2, d=(1, 2)),          # groups, stride and dilation mixed
    c1((2, 7), 3, 5, 3, s=2, p=1, op=1),
    c1((6,), 4, 2, 3, op=1, g=2, d=2),                                       # unbatched, op >= stride < dilation
    c1((2, 4), 2, 3, 2, s=3, op=2, bias=False),
    c1((1, 5), 3, 6, 4, p=2, g=3),
]


def main():
    torch.manual_seed(0)
    tensors, meta = {}, {"count": str(len(CASES))}
    for i, c in enumerate(CASES):
        x = torch.randn(c["x"], dtype=torch.float64, requires_grad=True)
        w = torch.randn(c["w"], dtype=torch.float64, requires_grad=True)
        b = torch.randn(c["cout"], dtype=torch.float64, requires_grad=True) if c["bias"] else None
        if c["kind"] == "conv_transpose2d":
            y = F.conv_transpose2d(x, w, b, c["s"], c["p"], c["op"], c["g"], c["d"])
            fmt = lambda v: f"{v[0]} {v[1]}"  # noqa: E731
        else:
            y = F.conv_transpose1d(x, w, b, c["s"], c["p"], c["op"], c["g"], c["d"])
            fmt = str
        assert y.grad_fn.name() == ("ConvolutionBackward0" if x.dim() == w.dim() else "SqueezeBackward1")
        gy = torch.randn(y.shape, dtype=torch.float64)
        grads = torch.autograd.grad(y, [x, w] + ([b] if b is not None else []), gy)
        p = f"case{i}."
        tensors[p + "x"], tensors[p + "w"], tensors[p + "gy"] = x.detach(), w.detach(), gy
        tensors[p + "y"], tensors[p + "gx"], tensors[p + "gw"] = y.detach(), grads[0], grads[1]
        if b is not None:
            tensors[p + "b"], tensors[p + "gb"] = b.detach(), grads[2]
        meta[f"case{i}"] = (f"{c['kind']},stride={fmt(c['s'])},padding={fmt(c['p'])},"
                            f"output_padding={fmt(c['op'])},dilation={fmt(c['d'])},groups={c['g']},"
                            f"bias={int(c['bias'])}")
    save_file({k: v.contiguous() for k, v in tensors.items()}, OUT, metadata=meta)
    print(f"wrote {len(CASES)} cases to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
