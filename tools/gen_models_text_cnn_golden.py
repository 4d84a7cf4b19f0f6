#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_text_cnn.cpp.

The reference is the convolutional sentence classifier (Kim 2014) as bentrevett's
pytorch-sentiment-analysis tutorial writes it with one-dimensional convolutions ("4 -
Convolutional Sentiment Analysis", class CNN1d; the current "3_cnn" notebook keeps the layout):
an Embedding with padding_idx, a ModuleList of Conv1d(embedding_dim, n_filters, fs) over the
embeddings as [batch, embedding_dim, seq len], ReLU, max_pool1d over the whole remaining time
axis, the pooled filters concatenated, dropout, and a Linear to output_dim. Registration order
(embedding, convs, fc, dropout) and PyTorch's default initialisation are the tutorial's. The
input is batch-first ids [batch, seq len], as the current notebook takes it (the legacy one
permuted [seq len, batch] first); the constructor's last argument is named pad_index as there.

models_text_cnn_golden.safetensors (vocab 50, embedding_dim 8, n_filters 4, filter sizes 2, 3, 4,
output_dim 1, dropout 0, pad_index 1; pattern() weights in float64, see gen_models_golden.py):
  ids [3, 9] (pad_index after each sentence's end), label [3] (0. / 1.)
  out [3, 1], loss (BCEWithLogitsLoss of out.squeeze(1), as the tutorial trains it),
  grads (every parameter's gradient, packed() in named_parameters order)
  ce.out [3, 3], ce.loss, ce.grads: the same with output_dim 3 and CrossEntropyLoss (class
  targets ce.label), as the current notebook trains it
  init.<param>: init_summary after manual_seed(0) in float32 (the small configuration with filter
  sizes 2, 3, 4, 5)
  metadata "keys": key:shape list of the tutorial's configuration's state_dict (vocab 25002,
  embedding_dim 100, n_filters 100, filter sizes 3, 4, 5, output_dim 1)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_text_cnn_golden.py
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

from gen_models_golden import OUT, fill_state, init_summary, key_list, packed


class CNN1d(nn.Module):
    def __init__(self, vocab_size, embedding_dim, n_filters, filter_sizes, output_dim, dropout, pad_index):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_index)
        self.convs = nn.ModuleList([nn.Conv1d(in_channels=embedding_dim, out_channels=n_filters, kernel_size=fs)
                                    for fs in filter_sizes])
        self.fc = nn.Linear(len(filter_sizes) * n_filters, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, ids):
        # ids = [batch size, seq len]
        embedded = self.embedding(ids).permute(0, 2, 1)
        # embedded = [batch size, emb dim, seq len]
        conved = [F.relu(conv(embedded)) for conv in self.convs]
        # conved_n = [batch size, n_filters, seq len - filter_sizes[n] + 1]
        pooled = [F.max_pool1d(conv, conv.shape[2]).squeeze(2) for conv in conved]
        cat = self.dropout(torch.cat(pooled, dim=1))
        return self.fc(cat)


SMALL = dict(vocab_size=50, embedding_dim=8, n_filters=4, filter_sizes=[2, 3, 4], output_dim=1, dropout=0.0,
             pad_index=1)


def main():
    out, meta = {}, {}
    torch.manual_seed(0)
    init_summary(CNN1d(**dict(SMALL, filter_sizes=[2, 3, 4, 5])), "init", out)
    meta["keys"] = key_list(CNN1d(25002, 100, 100, [3, 4, 5], 1, 0.5, 1))

    torch.manual_seed(1)
    lengths = [9, 6, 4]
    ids = torch.randint(2, 50, (3, 9))
    for b, n in enumerate(lengths):
        ids[b, n:] = SMALL["pad_index"]
    ids[0, 2] = ids[1, 3] = 7  # a repeated token: its embedding row sums two gradients
    out["ids"] = ids

    model = CNN1d(**SMALL).double()
    fill_state(model)
    label = torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)
    y = model(ids)
    loss = nn.BCEWithLogitsLoss()(y.squeeze(1), label)
    loss.backward()
    out["label"], out["out"], out["loss"] = label, y.detach(), loss.detach()
    out["grads"] = packed(p.grad for _, p in model.named_parameters())

    model = CNN1d(**dict(SMALL, output_dim=3)).double()
    fill_state(model)
    target = torch.tensor([2, 0, 1])
    y = model(ids)
    loss = nn.CrossEntropyLoss()(y, target)
    loss.backward()
    out["ce.label"], out["ce.out"], out["ce.loss"] = target, y.detach(), loss.detach()
    out["ce.grads"] = packed(p.grad for _, p in model.named_parameters())

    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "models_text_cnn_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
