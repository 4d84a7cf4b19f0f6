#!/usr/bin/env python3
"""PyTorch's side of bench/bench_transformer.cpp: the same TransformerEncoderLayer forward +
backward in training mode, and forward alone in eval mode without gradients (where PyTorch takes
its fused inference path), on the CPU, median of several timed rounds after a warm-up.

Run: OMP_NUM_THREADS=1 python3 bench/transformer_pytorch.py   (and with 2)
"""
import os

import torch

from pytorch_timing import timed

MODEL, HEADS, FF, BATCH, TOKENS = 256, 8, 1024, 16, 64


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(MODEL, HEADS, FF, batch_first=True)
    x = torch.randn(BATCH, TOKENS, MODEL, requires_grad=True)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(TOKENS)

    def step():
        layer.zero_grad()
        x.grad = None
        layer(x, src_mask=mask, is_causal=True).sum().backward()

    print(f"encoder_layer_forward_backward {timed(step):.3f} ms")
    layer.eval()
    with torch.no_grad():
        xi = x.detach()
        print(f"encoder_layer_inference {timed(lambda: layer(xi, src_mask=mask, is_causal=True)):.3f} ms")


if __name__ == "__main__":
    main()
