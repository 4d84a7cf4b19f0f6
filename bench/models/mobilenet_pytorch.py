"""PyTorch's side of bench/models/mobilenet_step.cpp: torchvision's mobilenet_v2 itself (the
reference of tools/gen_models_mobilenet_golden.py)."""
import torch
import torch.nn.functional as F
from torchvision.models import mobilenet_v2


def mobilenet_step(device):
    model = mobilenet_v2(num_classes=10).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=4e-5)
    images = torch.randn(16, 3, 64, 64, device=device)
    labels = torch.randint(10, (16,), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return step


STEPS = {"mobilenet_v2": mobilenet_step}
