#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_dcgan.cpp: pytorch/examples' DCGAN
(dcgan/main.py: Generator, Discriminator, weights_init, and one iteration of its training loop).

The reference is written here as the example writes it (its file parses arguments and trains at
import time, so it cannot be imported); nz, ngf, ndf and nc, module globals there, are constructor
arguments here (ember's DCGANOptions, the example's names and defaults); ngpu/data_parallel is
left out (one device). bench/models/dcgan_pytorch.py imports these classes and gan_iteration.

models_dcgan_golden.safetensors: nz 4, ngf 2, ndf 2, nc 1 (the example's MNIST channel count),
64x64 (the architecture's fixed size), batch 2, float64, both networks with pattern() weights
(tests/models/model_pattern.h's fill_state on each), real = pattern([2, 1, 64, 64], 1000, 0, 2),
noise = pattern([2, 4, 1, 1], 1001, 0, 2); one iteration of the example's loop (BCELoss, Adam lr
2e-4 betas (0.5, 0.999) for each network):
  d_real        D(real)                     err_d_real  BCE(D(real), 1)
  fake          G(noise)                    d_fake1     D(fake.detach())    err_d_fake  BCE(d_fake1, 0)
  d.grads       D's gradients at optimizerD.step() (both backward passes), packed() in
                named_parameters order
  d.after       D's parameters after its Adam step, packed()
  d_fake2       D(fake) with the stepped D     err_g       BCE(d_fake2, 1)
  g.grads       G's gradients at optimizerG.step(); g.after G's parameters after its step
  d.grads_end   D's gradients at the end: errG's backward adds to them (the loop zeroes them
                only at the next iteration)
  d.buffers, g.buffers   every buffer at the end (three forwards of D, one of G), packed()
  init.G.<param>, init.D.<param>: init_summary of Generator then Discriminator (nz 8, ngf 4,
                ndf 4, nc 3) built after one manual_seed(0), weights_init applied, float32
  metadata "keys.G", "keys.D": the default networks' state_dict key:shape lists; "error.G"
  and "error.D": PyTorch's messages for z with 50 channels and for a 32x32 image

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_dcgan_golden.py
"""
import os

import torch
import torch.nn as nn


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def make_optimizer(net, lr=0.0002, beta1=0.5):
    return torch.optim.Adam(net.parameters(), lr=lr, betas=(beta1, 0.999))


def gan_iteration(netG, netD, optimizerG, optimizerD, criterion, real, noise, record=None):
    """One iteration of the example's loop: (1) D on real with label 1 and on fake.detach() with
    label 0, optimizerD.step(); (2) G through D with label 1, optimizerG.step(). `record`, when
    given, is called with what the golden keeps at each point."""
    netD.zero_grad()
    label = torch.full((real.size(0),), 1.0, dtype=real.dtype, device=real.device)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    if record:
        record("d_real", output)
        record("err_d_real", errD_real)
    fake = netG(noise)
    label.fill_(0.0)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    if record:
        record("fake", fake)
        record("d_fake1", output)
        record("err_d_fake", errD_fake)
        record("d.grads", [p.grad for p in netD.parameters()])
    optimizerD.step()
    if record:
        record("d.after", list(netD.parameters()))
    netG.zero_grad()
    label.fill_(1.0)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    if record:
        record("d_fake2", output)
        record("err_g", errG)
        record("g.grads", [p.grad for p in netG.parameters()])
        record("d.grads_end", [p.grad for p in netD.parameters()])
    optimizerG.step()
    if record:
        record("g.after", list(netG.parameters()))
    return errD_real + errD_fake, errG


def main():
    from safetensors.torch import save_file

    import gen_models_golden as common

    out, meta = {}, {}
    torch.manual_seed(0)
    netG = Generator(8, 4, 3)
    netG.apply(weights_init)
    netD = Discriminator(4, 3)
    netD.apply(weights_init)
    common.init_summary(netG, "init.G", out)
    common.init_summary(netD, "init.D", out)
    meta["keys.G"] = common.key_list(Generator())
    meta["keys.D"] = common.key_list(Discriminator())
    try:
        Generator()(torch.zeros(2, 50, 1, 1))
    except RuntimeError as e:
        meta["error.G"] = str(e)
    try:
        Discriminator()(torch.zeros(2, 3, 32, 32))
    except RuntimeError as e:
        meta["error.D"] = str(e)

    netG, netD = Generator(4, 2, 1).double(), Discriminator(2, 1).double()
    common.fill_state(netG)
    common.fill_state(netD)
    real = common.pattern((2, 1, 64, 64), 1000, 0.0, 2.0)
    noise = common.pattern((2, 4, 1, 1), 1001, 0.0, 2.0)

    def record(name, value):
        out[name] = common.packed(value) if isinstance(value, list) else value.detach().clone()

    gan_iteration(netG, netD, make_optimizer(netG), make_optimizer(netD), nn.BCELoss(), real, noise, record)
    out["d.buffers"] = common.packed(b for _, b in netD.named_buffers())
    out["g.buffers"] = common.packed(b for _, b in netG.named_buffers())

    path = os.path.join(common.OUT, "models_dcgan_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
