"""PyTorch's side of bench/models/gpt2_step.cpp (nanoGPT's GPT as tools/gen_models_golden.py writes it)."""
import torch

import gen_models_golden as ref


def gpt2_step(device):
    config = dict(block_size=128, vocab_size=4096, n_layer=4, n_head=4, n_embd=256, dropout=0.0, bias=True)
    model = ref.GPT(config).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    idx = torch.randint(4096, (8, 128), device=device)
    targets = torch.randint(4096, (8, 128), device=device)

    def step():
        optimizer.zero_grad()
        model(idx, targets)[1].backward()
        optimizer.step()

    return step


STEPS = {"gpt2": gpt2_step}
