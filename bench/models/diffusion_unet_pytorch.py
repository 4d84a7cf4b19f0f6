"""PyTorch's side of bench/models/diffusion_unet_step.cpp: diffusers' own UNet2DModel."""
import warnings

import torch
import torch.nn.functional as F

warnings.filterwarnings("ignore")
from diffusers import UNet2DModel  # noqa: E402


def diffusion_step(layers_per_block, device):
    model = UNet2DModel(sample_size=32, block_out_channels=(64, 128), layers_per_block=layers_per_block,
                        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                        up_block_types=("AttnUpBlock2D", "UpBlock2D")).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    noisy = torch.randn(8, 3, 32, 32, device=device)
    noise = torch.randn(8, 3, 32, 32, device=device)
    timesteps = torch.randint(0, 1000, (8,), device=device)

    def step():
        optimizer.zero_grad()
        F.mse_loss(model(noisy, timesteps).sample, noise).backward()
        optimizer.step()

    return step


STEPS = {
    "diffusion_unet": lambda device: diffusion_step(1, device),
    "diffusion_unet_l2": lambda device: diffusion_step(2, device),
}
