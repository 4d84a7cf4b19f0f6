#!/usr/bin/env python3
"""Writes tests/amp/golden/grad_scaler_golden.json: what torch.amp.GradScaler (device="cpu") does to
a tiny training run step by step: whether each optimizer step was taken, the scale and growth
tracker after update(), the parameters and Adam's step counts, with infs and NaNs injected into
the scaled gradients of chosen steps.

Run: python3 tools/gen_grad_scaler_golden.py  (needs torch). tests/amp/test_grad_scaler.cpp replays
the same runs in ember and compares.
"""
import json
import math
import os

import torch

torch.set_default_dtype(torch.float32)

# The problem of tools/gen_optim_golden.py: loss = mean((W @ X + b - Y)^2), values exact in float32.
W0 = [[0.5, -0.25, 0.75], [-1.0, 0.125, 0.375]]
B0 = [[0.25], [-0.5]]
X = [[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0], [-0.75, 0.5, 2.5, -1.5]]
Y = [[1.0, 0.0, -1.0, 2.0], [0.5, -1.5, 1.0, 0.25]]

# Each case: the scaler's options, the optimizers (each over "w", "b" or both), how many steps,
# which (step, parameter, value) to write into the first element of a scaled gradient after
# backward(), and whether to unscale_ and clip the gradients' norm before step().
CASES = [
    {"name": "adam_inf_nan", "scaler": {"init_scale": 1024.0, "growth_interval": 3},
     "optimizers": [("Adam", ["w", "b"], {"lr": 0.01})], "steps": 10,
     "inject": [(2, "w", "inf"), (6, "b", "nan")], "clip": None},
    {"name": "sgd_odd_factors", "scaler": {"init_scale": 1000.0, "growth_factor": 3.0, "backoff_factor": 0.3,
                                          "growth_interval": 2},
     "optimizers": [("SGD", ["w", "b"], {"lr": 0.05, "momentum": 0.9})], "steps": 9,
     "inject": [(3, "b", "-inf")], "clip": None},
    {"name": "two_optimizers", "scaler": {"init_scale": 256.0, "growth_interval": 2},
     "optimizers": [("SGD", ["w"], {"lr": 0.1}), ("Adam", ["b"], {"lr": 0.01})], "steps": 7,
     "inject": [(1, "b", "inf"), (4, "w", "nan")], "clip": None},
    {"name": "unscale_clip", "scaler": {"init_scale": 4096.0, "growth_interval": 2},
     "optimizers": [("SGD", ["w", "b"], {"lr": 0.1})], "steps": 6,
     "inject": [(2, "w", "inf")], "clip": 0.5},
    # A growth to 2^128 overflows float32: PyTorch keeps 2^127 and restarts the count.
    {"name": "growth_overflow", "scaler": {"init_scale": 2.0 ** 126, "growth_interval": 1},
     "optimizers": [("SGD", ["w", "b"], {"lr": 0.0})], "steps": 4, "inject": [], "clip": None,
     "loss_factor": 2.0 ** -100},
]


def flat(*tensors):
    return [float(v) for t in tensors for v in t.detach().reshape(-1).tolist()]


def run(case):
    params = {"w": torch.tensor(W0, requires_grad=True), "b": torch.tensor(B0, requires_grad=True)}
    optimizers = [getattr(torch.optim, kind)([params[n] for n in names], **options)
                  for kind, names, options in case["optimizers"]]
    scaler = torch.amp.GradScaler("cpu", **case["scaler"])
    steps = []
    for step in range(case["steps"]):
        for opt in optimizers:
            opt.zero_grad()
        diff = params["w"] @ torch.tensor(X) + params["b"] - torch.tensor(Y)
        loss = (diff * diff).mean() * case.get("loss_factor", 1.0)
        scaler.scale(loss).backward()
        for at, name, value in case["inject"]:
            if at == step:
                params[name].grad.view(-1)[0] = float(value)
        if case["clip"] is not None:
            for opt in optimizers:
                scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_([params["w"], params["b"]], case["clip"])
        taken = []
        for opt in optimizers:
            scaler.step(opt)
            taken.append(sum(v.item() for v in scaler._found_inf_per_device(opt).values()) == 0)
        scaler.update()
        adam_steps = []
        for opt in optimizers:
            for p in (p for g in opt.param_groups for p in g["params"]):
                state = opt.state.get(p, {})
                adam_steps.append(float(state["step"]) if "step" in state else 0.0)
        steps.append({"taken": taken, "scale": scaler.get_scale(), "growth_tracker": scaler._get_growth_tracker(),
                      "params": flat(params["w"], params["b"]), "state_steps": adam_steps})
    out = {"name": case["name"], "scaler": case["scaler"], "steps": steps,
           "optimizers": [{"kind": kind, "params": names, "options": {k: float(v) for k, v in options.items()}}
                          for kind, names, options in case["optimizers"]],
           "inject": [{"step": at, "param": name, "value": value} for at, name, value in case["inject"]],
           "loss_factor": case.get("loss_factor", 1.0), "state_dict": scaler.state_dict()}
    if case["clip"] is not None:
        out["clip"] = case["clip"]
    return out


def main():
    golden = {"torch_version": torch.__version__, "W0": W0, "B0": B0, "X": X, "Y": Y,
              "cases": [run(case) for case in CASES]}
    for case in golden["cases"]:
        for step in case["steps"]:
            assert all(math.isfinite(v) for v in step["params"]), case["name"]
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "amp", "golden", "grad_scaler_golden.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
