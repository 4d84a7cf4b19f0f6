"""PyTorch's side of bench/models/vae_step.cpp (the reference VAE of tools/gen_models_vae_golden.py,
pytorch/examples' vae/main.py)."""
import torch

import gen_models_vae_golden as ref


def vae_step(device):
    model = ref.VAE().to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.rand(128, 1, 28, 28, device=device)

    def step():
        optimizer.zero_grad()
        recon, mu, logvar = model(data)
        ref.loss_function(recon, data, mu, logvar).backward()
        optimizer.step()

    return step


STEPS = {"vae": vae_step}
