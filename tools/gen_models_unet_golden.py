#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_unet.cpp: the U-Net of milesial's
Pytorch-UNet (unet/unet_parts.py and unet/unet_model.py), written here in its layout (the package
is not installed): DoubleConv (`double_conv`: Conv2d 3x3 without bias, BatchNorm2d, ReLU, twice),
Down (`maxpool_conv`: MaxPool2d(2), DoubleConv), Up (bilinear Upsample + DoubleConv(in, out,
in // 2), or ConvTranspose2d(in, in // 2, 2, stride 2) + DoubleConv(in, out); the upsampled map
padded to the skip's size, then cat([skip, upsampled])), OutConv (1x1) and UNet(n_channels,
n_classes, bilinear=False) with inc, down1..down4, up1..up4, outc. (The current layout: no bias
in DoubleConv's convolutions, bilinear off by default, up4 = Up(128, 64).)

The one departure, used only to keep the goldens small: the channel width of the first level
(the reference's fixed 64; the others are 2x, 4x, 8x, 16x it) is a parameter, `base_channels`,
which ember exposes as a documented extension. The structure is otherwise unchanged.

models_unet_golden.safetensors, per case <c> in (transposed, bilinear): UNet(3, 2, bilinear,
base_channels=1), float64, pattern() weights (tools/gen_models_golden.py), input
pattern((2, 3, 17, 19), 1000, 0, 4) (odd sizes: the decoder pads its upsampled maps):
  <c>.target                      per-pixel classes [2, 17, 19]
  <c>.train.out, .loss, .gx (transposed), .grads, .after   train mode (batch statistics; running ones after)
  <c>.eval.out, .loss, .grads     eval mode, after calibrate_running_stats (.grads: bilinear only)
                                  (loss: cross_entropy per pixel, mean)
  up.<bilinear|transposed>.out, .gx1, .gx2, .grads   one Up(8, 4) alone (train mode) on
                                  x1 [2, 8 (bilinear: 4), 3, 3] and a skip x2 [2, 4, 9, 8] (the pad splits 3 as
                                  1 + 2 and 2 as 1 + 1); loss sum(out * w), w = pattern(out, 77, 0, 2)
  init.<bilinear|transposed>      per parameter (named_parameters order) its sum and first four
                                  values after manual_seed(0), base_channels 4, float32
  metadata "keys.<c>"             key:shape list of UNet(3, 2, bilinear) at full size
           "keys.<c>_base8"       the same with base_channels 8
           "error.channels", "error.small"   the messages for 4 channels into UNet(3, 2,
                                  base_channels=4) and for an 8x8 image (eval mode)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_unet_golden.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_models_golden as common  # noqa: E402  (pattern, fill_state, packed, ...)


# ---------------------------------------------------------------- milesial's unet_parts.py
class DoubleConv(nn.Module):
    """(convolution => BN => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


# ---------------------------------------------------------------- milesial's unet_model.py
class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, base_channels=64):
        super().__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        c = base_channels
        self.inc = DoubleConv(n_channels, c)
        self.down1 = Down(c, 2 * c)
        self.down2 = Down(2 * c, 4 * c)
        self.down3 = Down(4 * c, 8 * c)
        factor = 2 if bilinear else 1
        self.down4 = Down(8 * c, 16 * c // factor)
        self.up1 = Up(16 * c, 8 * c // factor, bilinear)
        self.up2 = Up(8 * c, 4 * c // factor, bilinear)
        self.up3 = Up(4 * c, 2 * c // factor, bilinear)
        self.up4 = Up(2 * c, c, bilinear)
        self.outc = OutConv(c, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up1(x5, x4)
        x = self.up2(x, x3)
        x = self.up3(x, x2)
        x = self.up4(x, x1)
        return self.outc(x)


INPUT_SHAPE = (2, 3, 17, 19)


def unet_case(name, bilinear, out, meta):
    model = UNet(3, 2, bilinear=bilinear, base_channels=1).double()
    common.fill_state(model)
    x = common.pattern(INPUT_SHAPE, 1000, 0.0, 4.0)
    g = torch.Generator().manual_seed(1 if bilinear else 2)
    target = torch.randint(0, 2, (INPUT_SHAPE[0],) + INPUT_SHAPE[2:], generator=g)
    out[f"{name}.target"] = target
    for mode in ("train", "eval"):
        if mode == "eval":
            common.calibrate_running_stats(model, x)
        model.train(mode == "train")
        model.zero_grad()
        # The input's gradient of the transposed model only (that of the other would add 16 KB).
        input_grad = mode == "train" and not bilinear
        xg = x.clone().requires_grad_(input_grad)
        y = model(xg)
        loss = F.cross_entropy(y, target)
        loss.backward()
        out[f"{name}.{mode}.out"] = y.detach()
        out[f"{name}.{mode}.loss"] = loss.detach()
        if mode == "train":
            if input_grad:
                out[f"{name}.train.gx"] = xg.grad
            out[f"{name}.train.after"] = common.packed(v for _, v in model.named_buffers())
        if mode == "train" or bilinear:  # (the transposed model's eval gradients would double the file)
            out[f"{name}.{mode}.grads"] = common.packed(p.grad for _, p in model.named_parameters())


def up_case(name, bilinear, out):
    up = Up(8, 4, bilinear).double()
    common.fill_state(up)
    # In the U-Net a bilinear Up gets in_channels / 2 channels from below (down4 halves them).
    x1 = common.pattern((2, 4 if bilinear else 8, 3, 3), 11, 0.0, 2.0).requires_grad_()
    x2 = common.pattern((2, 4, 9, 8), 12, 0.0, 2.0).requires_grad_()
    y = up(x1, x2)
    (y * common.pattern(tuple(y.shape), 77, 0.0, 2.0)).sum().backward()
    out[f"up.{name}.out"] = y.detach()
    out[f"up.{name}.gx1"] = x1.grad
    out[f"up.{name}.gx2"] = x2.grad
    out[f"up.{name}.grads"] = common.packed(p.grad for _, p in up.named_parameters())


def packed_init_summary(model):
    """common.init_summary in one tensor: per parameter in named_parameters order its sum (in
    float64) and first four values."""
    parts = []
    for _, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        parts.append(torch.cat([flat.double().sum().reshape(1), flat[:4].double()]))
    return torch.cat(parts)


def main():
    out, meta = {}, {}
    for name, bilinear in (("transposed", False), ("bilinear", True)):
        torch.manual_seed(0)
        out[f"init.{name}"] = packed_init_summary(UNet(3, 2, bilinear=bilinear, base_channels=4))
        unet_case(name, bilinear, out, meta)
        up_case(name, bilinear, out)
        meta[f"keys.{name}"] = common.key_list(UNet(3, 2, bilinear=bilinear))
        meta[f"keys.{name}_base8"] = common.key_list(UNet(3, 2, bilinear=bilinear, base_channels=8))
    # The reference's messages for the wrong inputs users make most.
    model = UNet(3, 2, base_channels=4).eval()
    for key, x in (("error.channels", torch.zeros(1, 4, 32, 32)), ("error.small", torch.zeros(1, 3, 8, 8))):
        try:
            model(x)
        except RuntimeError as e:
            meta[key] = str(e)
    os.makedirs(common.OUT, exist_ok=True)
    path = os.path.join(common.OUT, "models_unet_golden.safetensors")
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes,", sum(v.numel() for v in out.values()), "values")


if __name__ == "__main__":
    main()
