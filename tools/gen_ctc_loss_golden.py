#!/usr/bin/env python3
"""Goldens for tests/nn/test_ctc_loss.cpp: torch.nn.functional.ctc_loss's losses and log_probs
gradients (PyTorch 2.15) on small cases: padded and concatenated targets, repeated labels, an
impossible alignment with and without zero_infinity, each reduction, unbatched input, raw (not
log_softmax-ed) inputs, in float64 and float32.

Run with the venv's python: writes tests/nn/golden/ctc_loss_golden.safetensors. Each case k has
tensors "k.log_probs" (float64), "k.targets", "k.input_lengths", "k.target_lengths" (int64),
"k.grad_out" (the loss's gradient fed back), "k.loss"/"k.grad" (float64 run) and
"k.loss32"/"k.grad32" (the same inputs cast to float32; first cases only), and the metadata "k" holds
"blank,reduction,zero_infinity".
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "golden", "ctc_loss_golden.safetensors")

tensors = {}
metadata = {}
count = 0
FLOAT32_CASES = 8  # the first cases are also run in float32 (stored as float32), to keep the file small


def add(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    global count
    k = str(count)
    count += 1
    input_lengths = torch.tensor(input_lengths, dtype=torch.long)
    target_lengths = torch.tensor(target_lengths, dtype=torch.long)
    targets = torch.as_tensor(targets, dtype=torch.long)
    loss_shape = log_probs.shape[1:2] if reduction == "none" and log_probs.dim() == 3 else ()
    grad_out = torch.rand(loss_shape, dtype=torch.float64) + 0.5
    runs = (("", torch.float64), ("32", torch.float32)) if count <= FLOAT32_CASES else (("", torch.float64),)
    for suffix, dtype in runs:
        x = log_probs.to(dtype).detach().requires_grad_()
        loss = F.ctc_loss(x, targets, input_lengths, target_lengths, blank=blank, reduction=reduction,
                          zero_infinity=zero_infinity)
        (grad,) = torch.autograd.grad(loss, x, grad_out.to(dtype))
        tensors[k + ".loss" + suffix] = loss.detach().clone()
        tensors[k + ".grad" + suffix] = grad.contiguous()
    tensors[k + ".log_probs"] = log_probs.contiguous()
    tensors[k + ".targets"] = targets.clone()
    tensors[k + ".input_lengths"] = input_lengths
    tensors[k + ".target_lengths"] = target_lengths
    tensors[k + ".grad_out"] = grad_out
    metadata[k] = f"{blank},{reduction},{int(zero_infinity)}"


def log_softmax(*shape):
    return torch.randn(*shape, dtype=torch.float64).log_softmax(-1)


torch.manual_seed(30)
T, N, C = 12, 3, 5
padded = torch.tensor([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 0]])  # repeats force blanks between
for reduction in ("none", "mean", "sum"):
    add(log_softmax(T, N, C), padded, [12, 9, 7], [4, 2, 3], reduction=reduction)
# Concatenated targets, the same sequences.
add(log_softmax(T, N, C), [1, 2, 2, 3, 4, 1, 3, 3, 3], [12, 9, 7], [4, 2, 3], reduction="none")
add(log_softmax(T, N, C), [1, 2, 2, 3, 4, 1, 3, 3, 3], [10, 12, 11], [4, 2, 3], reduction="mean")
# Impossible alignment: 3 repeated labels need 5 frames, sample 2 has 4; and a zero-length target.
for zero_infinity in (False, True):
    for reduction in ("none", "mean", "sum"):
        add(log_softmax(T, N, C), padded, [12, 9, 4], [4, 0, 3], reduction=reduction, zero_infinity=zero_infinity)
# Another blank, and targets containing label 0.
add(log_softmax(8, N, C), torch.tensor([[0, 1, 0, 2], [2, 0, 0, 0], [3, 3, 1, 0]]), [8, 8, 6], [4, 1, 3], blank=4,
    reduction="none")
add(log_softmax(T, N, C), padded, [12, 12, 12], [4, 2, 3], blank=2, reduction="sum")
# Unbatched input: [T, C], 1-D target, 0-dim lengths.
for reduction in ("none", "mean"):
    add(log_softmax(10, C), torch.tensor([1, 3, 3, 2]), 10, 4, reduction=reduction)
# Raw inputs, not log_softmax-ed: PyTorch's gradient formula assumes a log_softmax before.
add(torch.randn(T, N, C, dtype=torch.float64), padded, [12, 9, 7], [4, 2, 3], reduction="none")
add(torch.randn(T, N, C, dtype=torch.float64), padded, [12, 9, 7], [4, 2, 3], reduction="mean")
# Input lengths of 0 (with an empty target: loss 0; with a target: inf).
add(log_softmax(4, N, C), padded[:, :2], [0, 0, 4], [0, 1, 2], reduction="none")

save_file(tensors, OUT, metadata=metadata)
print(f"wrote {count} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
