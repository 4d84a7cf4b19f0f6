#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_conv.cpp into tests/nn/golden/.

conv_cases.safetensors: for each case i, float64 tensors case<i>.x, .w, [.b], .gy (the gradient
fed to backward), and PyTorch's results .y, .gx, .gw, [.gb]. The metadata entry "case<i>" holds
the arguments as "stride_h,stride_w,pad_h,pad_w,dil_h,dil_w,groups" or, for string padding,
"same"/"valid" in place of the two padding numbers.

conv_init.safetensors: Conv2d's initial parameters for a seed (float32), as torch.nn.Conv2d
draws them.

Run: /path/to/python-with-torch tools/gen_conv_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

# (input sizes, weight sizes, bias, stride, padding, dilation, groups)
CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 3), True, (1, 1), (0, 0), (1, 1), 1),   # plain
    ((2, 3, 7, 8), (4, 3, 3, 2), True, (2, 2), (1, 2), (1, 1), 1),   # stride 2, padding, 3x2 kernel
    ((2, 2, 9, 8), (3, 2, 3, 3), True, (1, 1), (2, 1), (2, 2), 1),   # dilation 2
    ((2, 4, 6, 7), (6, 2, 3, 3), True, (2, 1), (1, 1), (1, 1), 2),   # groups 2
    ((3, 3, 6, 6), (5, 3, 2, 2), False, (1, 1), (0, 0), (1, 1), 1),  # no bias
    ((3, 5, 5), (4, 3, 3, 3), True, (1, 1), (1, 1), (1, 1), 1),      # unbatched [C, H, W]
    ((2, 6, 4, 5), (4, 6, 1, 1), True, (1, 1), (0, 0), (1, 1), 1),   # 1x1 (the GEMM reads x in place)
    ((2, 2, 10, 9), (3, 2, 3, 3), True, (3, 2), (0, 1), (1, 1), 1),  # stride 3 with rows left over
    ((2, 6, 5, 5), (6, 1, 3, 3), True, (1, 1), (1, 1), (1, 2), 6),   # depthwise, dilation (1, 2)
    ((1, 2, 6, 5), (3, 2, 4, 3), True, (1, 1), "same", (1, 2), 1),   # padding="same", odd total
    ((2, 2, 6, 5), (3, 2, 2, 3), True, (1, 1), "valid", (1, 1), 1),  # padding="valid"
]


def main():
    torch.manual_seed(2024)
    tensors, meta = {}, {}
    for i, (xs, ws, has_bias, stride, padding, dilation, groups) in enumerate(CASES):
        x = torch.randn(xs, dtype=torch.float64, requires_grad=True)
        w = torch.randn(ws, dtype=torch.float64, requires_grad=True)
        b = torch.randn(ws[0], dtype=torch.float64, requires_grad=True) if has_bias else None
        y = F.conv2d(x, w, b, stride, padding, dilation, groups)
        gy = torch.randn(y.shape, dtype=torch.float64)
        y.backward(gy)
        p = f"case{i}."
        tensors[p + "x"], tensors[p + "w"], tensors[p + "gy"] = x.detach(), w.detach(), gy
        tensors[p + "y"], tensors[p + "gx"], tensors[p + "gw"] = y.detach(), x.grad, w.grad
        if has_bias:
            tensors[p + "b"], tensors[p + "gb"] = b.detach(), b.grad
        pad = padding if isinstance(padding, str) else f"{padding[0]},{padding[1]}"
        meta[f"case{i}"] = f"{stride[0]},{stride[1]},{pad},{dilation[0]},{dilation[1]},{groups}"
    meta["count"] = str(len(CASES))
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(OUT, "conv_cases.safetensors"), meta)

    init = {}
    torch.manual_seed(0)
    layer = torch.nn.Conv2d(1, 32, 3)
    init["seed0.weight"], init["seed0.bias"] = layer.weight.detach(), layer.bias.detach()
    torch.manual_seed(123)
    layer = torch.nn.Conv2d(4, 6, (3, 5), stride=2, groups=2)
    init["seed123.weight"], init["seed123.bias"] = layer.weight.detach(), layer.bias.detach()
    save_file(init, os.path.join(OUT, "conv_init.safetensors"))


if __name__ == "__main__":
    main()
