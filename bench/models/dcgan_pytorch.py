"""PyTorch's side of bench/models/dcgan_step.cpp (the reference Generator and Discriminator of
tools/gen_models_dcgan_golden.py, pytorch/examples' dcgan/main.py, and its training iteration)."""
import torch
import torch.nn as nn

import gen_models_dcgan_golden as ref


def dcgan_step(device):
    netG = ref.Generator().to(device)
    netG.apply(ref.weights_init)
    netD = ref.Discriminator().to(device)
    netD.apply(ref.weights_init)
    optimizerD, optimizerG = ref.make_optimizer(netD), ref.make_optimizer(netG)
    criterion = nn.BCELoss()
    real = torch.rand(16, 3, 64, 64, device=device) * 2 - 1

    def step():
        noise = torch.randn(16, 100, 1, 1, device=device)
        ref.gan_iteration(netG, netD, optimizerG, optimizerD, criterion, real, noise)

    return step


STEPS = {"dcgan": dcgan_step}
