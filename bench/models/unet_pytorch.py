"""PyTorch's side of bench/models/unet_step.cpp (the reference U-Net of
tools/gen_models_unet_golden.py, milesial's Pytorch-UNet layout)."""
import torch
import torch.nn.functional as F

import gen_models_unet_golden as ref


def unet_step(bilinear, device):
    model = ref.UNet(3, 2, bilinear=bilinear, base_channels=16).to(device).train()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-5, weight_decay=1e-8, momentum=0.999)
    images = torch.randn(4, 3, 64, 64, device=device)
    masks = torch.randint(2, (4, 64, 64), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), masks).backward()
        optimizer.step()

    return step


STEPS = {
    "unet": lambda device: unet_step(False, device),
    "unet_bilinear": lambda device: unet_step(True, device),
}
