#!/usr/bin/env python3
"""Goldens for tests/io/test_optimizer_state_more.cpp: the optimizer states torch.save writes for
torch.optim's Adagrad, Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor, Muon and LBFGS (two
LBFGS cases: a fixed step and the strong-Wolfe line search), each after a few steps on float64
parameters (and NAdam and LBFGS on float32), and the step that follows them.

For each case <name> it writes, into tests/io/golden/:
  optimizer_state_more_<name>.pt           torch.save(optimizer.state_dict())
  optimizer_state_more_<name>.safetensors  param.<i>  the parameters when the state was saved
                                           grad.<i>   the gradients of the next step (the others)
                                           target.<i> the closure's targets (LBFGS)
                                           next.<i>   the parameters after that step, taken by the
                                                      same PyTorch optimizer (an unbroken run)
                                           next_state.<id>.<name>  its state tensors after that step
The test loads each state into ember's optimizer, takes the next step and compares it with
next.<i>; it also saves ember's state and reads it back.

The other direction, ember's saved states in PyTorch, is checked by hand:
  EMBER_OPTIMIZER_STATE_MORE_OUT=/tmp/states build/tests/ember_tests --gtest_filter='OptimizerStateMore*'
  python tools/gen_optimizer_state_more_golden.py --check /tmp/states
loads each file ember wrote (ember_<name>.pt) with torch.load(weights_only=True) into a fresh
PyTorch optimizer, takes the next step and prints how far it lands from next.<i>; and the states
ember's optimizers made from scratch (ember_own_<name>.pt), continued in PyTorch against ember's
own next step.

Run with the venv's python: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_optimizer_state_more_golden.py
"""
import argparse
import pathlib

import torch
from safetensors.torch import load_file, save_file

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "tests" / "io" / "golden"
O = torch.optim

# name -> (class, parameter sizes, groups as (parameter indices, options), constructor options, steps).
# The groups take the parameters in order, so that PyTorch's ids in the state are their indices.
CASES = {
    "adagrad": (O.Adagrad, [(3, 4), (4,)], [([0], {}), ([1], {"lr": 0.05, "maximize": True})],
                {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01, "initial_accumulator_value": 0.1}, 3),
    "adamax": (O.Adamax, [(3, 4), (4,)], [([0], {}), ([1], {"eps": 1e-6})],
               {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.01}, 3),
    "nadam": (O.NAdam, [(3, 4), (4,)], [([0], {}), ([1], {"decoupled_weight_decay": True, "weight_decay": 0.05})],
              {"lr": 0.01, "momentum_decay": 0.005}, 3),
    "radam": (O.RAdam, [(3, 4), (4,)], [([0], {}), ([1], {"decoupled_weight_decay": True, "weight_decay": 0.05})],
              {"lr": 0.01}, 6),
    "rprop": (O.Rprop, [(3, 4), (4,)], [([0], {"maximize": True}), ([1], {"etas": (0.4, 1.3),
                                                                           "step_sizes": (1e-4, 0.5)})],
              {"lr": 0.02}, 4),
    "asgd": (O.ASGD, [(3, 4), (4,)], [([0], {}), ([1], {"lr": 0.02})],
             {"lr": 0.05, "lambd": 1e-3, "alpha": 0.7, "t0": 2.0, "weight_decay": 0.01}, 4),
    "adafactor": (O.Adafactor, [(3, 4), (2, 3, 4), (4,)], [([0, 1], {}), ([2], {"eps": (1e-20, 1e-3)})],
                  {"lr": 0.02, "beta2_decay": -0.7, "d": 1.5, "weight_decay": 0.01}, 3),
    "muon": (O.Muon, [(3, 4), (5, 3)], [([0], {}), ([1], {"nesterov": False, "adjust_lr_fn": "match_rms_adamw",
                                                           "ns_steps": 4})],
             {"lr": 0.02, "weight_decay": 0.05}, 3),
    "lbfgs": (O.LBFGS, [(3, 4), (4,)], [([0, 1], {})], {"lr": 0.5, "max_iter": 4, "history_size": 3}, 2),
    "lbfgs_strong_wolfe": (O.LBFGS, [(3, 4), (4,)], [([0, 1], {})],
                           {"max_iter": 3, "history_size": 3, "line_search_fn": "strong_wolfe"}, 2),
    # float32: the state tensors in the parameters' dtype, PyTorch's float32 step and mu_product
    # beside them, LBFGS's H_diag and ro as float32 tensors where ember computes in double.
    "nadam_float32": (O.NAdam, [(3, 4), (4,)], [([0, 1], {})], {"lr": 0.01, "weight_decay": 0.01}, 3, torch.float32),
    "lbfgs_float32": (O.LBFGS, [(3, 4), (4,)], [([0, 1], {})], {"lr": 0.5, "max_iter": 4, "history_size": 3}, 2,
                      torch.float32),
}


def dtype_of(name):
    return CASES[name][5] if len(CASES[name]) > 5 else torch.float64


def loss_of(params, targets):
    """LBFGS's closure: a weighted fit with a quartic term, so the curvature changes as it goes."""
    loss = 0
    for i, (p, c) in enumerate(zip(params, targets)):
        d = p - c
        q = p * p
        loss = loss + ((d * d) * (i + 1.0)).sum() + 0.1 * (q * q).sum()
    return loss


def make(name, params):
    cls, _, groups, options = CASES[name][:4]
    return cls([dict(params=[params[i] for i in ids], **extra) for ids, extra in groups], **options)


def take_step(name, opt, params, grads, targets):
    if CASES[name][0] is O.LBFGS:
        def closure():
            opt.zero_grad()
            loss = loss_of(params, targets)
            loss.backward()
            return loss
        opt.step(closure)
    else:
        for p, g in zip(params, grads):
            p.grad = g.clone()
        opt.step()


def generate():
    for index, (name, (cls, sizes, _, _, steps, *_)) in enumerate(CASES.items()):
        gen = torch.Generator().manual_seed(1234 + index)
        dtype = dtype_of(name)
        draw = lambda s, scale=1.0: (torch.randn(s, generator=gen, dtype=torch.float64) * scale).to(dtype)  # noqa: E731
        params = [draw(s).requires_grad_() for s in sizes]
        targets = [draw(s, 0.5) for s in sizes]
        opt = make(name, params)
        for _ in range(steps):
            take_step(name, opt, params, [draw(s) for s in sizes], targets)
        out = {}
        for i, p in enumerate(params):
            out[f"param.{i}"] = p.detach().clone()
            out[f"target.{i}"] = targets[i]
        grads = [draw(s) for s in sizes]
        for i, g in enumerate(grads):
            out[f"grad.{i}"] = g
        torch.save(opt.state_dict(), GOLDEN / f"optimizer_state_more_{name}.pt")
        take_step(name, opt, params, grads, targets)
        for i, p in enumerate(params):
            out[f"next.{i}"] = p.detach().clone()
        for index, entries in opt.state_dict()["state"].items():
            for key, value in entries.items():
                if torch.is_tensor(value):
                    out[f"next_state.{index}.{key}"] = value.detach().clone()
        save_file(out, str(GOLDEN / f"optimizer_state_more_{name}.safetensors"))
        print(name, cls.__name__, "state:", {k: sorted(v) for k, v in opt.state_dict()["state"].items()})


def check(folder):
    """ember's saved states continue in PyTorch as PyTorch's own did."""
    worst = 0.0
    for name in CASES:
        path = pathlib.Path(folder) / f"ember_{name}.pt"
        data = load_file(str(GOLDEN / f"optimizer_state_more_{name}.safetensors"))
        n = len(CASES[name][1])
        params = [data[f"param.{i}"].clone().requires_grad_() for i in range(n)]
        opt = make(name, params)
        opt.load_state_dict(torch.load(path, weights_only=True))
        take_step(name, opt, params, [data[f"grad.{i}"] for i in range(n)], [data[f"target.{i}"] for i in range(n)])
        err = max(float((p.detach() - data[f"next.{i}"]).abs().max()) for i, p in enumerate(params))
        worst = max(worst, err) if name != "muon" else worst
        print(f"{name:20s} loaded by torch.load + load_state_dict; next step off PyTorch's unbroken run by {err:.3g}")
    print(f"largest difference (Muon aside): {worst:.3g}")
    # States ember's optimizers made themselves (two steps from scratch, ember's default options
    # for the rest): PyTorch continues them where ember's own next step went.
    worst = 0.0
    for name in CASES:
        path = pathlib.Path(folder) / f"ember_own_{name}.pt"
        if not path.exists():
            continue
        run = load_file(str(pathlib.Path(folder) / f"ember_own_{name}.safetensors"))
        data = load_file(str(GOLDEN / f"optimizer_state_more_{name}.safetensors"))
        n = len(CASES[name][1])
        params = [run[f"param.{i}"].clone().requires_grad_() for i in range(n)]
        opt = make(name, params)
        opt.load_state_dict(torch.load(path, weights_only=True))
        take_step(name, opt, params, [data[f"grad.{i}"] for i in range(n)], [data[f"target.{i}"] for i in range(n)])
        err = max(float((p.detach() - run[f"next.{i}"]).abs().max()) for i, p in enumerate(params))
        worst = max(worst, err) if name != "muon" else worst
        print(f"{name:20s} ember's own state: PyTorch's next step off ember's by {err:.3g}")
    print(f"largest difference (Muon aside): {worst:.3g}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", metavar="DIR", help="load ember's saved states from DIR into PyTorch")
    args = parser.parse_args()
    if args.check:
        check(args.check)
    else:
        generate()
