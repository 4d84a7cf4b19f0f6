#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_efficientnet.cpp, with torchvision's own
efficientnet_b0, EfficientNet and MBConvConfig (torchvision.models.efficientnet) and
torchvision.ops.stochastic_depth (installed in the venv) as the reference.

models_efficientnet_golden.safetensors:
  init.<param>        init_summary (gen_models_golden.py) of EfficientNet(the B0 table with
                      width_mult 0.25, depth_mult 0.5; num_classes 10) from manual_seed(0), float32
  The parity case, as gen_models_mobilenet_golden.py's (see there for the names and summaries):
  efficientnet_b0(num_classes=10) at its real widths in float64 with pattern() weights, input
  [2, 3, 64, 64]; train mode with stochastic_depth_prob=0 and dropout=0 (train.out, .loss, .gx,
  .grads, .after), eval mode with the defaults (dropout 0.2, stochastic_depth_prob 0.2) holding the
  calibrated state (eval.out, .loss, .grads).
  metadata "keys.default"   key:shape list of efficientnet_b0()'s state_dict (1000 classes)
           "keys.b3_table"  EfficientNet(the B0 table with width_mult 1.2, depth_mult 1.4 (B3's),
                            num_classes 10, last_channel None)
           "keys.small"     EfficientNet(width_mult 0.25, depth_mult 0.5, num_classes 10,
                            last_channel 64)
           "sd_probs"       every MBConv's stochastic_depth.p in efficientnet_b0(), ";"-joined
           "msg.*"          torchvision's messages for bad arguments

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_efficientnet_golden.py
"""
import os

import torch
from safetensors.torch import save_file
from torchvision.models import efficientnet_b0
from torchvision.models.efficientnet import EfficientNet, MBConv, MBConvConfig, _efficientnet_conf
from torchvision.ops import stochastic_depth

import gen_models_golden as common
from gen_models_mobilenet_golden import message_of, parity_case

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "golden")


def b_table(width_mult, depth_mult):
    return _efficientnet_conf("efficientnet_b0", width_mult=width_mult, depth_mult=depth_mult)[0]


def goldens():
    out, meta = {}, {}
    torch.manual_seed(0)
    common.init_summary(EfficientNet(b_table(0.25, 0.5), 0.2, num_classes=10), "init", out)
    parity_case(out, lambda: efficientnet_b0(num_classes=10, dropout=0.0, stochastic_depth_prob=0.0),
                lambda: efficientnet_b0(num_classes=10))
    meta["keys.default"] = common.key_list(efficientnet_b0())
    meta["keys.b3_table"] = common.key_list(EfficientNet(b_table(1.2, 1.4), 0.3, num_classes=10))
    meta["keys.small"] = common.key_list(EfficientNet(b_table(0.25, 0.5), 0.2, num_classes=10, last_channel=64))
    meta["sd_probs"] = ";".join(repr(m.stochastic_depth.p) for m in efficientnet_b0().modules()
                                if isinstance(m, MBConv))
    x = torch.ones(4, 3)
    meta["msg.p_high"] = message_of(lambda: stochastic_depth(x, 1.5, "row"))
    meta["msg.p_low"] = message_of(lambda: stochastic_depth(x, -0.1, "row"))
    meta["msg.p_two"] = message_of(lambda: stochastic_depth(x, 2.0, "batch", training=False))
    meta["msg.mode"] = message_of(lambda: stochastic_depth(x, 0.5, "column"))
    meta["msg.empty_setting"] = message_of(lambda: EfficientNet([], 0.2))
    meta["msg.stride"] = message_of(lambda: MBConv(MBConvConfig(6, 3, 3, 16, 24, 1), 0.0, torch.nn.BatchNorm2d))
    return out, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    out, meta = goldens()
    path = os.path.join(OUT, "models_efficientnet_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes,", sum(v.numel() for v in out.values()), "values")


if __name__ == "__main__":
    main()
