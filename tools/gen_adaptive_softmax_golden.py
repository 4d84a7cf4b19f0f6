#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/nn/test_adaptive_softmax.cpp into
tests/nn/golden/adaptive_softmax_golden.safetensors.

Metadata "case<i>" is "asm,in=F,classes=C,cutoffs=a;b,div=D,head_bias=0|1,seed=S"; "count" is the
number of cases. Tensors: case<i>.init.<name> (the float32 parameters right after
torch.manual_seed(S) and construction), case<i>.param.<name> (float64 parameters the outputs
were computed with), .input, .target (int64), .output, .loss, .gy (weight of output in the
scalar that is differentiated: sum(output * gy) + loss), .ginput, .grad.<name>, .log_prob and
.predict (int64, for .input; absent for unbatched cases).

Run: /path/to/python-with-torch-and-safetensors tools/gen_adaptive_softmax_golden.py
"""
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nn", "golden")

tensors, meta = {}, {}
count = 0


def add(in_features, n_classes, cutoffs, div, head_bias, seed, input_shape, targets, scale=1.0, boost=0.0):
    global count
    p = f"case{count}."
    meta[f"case{count}"] = (f"asm,in={in_features},classes={n_classes},cutoffs={';'.join(map(str, cutoffs))},"
                            f"div={div},head_bias={int(head_bias)},seed={seed}")
    torch.manual_seed(seed)
    m = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, n_classes, cutoffs, div_value=div, head_bias=head_bias)
    for k, v in m.state_dict().items():
        tensors[p + "init." + k] = v.clone()
    m = m.double()
    # Larger weights than the default init, so that predict() meets every branch.
    with torch.no_grad():
        for v in m.parameters():
            v.mul_(scale)
        if head_bias:  # favour the clusters' head entries: predict() then leaves the shortlist
            m.head.bias[m.shortlist_size:] += boost
    for k, v in m.state_dict().items():
        tensors[p + "param." + k] = v.clone()
    x = torch.randn(input_shape, dtype=torch.float64, generator=torch.Generator().manual_seed(seed + 1))
    target = torch.tensor(targets, dtype=torch.int64)
    xi = x.clone().requires_grad_()
    out = m(xi, target)
    gy = torch.randn(out.output.shape, dtype=torch.float64)
    total = (out.output * gy).sum() + out.loss
    params = dict(m.named_parameters())
    grads = torch.autograd.grad(total, [xi] + list(params.values()), allow_unused=True)
    tensors.update({p + "input": x, p + "target": target, p + "output": out.output.detach().clone(),
                    p + "loss": out.loss.detach().clone(), p + "gy": gy, p + "ginput": grads[0]})
    for (k, _), g in zip(params.items(), grads[1:]):
        tensors[p + "grad." + k] = g if g is not None else torch.zeros_like(params[k])  # unused cluster
    if x.dim() == 2:
        with torch.no_grad():
            tensors[p + "log_prob"] = m.log_prob(x)
            tensors[p + "predict"] = m.predict(x)
    count += 1


add(16, 20, [4, 10], 2.0, True, 1, (7, 16), [0, 5, 12, 3, 19, 9, 10], boost=100.0)  # predict: all rows in a cluster
add(32, 30, [5, 15, 25], 4.0, False, 2, (6, 32), [1, 2, 16, 24, 3, 0], scale=3.0)  # cluster 1 has no rows
add(16, 20, [4, 10], 4.0, False, 3, (16,), 13)  # unbatched
add(16, 20, [4, 10], 4.0, False, 4, (5, 16), [0, 1, 2, 3, 1])  # shortlist only
add(8, 12, [6], 2.0, True, 5, (9, 8), [6, 7, 8, 9, 10, 11, 0, 5, 11], scale=4.0, boost=3.0)  # predict: mixed

meta["count"] = str(count)
os.makedirs(OUT, exist_ok=True)
save_file(tensors, os.path.join(OUT, "adaptive_softmax_golden.safetensors"), metadata=meta)
print(f"{count} cases")
