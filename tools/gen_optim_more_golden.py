#!/usr/bin/env python3
"""Writes tests/optim/golden/optim_more_golden.safetensors: parameter trajectories of torch.optim's
optimizers on a small fixed problem in float64, for tests/optim/test_optim_more.cpp.

The problem: parameters W [3, 4], b [3], V [2, 2, 3] and Q [5, 3] (the initial values are stored as
init.W, ...), constants X [4, 6], Y [3, 6], Z [2, 2, 3], R [3, 2] (const.X, ...), and the loss
    mean((tanh(W @ X + b[:, None]) - Y)^2) + mean(sin(V * Z)) + mean(cos(Q @ R)).
Each case optimizes some of the parameters in one or two parameter groups and takes `steps` steps.
Its metadata "case<i>" is JSON: {"kind": torch.optim class, "groups": [[names], [names]],
"defaults": constructor keyword arguments, "group_options": [{...}, {...}] (per-group overrides),
"steps": n, "state_keys": {parameter index: sorted state names PyTorch keeps}}. Tensors:
case<i>.traj [steps, numel] holds the optimized parameters after each step, flattened and
concatenated in group order; case<i>.state.<index>.<name> PyTorch's final state tensors; LBFGS cases
also case<i>.loss [steps] (what step(closure) returned) and their integer state in the metadata.
"count" is the number of cases. ns.G<k> and ns.O<k>: Muon's Newton-Schulz orthogonalisation of a
[3, 4] and a [6, 3] matrix (bfloat16 inside; stored in float64).

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_optim_more_golden.py
"""
import json
import os

import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "optim", "golden",
                   "optim_more_golden.safetensors")
D = torch.float64

gen = torch.Generator().manual_seed(30)


def draw(*shape, scale=1.0):
    return (torch.rand(*shape, generator=gen, dtype=D) * 2 - 1) * scale


INIT = {"W": draw(3, 4), "b": draw(3, scale=0.5), "V": draw(2, 2, 3), "Q": draw(5, 3)}
CONST = {"X": draw(4, 6, scale=2.0), "Y": draw(3, 6, scale=0.8), "Z": draw(2, 2, 3, scale=3.0), "R": draw(3, 2)}


def loss_of(p):
    c = CONST
    fit = ((torch.tanh(p["W"] @ c["X"] + p["b"][:, None]) - c["Y"]) ** 2).mean()
    return fit + torch.sin(p["V"] * c["Z"]).mean() + torch.cos(p["Q"] @ c["R"]).mean()


CASES = [
    # The existing optimizers' options on float64 (maximize, amsgrad, nesterov, per-group options).
    ("SGD", [["W", "V"], ["b"]], {"lr": 0.05, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
     [{}, {"maximize": True, "lr": 0.02}], 5),
    ("SGD", [["W", "V", "b"]], {"lr": 0.05, "momentum": 0.5, "dampening": 0.2, "maximize": True}, [{}], 5),
    ("Adam", [["W", "V"], ["b"]], {"lr": 0.02, "amsgrad": True, "weight_decay": 0.05},
     [{}, {"maximize": True, "betas": (0.5, 0.9)}], 5),
    ("AdamW", [["W", "V"], ["b"]], {"lr": 0.02, "amsgrad": True, "maximize": True},
     [{}, {"weight_decay": 0.2, "amsgrad": False}], 5),
    ("RMSprop", [["W", "V"], ["b"]], {"lr": 0.01, "centered": True, "momentum": 0.5, "maximize": True},
     [{}, {"centered": False, "weight_decay": 0.1}], 5),
    ("Adadelta", [["W", "V"], ["b"]], {"lr": 0.5, "maximize": True, "weight_decay": 0.1},
     [{}, {"maximize": False, "rho": 0.8}], 5),
    # Adagrad
    ("Adagrad", [["W", "V", "b"]], {"lr": 0.1}, [{}], 5),
    ("Adagrad", [["W", "V"], ["b"]],
     {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 0.2, "eps": 1e-6},
     [{}, {"lr": 0.05, "maximize": True, "initial_accumulator_value": 3.0}], 5),
    # Adamax
    ("Adamax", [["W", "V", "b"]], {"lr": 0.01}, [{}], 5),
    ("Adamax", [["W", "V"], ["b"]], {"lr": 0.02, "betas": (0.8, 0.95), "eps": 1e-4, "weight_decay": 0.1},
     [{}, {"maximize": True, "lr": 0.01}], 5),
    # NAdam
    ("NAdam", [["W", "V", "b"]], {"lr": 0.01}, [{}], 5),
    ("NAdam", [["W", "V"], ["b"]], {"lr": 0.01, "weight_decay": 0.1, "momentum_decay": 0.01},
     [{}, {"decoupled_weight_decay": True}], 5),
    ("NAdam", [["W", "V", "b"]],
     {"lr": 0.01, "weight_decay": 0.05, "decoupled_weight_decay": True, "maximize": True, "betas": (0.8, 0.99)},
     [{}], 5),
    # RAdam: rho_t passes 5 after six steps (beta2 = 0.999), so both branches are taken.
    ("RAdam", [["W", "V", "b"]], {"lr": 0.01}, [{}], 8),
    ("RAdam", [["W", "V"], ["b"]], {"lr": 0.01, "weight_decay": 0.1, "betas": (0.9, 0.99)},
     [{}, {"decoupled_weight_decay": True, "maximize": True}], 8),
    # Rprop
    ("Rprop", [["W", "V", "b"]], {"lr": 0.01}, [{}], 6),
    ("Rprop", [["W", "V"], ["b"]], {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)},
     [{}, {"maximize": True}], 6),
    # ASGD: t0 = 3 starts the averaging within the steps.
    ("ASGD", [["W", "V", "b"]], {"lr": 0.05}, [{}], 5),
    ("ASGD", [["W", "V"], ["b"]], {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 3, "weight_decay": 0.1},
     [{}, {"maximize": True, "lr": 0.02}], 6),
    # Adafactor: factored moments for W, V ([2, 2, 3]: row and column factors per leading index), a
    # full one for b.
    ("Adafactor", [["W", "V", "b"]], {"lr": 0.01}, [{}], 5),
    ("Adafactor", [["W", "V"], ["b"]],
     {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-30, 1e-2), "d": 1.5, "weight_decay": 0.1},
     [{}, {"maximize": True, "eps": (None, 1e-3)}], 5),
    # Muon (2-D parameters only; Q is taller than wide, which the iteration transposes).
    ("Muon", [["W", "Q"]], {"lr": 0.02}, [{}], 4),
    ("Muon", [["W"], ["Q"]],
     {"lr": 0.02, "weight_decay": 0.05, "momentum": 0.9, "nesterov": False, "adjust_lr_fn": "match_rms_adamw"},
     [{}, {"adjust_lr_fn": "spectral_unclamped", "ns_steps": 3, "ns_coefficients": (3.0, -3.2, 1.2)}], 4),
    # LBFGS (one group), closure-based.
    ("LBFGS", [["W", "b"]], {"lr": 1, "max_iter": 5}, [{}], 3),
    ("LBFGS", [["W", "V", "b"]], {"lr": 0.5, "max_iter": 6, "history_size": 3, "line_search_fn": "strong_wolfe"},
     [{}], 3),
    ("LBFGS", [["W", "b"]], {"lr": 0.1, "max_iter": 4, "maximize": True, "tolerance_change": 1e-6}, [{}], 3),
]


def jsonable(options):
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()}


def run(index, kind, groups, defaults, group_options, steps, tensors):
    params = {name: value.clone().requires_grad_(any(name in g for g in groups)) for name, value in INIT.items()}
    torch_groups = [dict({"params": [params[n] for n in names]}, **opts) for names, opts in zip(groups, group_options)]
    opt = getattr(torch.optim, kind)(torch_groups, **defaults)
    ordered = [params[n] for names in groups for n in names]
    traj, losses = [], []

    def closure():
        opt.zero_grad()
        loss = loss_of(params)
        loss.backward()
        return loss

    for _ in range(steps):
        if kind == "LBFGS":
            losses.append(float(opt.step(closure).detach()))
        else:
            closure()
            opt.step()
        traj.append(torch.cat([p.detach().reshape(-1) for p in ordered]))
    tensors[f"case{index}.traj"] = torch.stack(traj)
    meta = {"kind": kind, "groups": groups, "defaults": jsonable(defaults),
            "group_options": [jsonable(o) for o in group_options], "steps": steps, "state_keys": {}}
    sd = opt.state_dict()
    for pid, entries in sd["state"].items():
        meta["state_keys"][str(pid)] = sorted(entries.keys())
        for name, value in entries.items():
            if torch.is_tensor(value):
                tensors[f"case{index}.state.{pid}.{name}"] = value.detach().clone().contiguous()
            elif kind == "LBFGS" and isinstance(value, int):
                meta.setdefault("int_state", {})[name] = value
    if kind == "LBFGS":
        tensors[f"case{index}.loss"] = torch.tensor(losses, dtype=D)
    return meta


def newton_schulz_cases(tensors):
    """Muon's orthogonalisation alone, on a wide and a tall matrix: ns.G<k> in, ns.O<k> out."""
    from torch.optim._muon import _zeropower_via_newtonschulz
    for k, shape in enumerate([(3, 4), (6, 3)]):
        g = draw(*shape)
        tensors[f"ns.G{k}"] = g
        tensors[f"ns.O{k}"] = _zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7).to(D)


def main():
    tensors = {f"init.{k}": v for k, v in INIT.items()}
    newton_schulz_cases(tensors)
    tensors.update({f"const.{k}": v for k, v in CONST.items()})
    metadata = {"count": str(len(CASES)), "torch_version": torch.__version__}
    for i, case in enumerate(CASES):
        metadata[f"case{i}"] = json.dumps(run(i, *case, tensors), sort_keys=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, OUT, metadata=metadata)
    print(f"wrote {len(CASES)} cases, {os.path.getsize(OUT)} bytes to {OUT}")


if __name__ == "__main__":
    main()
