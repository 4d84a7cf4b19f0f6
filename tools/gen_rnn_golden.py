#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_rnn.cpp into tests/nn/golden/rnn_golden.safetensors.

Cases (float64). For each case i, the metadata entry "case<i>" describes the module as
"MODE,key=value,..." where MODE is RNN, LSTM, GRU, RNNCell, LSTMCell or GRUCell and the keys are
input, hidden, layers, bidirectional, batch_first, bias, proj, unbatched, hx (whether h0 / c0 are
passed; zeros otherwise) and nonlinearity. "case<i>.keys" lists the module's state_dict keys in
PyTorch's order, comma-separated. The tensors are:
  case<i>.p.<name>   the state_dict
  case<i>.x          the input; case<i>.h0, case<i>.c0 the initial states when hx=1
  case<i>.gy, .gh, .gc   the upstream gradients of output, h_n and c_n
  case<i>.y, .h_n, .c_n  PyTorch's results
  case<i>.gx, .gh0, .gc0, case<i>.g.<name>   the gradients of
      sum(y * gy) + sum(h_n * gh) + sum(c_n * gc)
with respect to x, h0, c0 and every parameter. For the cells, y is h' (no h_n, no gh), and for
LSTMCell c_n is c'.

Init (float32): "init.seed7.lstm.<name>" and then "init.seed7.grucell.<name>" are the parameters
of nn.LSTM(5, 4, num_layers=2, bidirectional=True, proj_size=3) and nn.GRUCell(5, 4), built one
after the other right after torch.manual_seed(7); "init.seed3.rnn.<name>" is
nn.RNN(4, 3, nonlinearity="relu", bias=False) right after torch.manual_seed(3), and
"init.reset9.lstm.<name>" is that LSTM after torch.manual_seed(9) and lstm.reset_parameters().

Run: /path/to/python-with-torch tools/gen_rnn_golden.py
"""
import os

import torch
import torch.nn as nn
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

SEQ, BATCH, INPUT = 4, 3, 5


def case(mode, hidden=4, layers=1, bidirectional=False, batch_first=False, bias=True, proj=0, unbatched=False,
         hx=True, nonlinearity="tanh", seq=SEQ):
    return dict(mode=mode, hidden=hidden, layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                bias=bias, proj=proj, unbatched=unbatched, hx=hx, nonlinearity=nonlinearity, seq=seq)


CASES = [
    case("RNN"),                                                                     # 0 tanh, one layer
    case("RNN", hidden=5, layers=2, bidirectional=True, nonlinearity="relu"),        # 1 relu, stacked, both ways
    case("LSTM"),                                                                    # 2 one layer
    case("LSTM", layers=2, bidirectional=True, batch_first=True, seq=5),             # 3
    case("LSTM", hidden=5, layers=2, bidirectional=True, proj=3),                    # 4 proj_size
    case("LSTM", bias=False, hx=False),                                              # 5 no bias, zero states
    case("LSTM", layers=2, unbatched=True),                                          # 6 [seq, input] with h0, c0
    case("GRU", hidden=6, layers=2),                                                 # 7
    case("GRU", bidirectional=True, batch_first=True, hx=False),                     # 8
    case("RNN", bias=False, batch_first=True, unbatched=True, hx=False,              # 9 unbatched ignores
         nonlinearity="relu"),                                                       #   batch_first
    case("GRU", hidden=5, unbatched=True, bias=False),                               # 10
    case("RNNCell"),                                                                 # 11
    case("RNNCell", unbatched=True, hx=False, nonlinearity="relu"),                  # 12
    case("LSTMCell", hidden=5),                                                      # 13
    case("LSTMCell", unbatched=True, bias=False),                                    # 14
    case("GRUCell", hidden=6),                                                       # 15
    case("GRUCell", unbatched=True, hx=False),                                       # 16
]


def build(c):
    m = c["mode"]
    if m == "RNN":
        return nn.RNN(INPUT, c["hidden"], num_layers=c["layers"], nonlinearity=c["nonlinearity"], bias=c["bias"],
                      batch_first=c["batch_first"], bidirectional=c["bidirectional"])
    if m == "LSTM":
        return nn.LSTM(INPUT, c["hidden"], num_layers=c["layers"], bias=c["bias"], batch_first=c["batch_first"],
                       bidirectional=c["bidirectional"], proj_size=c["proj"])
    if m == "GRU":
        return nn.GRU(INPUT, c["hidden"], num_layers=c["layers"], bias=c["bias"], batch_first=c["batch_first"],
                      bidirectional=c["bidirectional"])
    if m == "RNNCell":
        return nn.RNNCell(INPUT, c["hidden"], bias=c["bias"], nonlinearity=c["nonlinearity"])
    if m == "LSTMCell":
        return nn.LSTMCell(INPUT, c["hidden"], bias=c["bias"])
    if m == "GRUCell":
        return nn.GRUCell(INPUT, c["hidden"], bias=c["bias"])
    raise ValueError(m)


def run_case(i, c, tensors, meta):
    p = f"case{i}."
    module = build(c).double()
    cell = c["mode"].endswith("Cell")
    lstm = c["mode"].startswith("LSTM")
    if cell:
        x_shape = (INPUT,) if c["unbatched"] else (BATCH, INPUT)
        h_shape = (c["hidden"],) if c["unbatched"] else (BATCH, c["hidden"])
        c_shape = h_shape
    else:
        if c["unbatched"]:
            x_shape = (c["seq"], INPUT)
        else:
            x_shape = (BATCH, c["seq"], INPUT) if c["batch_first"] else (c["seq"], BATCH, INPUT)
        states = c["layers"] * (2 if c["bidirectional"] else 1)
        out_h = c["proj"] or c["hidden"]
        h_shape = (states, out_h) if c["unbatched"] else (states, BATCH, out_h)
        c_shape = (states, c["hidden"]) if c["unbatched"] else (states, BATCH, c["hidden"])
    x = torch.randn(x_shape, dtype=torch.float64, requires_grad=True)
    h0 = torch.randn(h_shape, dtype=torch.float64, requires_grad=True) if c["hx"] else None
    c0 = torch.randn(c_shape, dtype=torch.float64, requires_grad=True) if c["hx"] and lstm else None

    if cell:
        if lstm:
            y, c_n = module(x, (h0, c0)) if c["hx"] else module(x)
        else:
            y, c_n = module(x, h0), None
        h_n = None
    else:
        if lstm:
            y, (h_n, c_n) = module(x, (h0, c0)) if c["hx"] else module(x)
        else:
            y, h_n = module(x, h0)
            c_n = None

    gy = torch.randn(y.shape, dtype=torch.float64)
    loss = (y * gy).sum()
    tensors[p + "gy"], tensors[p + "y"] = gy, y.detach()
    if h_n is not None:
        gh = torch.randn(h_n.shape, dtype=torch.float64)
        loss = loss + (h_n * gh).sum()
        tensors[p + "gh"], tensors[p + "h_n"] = gh, h_n.detach()
    if c_n is not None:
        gc = torch.randn(c_n.shape, dtype=torch.float64)
        loss = loss + (c_n * gc).sum()
        tensors[p + "gc"], tensors[p + "c_n"] = gc, c_n.detach()
    loss.backward()

    tensors[p + "x"], tensors[p + "gx"] = x.detach(), x.grad
    if h0 is not None:
        tensors[p + "h0"], tensors[p + "gh0"] = h0.detach(), h0.grad
    if c0 is not None:
        tensors[p + "c0"], tensors[p + "gc0"] = c0.detach(), c0.grad
    keys = []
    for name, param in module.named_parameters():
        keys.append(name)
        tensors[p + "p." + name], tensors[p + "g." + name] = param.detach().clone(), param.grad
    assert keys == list(module.state_dict().keys())
    meta[f"case{i}.keys"] = ",".join(keys)
    meta[f"case{i}"] = (f"{c['mode']},input={INPUT},hidden={c['hidden']},layers={c['layers']},"
                        f"bidirectional={int(c['bidirectional'])},batch_first={int(c['batch_first'])},"
                        f"bias={int(c['bias'])},proj={c['proj']},unbatched={int(c['unbatched'])},hx={int(c['hx'])},"
                        f"nonlinearity={c['nonlinearity']}")


def main():
    torch.manual_seed(2025)
    tensors, meta = {}, {}
    for i, c in enumerate(CASES):
        run_case(i, c, tensors, meta)
    meta["count"] = str(len(CASES))

    torch.manual_seed(7)
    lstm = nn.LSTM(5, 4, num_layers=2, bidirectional=True, proj_size=3)
    grucell = nn.GRUCell(5, 4)
    for name, param in lstm.named_parameters():
        tensors["init.seed7.lstm." + name] = param.detach().clone()
    for name, param in grucell.named_parameters():
        tensors["init.seed7.grucell." + name] = param.detach().clone()
    torch.manual_seed(3)
    rnn = nn.RNN(4, 3, nonlinearity="relu", bias=False)
    for name, param in rnn.named_parameters():
        tensors["init.seed3.rnn." + name] = param.detach().clone()
    torch.manual_seed(9)
    lstm.reset_parameters()
    for name, param in lstm.named_parameters():
        tensors["init.reset9.lstm." + name] = param.detach().clone()

    path = os.path.join(OUT, "rnn_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
