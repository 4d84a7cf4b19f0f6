#!/usr/bin/env python3
"""Writes tests/optim/golden/lr_scheduler_golden.json: the learning rates (CyclicLR's momenta too) PyTorch's
schedulers give over about 30 steps on an optimizer with two parameter groups, and each
scheduler's final state_dict flattened to ember's layout (include/ember/optim/lr_scheduler.h),
for tests/optim/test_lr_scheduler_golden.cpp.

Run with the PyTorch venv: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_lr_scheduler_golden.py

Each case names its scheduler and arguments; functions (lambdas, scale_fn) are named, and the
C++ test defines the same ones. Floats round-trip exactly through JSON (repr); infinities are
written as the strings "inf" / "-inf".
"""
import json
import math
import os
import warnings
from collections import Counter

import torch
from torch.optim import lr_scheduler as L

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "optim", "golden", "lr_scheduler_golden.json")
GROUP_LRS = (0.1, 0.02)
STEPS = 30

# Named functions; tests/optim/test_lr_scheduler_golden.cpp defines each the same way.
LAMBDAS = {
    "pow095": lambda e: 0.95**e,
    "inverse": lambda e: 1.0 / (e + 1),
    "pow09": lambda e: 0.9**e,
    "const095": lambda e: 0.95,
    "const09": lambda e: 0.9,
    "linear_down": lambda e: 1.0 - 0.01 * e,
}
SCALE_FNS = {
    "half_per_cycle": lambda x: 1.0 / (2.0**x),
    "pow099": lambda x: 0.99**x,
}

# Strings a state dict holds, saved as their index among the argument's choices.
CHOICES = {
    "ReduceLROnPlateau": {"mode": ["min", "max"], "threshold_mode": ["rel", "abs"]},
    "CyclicLR": {"mode": ["triangular", "triangular2", "exp_range"], "scale_mode": ["cycle", "iterations"]},
}


def make_optimizer(kind):
    params = [torch.zeros(1, requires_grad=True) for _ in GROUP_LRS]
    groups = [{"params": [p], "lr": lr} for p, lr in zip(params, GROUP_LRS)]
    if kind == "SGD":
        return torch.optim.SGD(groups, momentum=0.9)
    return torch.optim.Adam(groups)


def build(kind, args, opt):
    a = dict(args)
    if kind in ("LambdaLR", "MultiplicativeLR"):
        names = a.pop("lr_lambda")
        fn = [LAMBDAS[n] for n in names] if isinstance(names, list) else LAMBDAS[names]
        return getattr(L, kind)(opt, fn, **a)
    if kind == "CyclicLR" and "scale_fn" in a:
        a["scale_fn"] = SCALE_FNS[a["scale_fn"]]
    if kind in ("SequentialLR", "ChainedScheduler"):
        children = [build(c["scheduler"], c["args"], opt) for c in a.pop("schedulers")]
        if kind == "SequentialLR":
            return L.SequentialLR(opt, children, **a)
        return L.ChainedScheduler(children)
    return getattr(L, kind)(opt, **a)


def flatten(kind, value, prefix, out):
    """PyTorch's state_dict as ember's flat map (see the module docstring of lr_scheduler.h)."""
    if value is None or callable(value):
        return
    if isinstance(value, (dict, Counter)):
        for k, v in value.items():
            flatten(kind, v, f"{prefix}{k}.", out)
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            if isinstance(v, dict) and "factor" not in v and "base_lrs" not in v and "_last_lr" not in v:
                raise ValueError("unexpected dict in a list")
            flatten(kind, v, f"{prefix}{i}.", out)
        return
    key = prefix[:-1]
    if isinstance(value, str):
        out[key] = CHOICES[kind][key.split(".")[-1]].index(value)
    elif isinstance(value, bool):
        out[key] = int(value)
    elif math.isinf(value):
        out[key] = "inf" if value > 0 else "-inf"
    else:
        out[key] = value


def state_of(kind, args, sched):
    out = {}
    if kind in ("SequentialLR", "ChainedScheduler"):
        state = sched.state_dict()
        children = state.pop("_schedulers")
        flatten(kind, state, "", out)
        for i, (child, c) in enumerate(zip(children, args["schedulers"])):
            flatten(c["scheduler"], child, f"_schedulers.{i}.", out)
        return out
    flatten(kind, sched.state_dict(), "", out)
    return out


def momenta_of(opt, kind):
    if kind == "SGD":
        return [g["momentum"] for g in opt.param_groups]
    return [g["betas"][0] for g in opt.param_groups]


def run_case(case):
    opt = make_optimizer(case["optimizer"])
    kind = case["scheduler"]
    sched = build(kind, case["args"], opt)
    lrs, momenta = [list(opt.param_groups[i]["lr"] for i in range(2))], [momenta_of(opt, case["optimizer"])]
    last = [list(sched.get_last_lr())]
    steps = case.get("epochs") or case.get("metrics") or [None] * case.get("steps", STEPS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for arg in steps:
            opt.step()
            if "metrics" in case:
                sched.step(arg)
            elif arg is None:
                sched.step()
            else:
                sched.step(arg)
            lrs.append([g["lr"] for g in opt.param_groups])
            momenta.append(momenta_of(opt, case["optimizer"]))
            last.append(list(sched.get_last_lr()))
    assert last == lrs, "get_last_lr() follows the groups' lrs"
    out = dict(case)
    out.update(lrs=lrs, state=state_of(kind, case["args"], sched))
    if kind == "CyclicLR":  # the only new scheduler that moves momenta
        out["momenta"] = momenta
    return out


def c(name, scheduler, args, optimizer="SGD", **extra):
    return dict(name=name, scheduler=scheduler, args=args, optimizer=optimizer, **extra)


# Epochs for step(epoch): out of order and repeated, as a resumed or hand-driven run gives.
EPOCHS = [1, 2, 3, 7, 4, 4, 10, 0, 12, 25, 5, 6, 30, 11]
FRACTIONAL = [0.0, 0.25, 0.5, 1.0, 2.75, 3.0, 4.999, 5.0, 5.5, 7.25, 12.0, 14.5, 15.0, 20.1, 44.9, 45.0, 3.5]

CASES = [
    c("lambda", "LambdaLR", {"lr_lambda": "pow095"}),
    c("lambda_per_group", "LambdaLR", {"lr_lambda": ["inverse", "pow09"]}),
    c("lambda_epochs", "LambdaLR", {"lr_lambda": "pow095"}, epochs=EPOCHS),
    c("multiplicative", "MultiplicativeLR", {"lr_lambda": "const095"}),
    c("multiplicative_per_group", "MultiplicativeLR", {"lr_lambda": ["const09", "linear_down"]}),
    c("multistep", "MultiStepLR", {"milestones": [3, 7, 7, 12], "gamma": 0.5}),
    c("multistep_default", "MultiStepLR", {"milestones": [10, 20]}),
    c("multistep_epochs", "MultiStepLR", {"milestones": [3, 7, 7, 12], "gamma": 0.5}, epochs=EPOCHS),
    c("constant", "ConstantLR", {"factor": 0.25, "total_iters": 4}),
    c("constant_default", "ConstantLR", {}),
    c("constant_epochs", "ConstantLR", {"factor": 0.25, "total_iters": 4}, epochs=EPOCHS),
    c("exponential", "ExponentialLR", {"gamma": 0.9}),
    c("exponential_epochs", "ExponentialLR", {"gamma": 0.9}, epochs=EPOCHS),
    c("polynomial", "PolynomialLR", {"total_iters": 10, "power": 2.0}),
    c("polynomial_default", "PolynomialLR", {}),
    c("polynomial_epochs", "PolynomialLR", {"total_iters": 10, "power": 0.5}, epochs=EPOCHS),
    c("step_epochs", "StepLR", {"step_size": 3, "gamma": 0.5}, epochs=EPOCHS),
    c("linear_epochs", "LinearLR", {"start_factor": 0.25, "total_iters": 8}, epochs=EPOCHS),
    c("cosine_epochs", "CosineAnnealingLR", {"T_max": 10, "eta_min": 0.001}, epochs=EPOCHS),
    c("warm_restarts", "CosineAnnealingWarmRestarts", {"T_0": 5}),
    c("warm_restarts_mult", "CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2, "eta_min": 0.001}, steps=40),
    c("warm_restarts_fractional", "CosineAnnealingWarmRestarts", {"T_0": 5, "eta_min": 0.001}, epochs=FRACTIONAL),
    c("warm_restarts_mult_fractional", "CosineAnnealingWarmRestarts", {"T_0": 3, "T_mult": 2}, epochs=FRACTIONAL),
    c("warm_restarts_mult3_fractional", "CosineAnnealingWarmRestarts", {"T_0": 2, "T_mult": 3, "eta_min": 0.01},
      epochs=FRACTIONAL),
    c("cyclic", "CyclicLR", {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 4}),
    c("cyclic_triangular2", "CyclicLR",
      {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "step_size_down": 5, "mode": "triangular2"}),
    c("cyclic_exp_range_adam", "CyclicLR",
      {"base_lr": 0.001, "max_lr": 0.01, "step_size_up": 5, "mode": "exp_range", "gamma": 0.9}, optimizer="Adam"),
    c("cyclic_scale_fn", "CyclicLR",
      {"base_lr": [0.01, 0.02], "max_lr": [0.1, 0.2], "step_size_up": 2, "step_size_down": 3,
       "scale_fn": "half_per_cycle", "base_momentum": [0.7, 0.75], "max_momentum": 0.95}),
    c("cyclic_scale_fn_iterations", "CyclicLR",
      {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "scale_fn": "pow099", "scale_mode": "iterations"},
      optimizer="Adam"),
    c("cyclic_no_momentum", "CyclicLR",
      {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 4, "mode": "exp_range", "gamma": 0.95,
       "cycle_momentum": False}),
    c("plateau", "ReduceLROnPlateau", {"patience": 2},
      metrics=[1.0, 0.9, 0.9, 0.9, 0.9, 0.85, 0.8499, 0.85, 0.86, 0.84, 0.84, 0.84, 0.84, 0.84, 0.84,
               0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]),
    c("plateau_max_abs", "ReduceLROnPlateau",
      {"mode": "max", "factor": 0.5, "patience": 1, "threshold": 0.01, "threshold_mode": "abs", "cooldown": 2,
       "min_lr": [0.01, 0.004]},
      metrics=[0.1, 0.2, 0.205, 0.21, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35, 0.35,
               0.35, 0.35, 0.35]),
    c("plateau_min_abs_eps", "ReduceLROnPlateau",
      {"factor": 0.9, "patience": 0, "threshold": 0.1, "threshold_mode": "abs", "min_lr": 0.05, "eps": 1e-3},
      metrics=[5.0, 4.0, 3.95, 3.9, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]),
    c("plateau_max_rel", "ReduceLROnPlateau", {"mode": "max", "patience": 3, "cooldown": 1, "threshold": 0.1},
      metrics=[1.0, 1.05, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2, 1.2]),
    c("sequential", "SequentialLR",
      {"schedulers": [{"scheduler": "ConstantLR", "args": {"factor": 0.5, "total_iters": 3}},
                      {"scheduler": "ExponentialLR", "args": {"gamma": 0.9}}],
       "milestones": [4]}),
    c("sequential_warmup_cosine", "SequentialLR",
      {"schedulers": [{"scheduler": "LinearLR", "args": {"start_factor": 0.1, "total_iters": 5}},
                      {"scheduler": "CosineAnnealingLR", "args": {"T_max": 20, "eta_min": 0.0001}}],
       "milestones": [5]}),
    c("sequential_three", "SequentialLR",
      {"schedulers": [{"scheduler": "LinearLR", "args": {"start_factor": 0.5, "total_iters": 3}},
                      {"scheduler": "StepLR", "args": {"step_size": 2, "gamma": 0.5}},
                      {"scheduler": "CosineAnnealingWarmRestarts", "args": {"T_0": 4}}],
       "milestones": [3, 10]}),
    c("chained", "ChainedScheduler",
      {"schedulers": [{"scheduler": "ConstantLR", "args": {"factor": 0.5, "total_iters": 4}},
                      {"scheduler": "ExponentialLR", "args": {"gamma": 0.9}}]}),
    c("chained_linear_multistep", "ChainedScheduler",
      {"schedulers": [{"scheduler": "LinearLR", "args": {"start_factor": 0.2, "total_iters": 6}},
                      {"scheduler": "MultiStepLR", "args": {"milestones": [8, 16], "gamma": 0.3}}]}),
]


def main():
    cases = [run_case(case) for case in CASES]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"torch_version": torch.__version__, "group_lrs": GROUP_LRS, "cases": cases}, f,
                  separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} cases to {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")


if __name__ == "__main__":
    main()
