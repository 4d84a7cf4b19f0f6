#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_mobilenet.cpp, with torchvision's own
mobilenet_v2 (torchvision.models.mobilenetv2, installed in the venv) as the reference.

models_mobilenet_golden.safetensors:
  init.<param>        init_summary (gen_models_golden.py) of mobilenet_v2(num_classes=10,
                      width_mult=0.25) built from manual_seed(0) in float32
  The parity case: mobilenet_v2(num_classes=10) at its real widths, in float64, its weights and
  running statistics pattern() values (gen_models_golden.py's fill_state), input [2, 3, 64, 64]
  pattern(t=1000, offset 0, scale 4). (At 32x32 the last stage is 1x1, and train-mode BatchNorm
  over 2 values per channel makes the gradients ill-conditioned: a 1e-12 change of the input
  moves them by 2e-5 in MobileNetV2 and 1e-2 in EfficientNet; at 64x64 by 1e-13.)
  target              the class targets
  train.out, .loss    train mode with dropout=0 (batch statistics)
  train.gx            summary of the input's gradient
  train.grads         summaries of every parameter's gradient, in named_parameters order
  train.after         summaries of the buffers after that forward, in named_buffers order
  eval.out, .loss, .grads   eval mode of mobilenet_v2(num_classes=10) with the default dropout,
                      holding the train model's state after calibrate_running_stats on 4 images
                      [4, 3, 64, 64] pattern(t=2000, offset 0, scale 4)
  A summary of a tensor is [sum, sum of |x|, then up to 16 entries: the flattened tensor taken
  every max(1, n // 16) elements] (the full gradients of a 2.2M-parameter model would be 17 MB).
  metadata "keys.default"   key:shape list of mobilenet_v2()'s state_dict (1000 classes)
           "keys.w050"      mobilenet_v2(num_classes=10, width_mult=0.5)
           "keys.custom"    mobilenet_v2(num_classes=5, width_mult=1.3, round_nearest=4,
                            inverted_residual_setting=[[1, 8, 1, 1], [6, 12, 2, 2], [4, 20, 1, 1]])
           "msg.*"          torchvision's messages for bad arguments

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_mobilenet_golden.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torchvision.models import mobilenet_v2
from torchvision.models.mobilenetv2 import InvertedResidual

import gen_models_golden as common

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "golden")
SAMPLES = 16


def summary(t):
    """[sum, sum |t|, up to SAMPLES entries of t flattened, every max(1, n // SAMPLES)]."""
    flat = t.detach().double().reshape(-1)
    step = max(1, flat.numel() // SAMPLES)
    return torch.cat([flat.sum().reshape(1), flat.abs().sum().reshape(1), flat[::step][:SAMPLES]])


def summaries(tensors):
    return torch.cat([summary(t) for t in tensors])


def message_of(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - any error's text is what we record
        return str(e)
    raise AssertionError("no error")


def parity_case(out, make_train, make_eval, input_grad=True):
    """Train mode on make_train()'s model, then eval mode on make_eval()'s model holding the train
    model's state after calibrate_running_stats (on 4 other images); both float64, pattern() weights."""
    model = make_train().double()
    common.fill_state(model)
    x = common.pattern((2, 3, 64, 64), 1000, 0.0, 4.0)
    target = torch.tensor([3, 7])
    out["target"] = target
    model.train()
    xg = x.clone().requires_grad_(input_grad)
    y = model(xg)
    loss = F.cross_entropy(y, target)
    loss.backward()
    out["train.out"], out["train.loss"] = y.detach(), loss.detach()
    if input_grad:
        out["train.gx"] = summary(xg.grad)
    out["train.after"] = summaries(v for _, v in model.named_buffers())
    out["train.grads"] = summaries(p.grad for _, p in model.named_parameters())

    # Running statistics from 4 other images: from x's 2 alone, the last stage (2x2) would hold
    # variances of 8 values per channel, too few for eval mode to stay near train mode's scale.
    common.calibrate_running_stats(model, common.pattern((4, 3, 64, 64), 2000, 0.0, 4.0))
    evaluated = make_eval().double()
    evaluated.load_state_dict(model.state_dict())
    evaluated.eval()
    y = evaluated(x)
    loss = F.cross_entropy(y, target)
    loss.backward()
    out["eval.out"], out["eval.loss"] = y.detach(), loss.detach()
    out["eval.grads"] = summaries(p.grad for _, p in evaluated.named_parameters())


def goldens():
    out, meta = {}, {}
    torch.manual_seed(0)
    common.init_summary(mobilenet_v2(num_classes=10, width_mult=0.25), "init", out)
    parity_case(out, lambda: mobilenet_v2(num_classes=10, dropout=0.0), lambda: mobilenet_v2(num_classes=10))
    meta["keys.default"] = common.key_list(mobilenet_v2())
    meta["keys.w050"] = common.key_list(mobilenet_v2(num_classes=10, width_mult=0.5))
    meta["keys.custom"] = common.key_list(mobilenet_v2(
        num_classes=5, width_mult=1.3, round_nearest=4,
        inverted_residual_setting=[[1, 8, 1, 1], [6, 12, 2, 2], [4, 20, 1, 1]]))
    meta["msg.stride"] = message_of(lambda: InvertedResidual(8, 8, 3, 6))
    meta["msg.empty_setting"] = message_of(lambda: mobilenet_v2(inverted_residual_setting=[]))
    meta["msg.short_row"] = message_of(lambda: mobilenet_v2(inverted_residual_setting=[[1, 16, 1]]))
    return out, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    out, meta = goldens()
    path = os.path.join(OUT, "models_mobilenet_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes,", sum(v.numel() for v in out.values()), "values")


if __name__ == "__main__":
    main()
