"""PyTorch's side of bench/models/llama_step.cpp (Meta's llama/model.py as
tools/gen_models_llama_golden.py writes it with torch.nn layers)."""
import torch
import torch.nn.functional as F

import gen_models_llama_golden as ref


def llama_step(device):
    args = ref.ModelArgs(dim=256, n_layers=4, n_heads=8, n_kv_heads=4, vocab_size=4096, max_seq_len=128)
    model = ref.Transformer(args).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    tokens = torch.randint(4096, (8, 128), device=device)
    targets = torch.randint(4096, (8 * 128,), device=device)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(tokens).view(-1, 4096), targets).backward()
        optimizer.step()

    return step


STEPS = {"llama": llama_step}
