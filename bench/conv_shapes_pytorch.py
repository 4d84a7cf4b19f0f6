#!/usr/bin/env python3
"""PyTorch's side of bench/bench_conv_shapes.cpp: the same layers (batch 16), forward then the
weight's and (past the stem) the input's gradient, in milliseconds per call.

Run: OMP_NUM_THREADS=1 python3 bench/conv_shapes_pytorch.py   (the same count as the C++ side)
"""
import os

import torch
import torch.nn.functional as F

import pytorch_timing

# name, in channels, size, out channels, kernel, stride, padding, groups, input needs grad
LAYERS = [
    ("resnet_stem_3to64_k7s2_64", 3, 64, 64, 7, 2, 3, 1, False),
    ("resnet_64to64_k3_16", 64, 16, 64, 3, 1, 1, 1, True),
    ("resnet_64to128_k3s2_16", 64, 16, 128, 3, 2, 1, 1, True),
    ("resnet_128to128_k3_8", 128, 8, 128, 3, 1, 1, 1, True),
    ("resnet_256to256_k3_4", 256, 4, 256, 3, 1, 1, 1, True),
    ("resnet_512to512_k3_2", 512, 2, 512, 3, 1, 1, 1, True),
    ("resnet_64to128_k1s2_16", 64, 16, 128, 1, 2, 0, 1, True),
    ("resnet_256to512_k1s2_4", 256, 4, 512, 1, 2, 0, 1, True),
    ("mobilenet_dw32_k3_32", 32, 32, 32, 3, 1, 1, 32, True),
    ("mobilenet_dw144_k3s2_16", 144, 16, 144, 3, 2, 1, 144, True),
    ("mobilenet_dw384_k3_4", 384, 4, 384, 3, 1, 1, 384, True),
    ("mobilenet_pw24to144_k1_16", 24, 16, 144, 1, 1, 0, 1, True),
    ("mobilenet_pw384to64_k1_4", 384, 4, 64, 1, 1, 0, 1, True),
    ("mobilenet_pw960to320_k1_2", 960, 2, 320, 1, 1, 0, 1, True),
]


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    for name, c, size, o, k, stride, padding, groups, input_grad in LAYERS:
        x = torch.randn(16, c, size, size, requires_grad=input_grad)
        w = (torch.randn(o, c // groups, k, k) * 0.05).requires_grad_()

        def step():
            y = F.conv2d(x, w, None, stride, padding, 1, groups)
            y.backward(torch.ones_like(y))

        print(f"pytorch/{name:<32} {pytorch_timing.timed(step, min_seconds=0.05):8.3f} ms")


if __name__ == "__main__":
    main()
