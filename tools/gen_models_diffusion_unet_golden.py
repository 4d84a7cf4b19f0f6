#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_diffusion_unet.cpp from diffusers 0.42.1's own
UNet2DModel (installed in the venv), restricted to the block types ember supports: DownBlock2D,
AttnDownBlock2D, UNetMidBlock2D, AttnUpBlock2D and UpBlock2D.

models_diffusion_unet_golden.safetensors:
  The small model SMALL (sample 16, block_out_channels (4, 8), layers_per_block 2,
  norm_num_groups 2, attention_head_dim 4: two heads in the attention blocks), in float64 with
  pattern() weights (tools/gen_models_golden.py), on the sample pattern((2, 3, 16, 16), 1000, 0, 4)
  and the timesteps [3, 250] (int64):
    t_emb          time_proj's output (float32, as diffusers computes it in any dtype)
    out, loss      the output and mse_loss(out, pattern(out shape, 2000, 0, 2))
    gx, grads      the sample's gradient, every parameter's (packed() in named_parameters order)
    (the test also checks that one int timestep is broadcast over the batch, and that eval mode
    with dropout gives `out`, comparing ember with itself, which needs no golden)
  SMALL with center_input_sample, flip_sin_to_cos False, freq_shift 1, mid_block_scale_factor 2,
  downsample_padding 0, time_embedding_dim 12, act_fn "mish", add_attention False and
  attn_norm_num_groups 1 changed (VARIANT):
    variant.out    its output, no gradients
  init             init_summary of SMALL from manual_seed(0) in float32, packed: per parameter in
                   named_parameters order its sum and first four values (fewer when it has fewer)
  metadata "keys.small" (key:shape of SMALL), "keys.default" (keys only, UNet2DModel()'s default
           configuration), "keys.four_levels" (key:shape, default block types with
           block_out_channels (8, 16, 24, 32), norm_num_groups 8)
           "error.*"  diffusers' messages for a wrong configuration, and SMALL's for a sample of 4
                      channels (error.sample_channels), of 15x15 (error.sample_size), and a batch of 3 with 2
                      timesteps (error.batch)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_diffusion_unet_golden.py
"""
import os
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models_golden as common  # noqa: E402  (pattern, fill_state, packed, ...)

warnings.filterwarnings("ignore")
from diffusers import UNet2DModel  # noqa: E402

SMALL = dict(sample_size=16, in_channels=3, out_channels=3, block_out_channels=(4, 8), layers_per_block=2,
             norm_num_groups=2, attention_head_dim=4, down_block_types=("DownBlock2D", "AttnDownBlock2D"),
             up_block_types=("AttnUpBlock2D", "UpBlock2D"))
VARIANT = dict(SMALL, center_input_sample=True, flip_sin_to_cos=False, freq_shift=1, mid_block_scale_factor=2.0,
               downsample_padding=0, time_embedding_dim=12, act_fn="mish", add_attention=False,
               attn_norm_num_groups=1)
FOUR_LEVELS = dict(block_out_channels=(8, 16, 24, 32), norm_num_groups=8)


def keys_only(module):
    return ";".join(module.state_dict().keys())


def build(config, dtype=torch.float64):
    model = UNet2DModel(**config).to(dtype)
    common.fill_state(model)
    return model


def main():
    out, meta = {}, {}
    torch.manual_seed(0)
    init_model = UNet2DModel(**SMALL)
    summaries = []
    for _, p in init_model.named_parameters():
        flat = p.detach().reshape(-1)
        summaries.append(torch.cat([flat.double().sum().reshape(1), flat[:4].double()]))
    out["init"] = torch.cat(summaries)

    model = build(SMALL)
    sample = common.pattern((2, 3, 16, 16), 1000, 0.0, 4.0).requires_grad_()
    timesteps = torch.tensor([3, 250])
    out["t_emb"] = model.time_proj(timesteps)
    y = model(sample, timesteps).sample
    loss = F.mse_loss(y, common.pattern(tuple(y.shape), 2000, 0.0, 2.0))
    loss.backward()
    out["out"], out["loss"], out["gx"] = y.detach(), loss.detach(), sample.grad
    out["grads"] = common.packed(p.grad for _, p in model.named_parameters())
    with torch.no_grad():
        out["variant.out"] = build(VARIANT)(sample.detach(), timesteps).sample

    meta["keys.small"] = common.key_list(model)
    meta["keys.default"] = keys_only(UNet2DModel())
    meta["keys.four_levels"] = common.key_list(UNet2DModel(**FOUR_LEVELS))

    def message(**config):
        try:
            UNet2DModel(**config)
        except ValueError as e:
            return str(e)
        return "no error"

    meta["error.lengths"] = message(**dict(SMALL, up_block_types=("UpBlock2D",)))
    meta["error.channels"] = message(**dict(SMALL, block_out_channels=(4, 8, 8)))
    meta["error.unknown"] = message(**dict(SMALL, down_block_types=("DownBlock2D", "NoSuchBlock2D")))
    meta["error.unknown_up"] = message(**dict(SMALL, up_block_types=("NoSuchBlock2D", "UpBlock2D")))

    def forward_message(sample, timesteps):
        try:
            with torch.no_grad():
                model(sample, timesteps)
        except RuntimeError as e:
            return str(e)
        return "no error"

    # A sample with the wrong channels; one whose size the levels cannot halve evenly.
    meta["error.sample_channels"] = forward_message(torch.zeros(2, 4, 16, 16, dtype=torch.float64), timesteps)
    meta["error.sample_size"] = forward_message(torch.zeros(2, 3, 15, 15, dtype=torch.float64), timesteps)
    meta["error.batch"] = forward_message(torch.zeros(3, 3, 16, 16, dtype=torch.float64), timesteps)

    os.makedirs(common.OUT, exist_ok=True)
    path = os.path.join(common.OUT, "models_diffusion_unet_golden.safetensors")
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes,", sum(v.numel() for v in out.values()), "values")


if __name__ == "__main__":
    main()
