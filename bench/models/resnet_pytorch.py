"""PyTorch's side of bench/models/resnet_step.cpp (the reference ResNet of tools/gen_models_golden.py,
torchvision's layout)."""
import torch
import torch.nn.functional as F

import gen_models_golden as ref


def resnet_step(block, layers, device, batch, size):
    model = ref.ResNet(block, layers, num_classes=10).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    images = torch.randn(batch, 3, size, size, device=device)
    labels = torch.randint(10, (batch,), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(images), labels).backward()
        optimizer.step()

    return step


STEPS = {
    "resnet18": lambda device: resnet_step(ref.BasicBlock, [2, 2, 2, 2], device, 16, 64),
    "resnet50": lambda device: resnet_step(ref.Bottleneck, [3, 4, 6, 3], device, 8, 64),
}
