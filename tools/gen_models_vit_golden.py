#!/usr/bin/env python3
"""Writes tests/models/golden/models_vit_golden.safetensors for tests/models/test_vit.cpp, with
torchvision's own VisionTransformer (torchvision.models.vision_transformer, torchvision 0.29) as
the reference.

Cases (float64, pattern() weights as tools/gen_models_golden.py fills them, so no weights are
stored; dropout 0):
  small: image 32, patch 8, 2 layers, 2 heads, hidden 16, mlp 32, 10 classes
  rep:   the same with representation_size 8 (heads.pre_logits, heads.act, heads.head)
  the input [2, 3, 32, 32] is pattern((2, 3, 32, 32), 1000, 0, 4); <c>.target, <c>.out (logits), <c>.loss (cross-entropy),
  small.gx (the input's gradient), <c>.grads (every parameter's gradient, packed() in
  named_parameters order)
  init.<param>  init_summary of the rep configuration built after manual_seed(0) in float32
  metadata "keys.<c>" the key:shape list of each case's state_dict, "keys.vit_b_16" the same for vit_b_16,
  "keys.vit_b_16_narrow" for its depth, heads and patches with hidden 24 and mlp 96

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_vit_golden.py
"""
import os
import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torchvision.models import vision_transformer as tv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_models_golden import OUT, fill_state, init_summary, key_list, packed, pattern  # noqa: E402

SMALL = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32, num_classes=10)


def small_vit(**extra):
    return tv.VisionTransformer(**SMALL, **extra)


def case(name, model, out, meta):
    meta[f"keys.{name}"] = key_list(model)
    model.double()
    fill_state(model)
    model.train()
    x = pattern((2, 3, 32, 32), 1000, 0.0, 4.0).requires_grad_(True)
    target = torch.tensor([3, 7])
    y = model(x)
    loss = F.cross_entropy(y, target)
    loss.backward()
    out[f"{name}.target"] = target
    out[f"{name}.out"] = y.detach()
    out[f"{name}.loss"] = loss.detach()
    if name == "small":
        out[f"{name}.gx"] = x.grad
    out[f"{name}.grads"] = packed(p.grad for _, p in model.named_parameters())


def main():
    out, meta = {}, {}
    torch.manual_seed(0)
    init_summary(small_vit(representation_size=8), "init", out)
    case("small", small_vit(), out, meta)
    case("rep", small_vit(representation_size=8), out, meta)
    meta["keys.vit_b_16"] = key_list(tv.vit_b_16())
    meta["keys.vit_b_16_narrow"] = key_list(tv.VisionTransformer(224, 16, 12, 12, 24, 96))
    path = os.path.join(OUT, "models_vit_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
