#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_vae.cpp: pytorch/examples' VAE (vae/main.py).

The reference (VAE, loss_function) is written here as the example writes it (its file trains at
import time, so it cannot be imported), with one departure: the sizes 784, 400 and 20 are
arguments (input_size, hidden_size, latent_size; the example's values by default), which ember's
VAEOptions exposes as a documented extension. bench/models/vae_pytorch.py imports this class.

models_vae_golden.safetensors:
  x [4, 1, 5, 6] (pattern() values in [0, 1), viewed as [4, 30] by forward), eps [4, 5] (pattern()):
  the model VAE(30, 12, 5) with pattern() weights (tests/models/model_pattern.h), float64:
    recon, mu, logvar, loss (loss_function), gx (x's gradient: x is the input and BCE's target),
    grads (every parameter's gradient, packed() in named_parameters order), all with eps given
  seeded.eps, seeded.eps32   torch.randn(4, 5) after manual_seed(7), float64 and float32
  seeded.recon, seeded.loss  forward without eps after manual_seed(7) (randn_like draws it)
  init.<param>               init_summary of VAE() after manual_seed(0), float32
  metadata "keys" (key:shape list of VAE()'s state_dict), "error.view" (the example's message
  for an input whose size is not a multiple of 784)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_vae_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class VAE(nn.Module):
    def __init__(self, input_size=784, hidden_size=400, latent_size=20):
        super().__init__()
        self.input_size = input_size
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc21 = nn.Linear(hidden_size, latent_size)
        self.fc22 = nn.Linear(hidden_size, latent_size)
        self.fc3 = nn.Linear(latent_size, hidden_size)
        self.fc4 = nn.Linear(hidden_size, input_size)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps=None):
        std = torch.exp(0.5 * logvar)
        if eps is None:
            eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps=None):
        mu, logvar = self.encode(x.view(-1, self.input_size))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, recon_x.size(-1)), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def main():
    from safetensors.torch import save_file

    import gen_models_golden as common

    out, meta = {}, {}
    torch.manual_seed(0)
    common.init_summary(VAE(), "init", out)
    meta["keys"] = common.key_list(VAE())
    try:
        VAE()(torch.zeros(2, 100))
    except RuntimeError as e:
        meta["error.view"] = str(e)

    model = VAE(30, 12, 5).double()
    common.fill_state(model)
    x = common.pattern((4, 1, 5, 6), 1000, 0.5, 1.0)
    eps = common.pattern((4, 5), 1001, 0.0, 3.0)
    out["x"], out["eps"] = x, eps
    xg = x.clone().requires_grad_(True)
    recon, mu, logvar = model(xg, eps)
    loss = loss_function(recon, xg, mu, logvar)
    loss.backward()
    for name, value in (("recon", recon), ("mu", mu), ("logvar", logvar), ("loss", loss), ("gx", xg.grad)):
        out[name] = value.detach()
    out["grads"] = common.packed(p.grad for _, p in model.named_parameters())

    torch.manual_seed(7)
    out["seeded.eps"] = torch.randn(4, 5, dtype=torch.float64)
    torch.manual_seed(7)
    out["seeded.eps32"] = torch.randn(4, 5)
    torch.manual_seed(7)
    with torch.no_grad():
        recon, mu, logvar = model(x)
        out["seeded.recon"] = recon
        out["seeded.loss"] = loss_function(recon, x, mu, logvar)

    path = os.path.join(common.OUT, "models_vae_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
