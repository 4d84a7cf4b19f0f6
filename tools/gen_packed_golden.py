#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_packed_sequence.cpp into
tests/nn/golden/packed_golden.safetensors.

Recurrent cases (float64): a padded batch x [T, B, INPUT] ([B, T, INPUT] with batch_first) with
`lengths`, packed with pack_padded_sequence(x, lengths, batch_first, enforce_sorted), run through
the module, and unpacked with pad_packed_sequence(out, batch_first). For case i the metadata entry
"case<i>" is "MODE,key=value,..." with the keys hidden, layers, bidirectional, batch_first, proj,
hx (whether h0 / c0 are passed) and sorted (enforce_sorted); "case<i>.keys" lists the state_dict
keys in PyTorch's order. Tensors:
  case<i>.p.<name>        the state_dict
  case<i>.x, .lengths     the padded input and its lengths (int64); .h0, .c0 with hx=1
  case<i>.data            the packed output's data; .batch_sizes, .sorted_indices (sorted=0)
  case<i>.y               the padded output; .h_n, .c_n the final states
  case<i>.gy, .gh, .gc    upstream gradients of y, h_n, c_n
  case<i>.gx, .gh0, .gc0, case<i>.g.<name>   the gradients of
      sum(y * gy) + sum(h_n * gh) + sum(c_n * gc)

Run: /path/to/python-with-torch-and-safetensors tools/gen_packed_golden.py
"""
import os

import torch
import torch.nn as nn
from torch.nn.utils import rnn as R
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

INPUT = 3


def case(mode, hidden=4, layers=1, bidirectional=False, batch_first=False, proj=0, hx=True, sorted=False,
         lengths=(5, 2, 4, 1)):
    return dict(mode=mode, hidden=hidden, layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                proj=proj, hx=hx, sorted=sorted, lengths=list(lengths))


CASES = [
    case("RNN", sorted=True, lengths=(4, 3, 3, 1)),                     # 0 sorted, one layer
    case("RNN", layers=2, bidirectional=True, hx=False),                # 1 unsorted, both ways
    case("LSTM", lengths=(2, 5, 5, 1)),                                 # 2 equal lengths kept in order
    case("LSTM", layers=2, bidirectional=True, batch_first=True),       # 3
    case("LSTM", hidden=5, bidirectional=True, proj=2, sorted=True,     # 4 proj_size
         lengths=(5, 4, 2, 2)),
    case("GRU", layers=2, bidirectional=True),                          # 5
    case("GRU", batch_first=True, hx=False, lengths=(3, 3, 3, 3)),      # 6 all the same length
    case("GRU", lengths=(1,)),                                          # 7 one sequence of one step
]


def build(c):
    if c["mode"] == "RNN":
        return nn.RNN(INPUT, c["hidden"], num_layers=c["layers"], batch_first=c["batch_first"],
                      bidirectional=c["bidirectional"])
    if c["mode"] == "LSTM":
        return nn.LSTM(INPUT, c["hidden"], num_layers=c["layers"], batch_first=c["batch_first"],
                       bidirectional=c["bidirectional"], proj_size=c["proj"])
    return nn.GRU(INPUT, c["hidden"], num_layers=c["layers"], batch_first=c["batch_first"],
                  bidirectional=c["bidirectional"])


def run_case(i, c, tensors, meta):
    p = f"case{i}."
    module = build(c).double()
    lstm = c["mode"] == "LSTM"
    lengths = torch.tensor(c["lengths"], dtype=torch.int64)
    batch, steps = len(c["lengths"]), max(c["lengths"])
    x_shape = (batch, steps, INPUT) if c["batch_first"] else (steps, batch, INPUT)
    states = c["layers"] * (2 if c["bidirectional"] else 1)
    h_shape = (states, batch, c["proj"] or c["hidden"])
    c_shape = (states, batch, c["hidden"])
    x = torch.randn(x_shape, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(h_shape, dtype=torch.float64, requires_grad=True) if c["hx"] else None
    c0 = torch.randn(c_shape, dtype=torch.float64, requires_grad=True) if c["hx"] and lstm else None

    packed = R.pack_padded_sequence(x, lengths, batch_first=c["batch_first"], enforce_sorted=c["sorted"])
    if lstm:
        out, (h_n, c_n) = module(packed, (h0, c0)) if c["hx"] else module(packed)
    else:
        out, h_n = module(packed, h0)
        c_n = None
    y, y_lengths = R.pad_packed_sequence(out, batch_first=c["batch_first"])
    assert torch.equal(y_lengths, lengths)

    gy = torch.randn(y.shape, dtype=torch.float64)
    gh = torch.randn(h_n.shape, dtype=torch.float64)
    loss = (y * gy).sum() + (h_n * gh).sum()
    tensors[p + "gy"], tensors[p + "y"] = gy, y.detach()
    tensors[p + "gh"], tensors[p + "h_n"] = gh, h_n.detach()
    tensors[p + "data"], tensors[p + "batch_sizes"] = out.data.detach(), out.batch_sizes
    if out.sorted_indices is not None:
        tensors[p + "sorted_indices"] = out.sorted_indices
    if c_n is not None:
        gc = torch.randn(c_n.shape, dtype=torch.float64)
        loss = loss + (c_n * gc).sum()
        tensors[p + "gc"], tensors[p + "c_n"] = gc, c_n.detach()
    loss.backward()

    tensors[p + "x"], tensors[p + "gx"], tensors[p + "lengths"] = x.detach(), x.grad, lengths
    if h0 is not None:
        tensors[p + "h0"], tensors[p + "gh0"] = h0.detach(), h0.grad
    if c0 is not None:
        tensors[p + "c0"], tensors[p + "gc0"] = c0.detach(), c0.grad
    keys = []
    for name, param in module.named_parameters():
        keys.append(name)
        tensors[p + "p." + name], tensors[p + "g." + name] = param.detach().clone(), param.grad
    meta[f"case{i}.keys"] = ",".join(keys)
    meta[f"case{i}"] = (f"{c['mode']},hidden={c['hidden']},layers={c['layers']},"
                        f"bidirectional={int(c['bidirectional'])},batch_first={int(c['batch_first'])},"
                        f"proj={c['proj']},hx={int(c['hx'])},sorted={int(c['sorted'])}")


def main():
    torch.manual_seed(2026)
    tensors, meta = {}, {"input": str(INPUT)}
    for i, c in enumerate(CASES):
        run_case(i, c, tensors, meta)
    meta["count"] = str(len(CASES))
    path = os.path.join(OUT, "packed_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
