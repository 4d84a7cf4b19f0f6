#!/usr/bin/env python3
"""Writes tests/optim/golden/optim_golden.json: parameter trajectories of torch.optim optimizers,
learning-rate sequences of schedulers and clip_grad_norm_ results, computed by PyTorch (CPU).

Run: python3 tools/gen_optim_golden.py  (needs torch). tests/optim/test_optim_golden.cpp replays
the same problems in ember and compares.
"""
import json
import math
import os

import torch

torch.set_default_dtype(torch.float32)
STEPS = 6

# The tiny problem: loss = mean((W @ X + b - Y)^2), W 2x3, b 2x1. Values are exact in float32.
W0 = [[0.5, -0.25, 0.75], [-1.0, 0.125, 0.375]]
B0 = [[0.25], [-0.5]]
X = [[1.0, -2.0, 0.5, 3.0], [0.25, 1.5, -1.0, 2.0], [-0.75, 0.5, 2.5, -1.5]]
Y = [[1.0, 0.0, -1.0, 2.0], [0.5, -1.5, 1.0, 0.25]]


def loss_of(w, b):
    return ((w @ torch.tensor(X) + b - torch.tensor(Y)) ** 2).mean()


def flat(*tensors):
    return [float(v) for t in tensors for v in t.detach().reshape(-1).tolist()]


OPTIMIZERS = [
    ("sgd_plain", "SGD", {"lr": 0.1}),
    ("sgd_momentum", "SGD", {"lr": 0.05, "momentum": 0.9}),
    ("sgd_dampening_wd", "SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3, "weight_decay": 0.01}),
    ("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    ("sgd_maximize", "SGD", {"lr": 0.01, "momentum": 0.5, "maximize": True}),
    ("adam_default", "Adam", {"lr": 0.01}),
    ("adam_wd_amsgrad", "Adam", {"lr": 0.02, "betas": (0.8, 0.99), "eps": 1e-6, "weight_decay": 0.1, "amsgrad": True}),
    ("adam_beta1_big", "Adam", {"lr": 0.01, "betas": (0.3, 0.9)}),
    ("adam_big_eps", "Adam", {"lr": 0.01, "eps": 0.1}),
    ("adamw_default", "AdamW", {"lr": 0.01}),
    ("adamw_amsgrad", "AdamW", {"lr": 0.05, "weight_decay": 0.5, "amsgrad": True}),
    ("adadelta_default", "Adadelta", {}),
    ("adadelta_wd", "Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5, "weight_decay": 0.05}),
    ("rmsprop_default", "RMSprop", {}),
    ("rmsprop_big_eps_momentum", "RMSprop", {"lr": 0.01, "eps": 0.05, "momentum": 0.9}),
    ("rmsprop_centered_momentum", "RMSprop",
     {"lr": 0.01, "alpha": 0.9, "momentum": 0.5, "centered": True, "weight_decay": 0.02}),
]


def run_optimizer(kind, options):
    w = torch.tensor(W0, requires_grad=True)
    b = torch.tensor(B0, requires_grad=True)
    opt = getattr(torch.optim, kind)([w, b], **options)
    trajectory = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss_of(w, b).backward()
        opt.step()
        trajectory.append(flat(w, b))
    return trajectory


def options_json(options):
    out = dict(options)
    if "betas" in out:
        out["beta1"], out["beta2"] = out.pop("betas")
    return {k: float(v) for k, v in out.items()}


def scheduler_lrs(make, optimizer_kind="SGD", lrs=(0.1, 0.02), steps=30):
    params = [torch.zeros(1, requires_grad=True) for _ in lrs]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, lrs)]
    opt = torch.optim.SGD(groups, momentum=0.9) if optimizer_kind == "SGD" else torch.optim.Adam(groups)
    sched = make(opt)
    seq, momenta = [list(sched.get_last_lr())], []
    key = "momentum" if optimizer_kind == "SGD" else "betas"
    momenta.append([g[key] if key == "momentum" else g[key][0] for g in opt.param_groups])
    for _ in range(steps):
        opt.step()
        sched.step()
        seq.append(list(sched.get_last_lr()))
        momenta.append([g[key] if key == "momentum" else g[key][0] for g in opt.param_groups])
    return seq, momenta


SCHEDULERS = [
    ("step_lr", "StepLR", {"step_size": 3, "gamma": 0.5}, "SGD", 20,
     lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    ("cosine", "CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001}, "SGD", 35,
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.001)),
    ("linear", "LinearLR", {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 8}, "SGD", 12,
     lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=8)),
    ("linear_decay", "LinearLR", {"start_factor": 1.0, "end_factor": 0.1, "total_iters": 5}, "SGD", 8,
     lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=5)),
    ("onecycle_sgd", "OneCycleLR", {"max_lr": 0.5, "total_steps": 25}, "SGD", 25,
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=25)),
    ("onecycle_adam_linear_3phase", "OneCycleLR",
     {"max_lr": 0.01, "total_steps": 20, "pct_start": 0.25, "anneal_linear": 1, "three_phase": 1}, "Adam", 20,
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.01, total_steps=20, pct_start=0.25,
                                                   anneal_strategy="linear", three_phase=True)),
]


def clip_cases():
    grads = [[[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]], [1.25, -2.5]]
    cases = []
    for norm_type in (2.0, 1.0, 3.0, math.inf):
        for max_norm in (1.0, 100.0):
            params = [torch.zeros(torch.tensor(g).shape, requires_grad=True) for g in grads]
            for p, g in zip(params, grads):
                p.grad = torch.tensor(g)
            total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
            cases.append({"norm_type": "inf" if math.isinf(norm_type) else norm_type, "max_norm": max_norm,
                          "total_norm": float(total), "grads": flat(*[p.grad for p in params])})
    return {"grads": [flat(torch.tensor(g)) for g in grads], "cases": cases}


def main():
    golden = {"torch_version": torch.__version__, "steps": STEPS, "W0": W0, "B0": B0, "X": X, "Y": Y,
              "optimizers": [], "schedulers": [], "clip": clip_cases()}
    for name, kind, options in OPTIMIZERS:
        golden["optimizers"].append({"name": name, "kind": kind, "options": options_json(options),
                                     "trajectory": run_optimizer(kind, options)})
    for name, kind, args, opt_kind, steps, make in SCHEDULERS:
        lrs, momenta = scheduler_lrs(make, opt_kind, steps=steps)
        golden["schedulers"].append({"name": name, "kind": kind, "args": args, "optimizer": opt_kind,
                                     "lrs": lrs, "momenta": momenta})
    path = os.path.join(os.path.dirname(__file__), "..", "tests", "optim", "golden", "optim_golden.json")
    with open(path, "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
