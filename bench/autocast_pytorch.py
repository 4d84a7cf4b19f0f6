#!/usr/bin/env python3
"""PyTorch's side of bench/bench_autocast.cpp: the same products and training steps on the CPU,
in float32 and under torch.autocast("cpu") (bfloat16), medians in microseconds (products, mlp)
or milliseconds (cnn, wide mlp).

Run: OMP_NUM_THREADS=1 python3 bench/autocast_pytorch.py   (and with 2)
"""
import contextlib
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from pytorch_timing import timed


class Net(nn.Module):  # pytorch/examples mnist's, returning logits as ember's cnn does
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 32, 3, 1), nn.Conv2d(32, 64, 3, 1)
        self.dropout1, self.dropout2 = nn.Dropout(0.25), nn.Dropout(0.5)
        self.fc1, self.fc2 = nn.Linear(9216, 128), nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = self.dropout2(F.relu(self.fc1(torch.flatten(self.dropout1(x), 1))))
        return self.fc2(x)


def step_fn(model, batch, autocast, adadelta=False):
    images = torch.randn(batch, 1, 28, 28)
    labels = torch.randint(0, 10, (batch,))
    if adadelta:
        optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        with torch.autocast("cpu") if autocast else contextlib.nullcontext():
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def main():
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(0)
    for m, k, n in ((64, 784, 512), (1024, 1024, 4096)):
        for dtype in (torch.float32, torch.bfloat16):
            x, w = torch.randn(m, k).to(dtype), torch.randn(n, k).to(dtype)
            rounds = (7, 20) if m == 64 else (5, 1)
            t = timed(lambda: x @ w.t(), *rounds) * 1e3
            print(f"matmul/{m}x{k}x{n}/{str(dtype)[6:]} {t:.0f} us")
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                        nn.Linear(512, 10))
    wide = nn.Sequential(nn.Flatten(), nn.Linear(784, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                         nn.Linear(4096, 10))
    cnn = Net()
    for autocast in (False, True):
        mode = "autocast" if autocast else "float32"
        print(f"mlp_step/{mode} {timed(step_fn(mlp, 64, autocast), 7, 20) * 1e3:.0f} us")
        print(f"cnn_step/{mode} {timed(step_fn(cnn, 64, autocast, adadelta=True), 5, 3):.1f} ms")
        print(f"wide_mlp_step/{mode} {timed(step_fn(wide, 256, autocast), 5, 2):.1f} ms")


if __name__ == "__main__":
    main()
