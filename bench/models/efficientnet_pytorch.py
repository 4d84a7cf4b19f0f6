"""PyTorch's side of bench/models/efficientnet_step.cpp: torchvision's efficientnet_b0 itself
(dropout and stochastic depth 0.2; the reference of tools/gen_models_efficientnet_golden.py)."""
import torch
import torch.nn.functional as F
from torchvision.models import efficientnet_b0


def efficientnet_step(device):
    model = efficientnet_b0(num_classes=10).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=4e-5)
    images = torch.randn(16, 3, 64, 64, device=device)
    labels = torch.randint(10, (16,), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return step


STEPS = {"efficientnet_b0": efficientnet_step}
