#!/usr/bin/env python3
"""PyTorch's side of bench/bench_rnn.cpp: the same LSTM/GRU forward (no grad) and forward +
backward of the output's sum, and the packed LSTM, on the CPU, median of several timed rounds after a warm-up.

Run: OMP_NUM_THREADS=1 python3 bench/rnn_pytorch.py   (and with 2)
"""
import os

import torch

from pytorch_timing import timed

FEATURES, HIDDEN, BATCH, LAYERS = 200, 200, 20, 2


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    lstm = torch.nn.LSTM(FEATURES, HIDDEN, num_layers=LAYERS)
    x = torch.randn(35, BATCH, FEATURES)
    with torch.no_grad():
        print(f"bench_lstm_forward/35 {timed(lambda: lstm(x)):.3f} ms")
    for name, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
        layer = cls(FEATURES, HIDDEN, num_layers=LAYERS)
        for steps in (35, 140):
            xs = torch.randn(steps, BATCH, FEATURES, requires_grad=True)

            def step():
                layer.zero_grad()
                xs.grad = None
                layer(xs)[0].sum().backward()

            print(f"{name}_forward_backward/{steps} {timed(step):.3f} ms")

    R = torch.nn.utils.rnn
    lstm = torch.nn.LSTM(FEATURES, HIDDEN, num_layers=LAYERS)
    xs = torch.randn(35, BATCH, FEATURES, requires_grad=True)
    lengths = [35 - (i * 7) % BATCH for i in range(BATCH)]

    def packed_step():
        lstm.zero_grad()
        xs.grad = None
        packed = R.pack_padded_sequence(xs, lengths, enforce_sorted=False)
        R.pad_packed_sequence(lstm(packed)[0])[0].sum().backward()

    print(f"lstm_packed_forward_backward {timed(packed_step):.3f} ms")


if __name__ == "__main__":
    main()
