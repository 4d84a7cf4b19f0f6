"""PyTorch's side of bench/models/text_cnn_step.cpp (the tutorial's CNN1d as
tools/gen_models_text_cnn_golden.py writes it)."""
import torch
import torch.nn as nn

import gen_models_text_cnn_golden as ref


def text_cnn_step(device):
    model = ref.CNN1d(20000, 100, 100, [3, 4, 5], 1, 0.5, 1).to(device).train()
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.BCEWithLogitsLoss()
    ids = torch.randint(20000, (64, 200), device=device)
    label = torch.randint(2, (64,), device=device).float()

    def step():
        optimizer.zero_grad()
        criterion(model(ids).squeeze(1), label).backward()
        optimizer.step()

    return step


STEPS = {"text_cnn": text_cnn_step}
