#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_conv1d_groupnorm.cpp into
tests/nn/golden/conv1d_groupnorm_golden.safetensors.

Cases (float64). Metadata "case<i>" is "KIND,key=value,..." with KIND
  Conv1d      in, out, k, stride, padding (a number, "same" or "valid"), dilation, groups, bias
  GroupNorm   groups, channels, eps, affine
  group_norm  groups, eps, weight, bias (1 where F.group_norm was given that tensor)
and "case<i>.keys" lists the parameters (the module's state_dict keys, in PyTorch's order, or the
tensors given to group_norm), comma-separated. Module parameters are perturbed after construction
so that GroupNorm's weight and bias are not ones and zeros. Tensors:
  case<i>.x, case<i>.y, case<i>.gy     the input, the output and the upstream gradient
  case<i>.gx                           the gradient of sum(y * gy) with respect to x
  case<i>.p.<name>, case<i>.g.<name>   each parameter and its gradient

Init (float32): "init.seed<s>.<name>" are the parameters of nn.Conv1d(...) right after
torch.manual_seed(s); metadata "init.seed<s>" holds the Conv1d's arguments as
"in,out,k,stride,padding,dilation,groups,bias".

Run: /path/to/python-with-torch-and-safetensors tools/gen_conv1d_groupnorm_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")


def conv(x, cin, cout, k, stride=1, padding=0, dilation=1, groups=1, bias=True):
    return dict(kind="Conv1d", x=x, opts=dict(**{"in": cin}, out=cout, k=k, stride=stride, padding=padding,
                                               dilation=dilation, groups=groups, bias=int(bias)))


def gn(x, groups, channels, eps=1e-5, affine=True):
    return dict(kind="GroupNorm", x=x, opts=dict(groups=groups, channels=channels, eps=eps, affine=int(affine)))


def gn_f(x, groups, eps=1e-5, weight=True, bias=True):
    return dict(kind="group_norm", x=x, opts=dict(groups=groups, eps=eps, weight=int(weight), bias=int(bias)))


CASES = [
    conv((2, 3, 10), 3, 4, 3),                                         # 0 plain
    conv((3, 9), 3, 2, 3, stride=2, padding=1),                        # 1 unbatched, stride, padding
    conv((2, 2, 11), 2, 3, 3, padding=2, dilation=2),                  # 2 dilation
    conv((2, 4, 9), 4, 6, 3, stride=2, padding=1, groups=2),           # 3 groups 2
    conv((2, 4, 8), 4, 8, 3, padding=1, dilation=2, groups=4),         # 4 depthwise (multiplier 2)
    conv((2, 3, 8), 3, 3, 2, stride=3, bias=False),                    # 5 no bias, stride 3 (one left over)
    conv((2, 2, 7), 2, 3, 4, padding="same"),                          # 6 "same", total 3 (odd)
    conv((2, 2, 8), 2, 3, 3, padding="same", dilation=2),              # 7 "same", total 4 (even)
    conv((2, 3, 9), 3, 2, 4, stride=2, padding="valid"),               # 8 "valid", strided
    conv((4, 6), 4, 4, 3, padding="same", groups=4, bias=False),       # 9 unbatched depthwise "same"
    conv((2, 3, 6), 3, 5, 1),                                          # 10 kernel 1
    gn((4, 8), 2, 8),                                                  # 11 2-D [N, C]
    gn((3, 6, 5), 1, 6),                                               # 12 one group (LayerNorm-like)
    gn((2, 4, 7), 4, 4),                                               # 13 groups == C (InstanceNorm-like)
    gn((2, 6, 3, 4), 2, 6, eps=1e-3),                                  # 14 4-D, eps
    gn((2, 4, 3, 3), 2, 4, affine=False),                              # 15 no affine
    gn((2, 4, 2, 3, 2), 2, 4, eps=0.1),                                # 16 5-D
    gn_f((2, 6, 5), 3),                                                # 17 weight and bias
    gn_f((2, 6, 4), 2, weight=True, bias=False),                       # 18 weight only
    gn_f((3, 4, 2, 2), 4, eps=1e-4, weight=False, bias=True),          # 19 bias only
    gn_f((2, 4, 5), 2, weight=False, bias=False),                      # 20 neither
]

INIT = {  # seed: nn.Conv1d arguments (in, out, k, stride, padding, dilation, groups, bias)
    0: (3, 8, 5, 1, 0, 1, 1, True),
    123: (4, 6, 3, 2, 1, 1, 2, True),
    7: (2, 4, 3, 1, "same", 2, 1, False),
}


def fmt(value):
    return repr(value) if isinstance(value, float) else str(value)


def run_case(i, c, tensors, meta):
    p = f"case{i}."
    o = c["opts"]
    x = torch.randn(c["x"], dtype=torch.float64, requires_grad=True)
    if c["kind"] == "group_norm":
        C = c["x"][1]
        params = {}
        if o["weight"]:
            params["weight"] = (1 + 0.5 * torch.randn(C, dtype=torch.float64)).requires_grad_()
        if o["bias"]:
            params["bias"] = (0.5 * torch.randn(C, dtype=torch.float64)).requires_grad_()
        y = F.group_norm(x, o["groups"], params.get("weight"), params.get("bias"), o["eps"])
    else:
        if c["kind"] == "Conv1d":
            m = nn.Conv1d(o["in"], o["out"], o["k"], o["stride"], o["padding"], o["dilation"], o["groups"],
                          bool(o["bias"])).double()
        else:
            m = nn.GroupNorm(o["groups"], o["channels"], o["eps"], bool(o["affine"])).double()
        with torch.no_grad():
            for param in m.parameters():
                param.add_(0.5 * torch.randn_like(param))
        params = dict(m.named_parameters())
        assert list(params) == list(m.state_dict().keys())
        y = m(x)
    gy = torch.randn(y.shape, dtype=torch.float64)
    (y * gy).sum().backward()
    tensors[p + "x"], tensors[p + "y"], tensors[p + "gy"], tensors[p + "gx"] = x.detach(), y.detach(), gy, x.grad
    for name, param in params.items():
        tensors[p + "p." + name], tensors[p + "g." + name] = param.detach().clone(), param.grad
    meta[f"case{i}.keys"] = ",".join(params)
    meta[f"case{i}"] = ",".join([c["kind"]] + [f"{k}={fmt(v)}" for k, v in o.items()])
    return y, params


def float32_error(c, y, params, tensors, p):
    """The largest difference between PyTorch's float32 result (output and gradients) and the
    float64 golden: a check, when generating, that the test's float32 tolerance has room."""
    o = c["opts"]
    x = tensors[p + "x"].float().requires_grad_()
    ps = {k: v.detach().float().requires_grad_() for k, v in params.items()}
    if c["kind"] == "Conv1d":
        y32 = F.conv1d(x, ps["weight"], ps.get("bias"), o["stride"], o["padding"], o["dilation"], o["groups"])
    else:
        y32 = F.group_norm(x, o["groups"], ps.get("weight"), ps.get("bias"), o["eps"])
    (y32 * tensors[p + "gy"].float()).sum().backward()
    pairs = [(y32, y.detach()), (x.grad, tensors[p + "gx"])] + [(ps[k].grad, tensors[p + "g." + k]) for k in ps]
    return max(((a.double() - b).abs() / (1 + b.abs())).max().item() for a, b in pairs)


def main():
    torch.manual_seed(2028)
    tensors, meta = {}, {}
    worst = 0.0
    for i, c in enumerate(CASES):
        y, params = run_case(i, c, tensors, meta)
        worst = max(worst, float32_error(c, y, params, tensors, f"case{i}."))
    meta["count"] = str(len(CASES))
    for seed, args in INIT.items():
        torch.manual_seed(seed)
        m = nn.Conv1d(*args[:7], bias=args[7])
        for name, param in m.named_parameters():
            tensors[f"init.seed{seed}.{name}"] = param.detach().clone()
        meta[f"init.seed{seed}"] = ",".join(str(int(a) if isinstance(a, bool) else a) for a in args)
    path = os.path.join(OUT, "conv1d_groupnorm_golden.safetensors")
    save_file({k: v.contiguous() for k, v in tensors.items()}, path, meta)
    print(f"wrote {path}: {len(tensors)} tensors, {os.path.getsize(path)} bytes; "
          f"PyTorch's float32 results within {worst:.2e} (relative to 1 + |golden|)")


if __name__ == "__main__":
    main()
