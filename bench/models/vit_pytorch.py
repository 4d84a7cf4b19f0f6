"""PyTorch's side of bench/models/vit_step.cpp (torchvision's own VisionTransformer)."""
import torch
import torch.nn.functional as F
from torchvision.models.vision_transformer import VisionTransformer


def vit_step(device):
    model = VisionTransformer(64, 8, 6, 3, 192, 768, num_classes=10).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images = torch.randn(16, 3, 64, 64, device=device)
    labels = torch.randint(10, (16,), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return step


STEPS = {"vit": vit_step}
