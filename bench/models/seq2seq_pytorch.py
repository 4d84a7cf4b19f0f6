"""PyTorch's side of bench/models/seq2seq_step.cpp (the seq2seq tutorial's model with LSTMs as
tools/gen_models_seq2seq_golden.py writes it)."""
import torch
import torch.nn as nn

import gen_models_seq2seq_golden as ref


def seq2seq_step(device):
    model = ref.build(5000, 5000, 256, 512, 512, 0.5).to(device).train()
    model.apply(ref.init_weights)
    optimizer = torch.optim.Adam(model.parameters())
    criterion = nn.CrossEntropyLoss(ignore_index=1)
    batch, length, pad = 32, 30, 1
    src = torch.randint(4, 5000, (length, batch))
    trg = torch.randint(4, 5000, (length, batch))
    lengths = [length - b * 19 // (batch - 1) for b in range(batch)]
    for b in range(batch):
        src[lengths[b]:, b] = pad
        trg[length - b // 2:, b] = pad
    trg[0, :] = 2
    src, trg, src_len = src.to(device), trg.to(device), torch.tensor(lengths)

    def step():
        optimizer.zero_grad()
        outputs = model(src, src_len, trg, teacher_forcing_ratio=1.0)
        criterion(outputs[1:].reshape(-1, 5000), trg[1:].reshape(-1)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


STEPS = {"seq2seq": seq2seq_step}
