#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_seq2seq.cpp.

The reference is the attention sequence-to-sequence model of bentrevett's pytorch-seq2seq
tutorial "4 - Packed Padded Sequences, Masking, Inference and BLEU" (Encoder, Attention, Decoder,
Seq2Seq, and its init_weights), with the module names, registration order and computations of
the tutorial, and these departures:
  * the two GRUs are LSTMs (the encoder's bidirectional, over the packed source; the decoder's
    one-step). The encoder's final cell states are dropped as its GRU had none: the decoder's
    LSTM starts from the tutorial's hidden = tanh(fc([h_fwd; h_bwd])) and a zero cell state, and
    carries its cell state from step to step;
  * teacher forcing: the tutorial draws random.random() < teacher_forcing_ratio at each step;
    forward here also takes the decisions themselves (teacher_force, one per step t = 1 ..
    trg_len - 1), so that the golden is deterministic. A ratio of 1 or 0 decides alike;
  * the outputs tensor takes the decoder's dtype and device (the tutorial's torch.zeros is float32
    and moved to a device given to Seq2Seq's constructor), so that float64 stays float64.

models_seq2seq_golden.safetensors (input_dim 13, output_dim 11, emb 6, enc_hid 5, dec_hid 7,
dropout 0, src_pad_idx 1, trg_pad_idx 1; pattern() weights in float64, see gen_models_golden.py):
  src [7, 4] (lengths src_len [7, 5, 3, 2], decreasing as the tutorial's sorted batches, padded
  with 1), src_len, trg [6, 4] (<sos> 2 first, some targets padded with 1)
  tf.out [6, 4, 11], tf.loss, tf.grads: teacher forcing at every step (ratio 1); the loss is the
  tutorial's CrossEntropyLoss(ignore_index = 1) of out[1:] against trg[1:]; grads packed() in
  named_parameters order
  mixed.out, mixed.loss, mixed.grads: teacher_force = [1, 0, 0, 1, 0] (steps 2, 3 and 5 read the
  decoder's own argmax)
  enc.outputs [7, 4, 10], enc.hidden [4, 7]: the encoder alone (zeros after each source's end)
  init.<param>: init_summary after manual_seed(0), building the model and applying the
  tutorial's init_weights, in float32 (input_dim 13, output_dim 11, emb 6, enc_hid 5, dec_hid 7)
  metadata "keys": key:shape list of the tutorial's configuration's state_dict (input 7853,
  output 5893, emb 256, hidden 512)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_seq2seq_golden.py
"""
import os
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

from gen_models_golden import OUT, fill_state, init_summary, key_list, packed


class Encoder(nn.Module):
    def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
        super().__init__()
        self.embedding = nn.Embedding(input_dim, emb_dim)
        self.rnn = nn.LSTM(emb_dim, enc_hid_dim, bidirectional=True)
        self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, src_len):
        # src = [src len, batch size], src_len = [batch size] (decreasing)
        embedded = self.dropout(self.embedding(src))
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, src_len.to("cpu"))
        packed_outputs, (hidden, cell) = self.rnn(packed_embedded)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(packed_outputs)
        # hidden[-2] is the last forward state, hidden[-1] the last backward one
        hidden = torch.tanh(self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
        return outputs, hidden


class Attention(nn.Module):
    def __init__(self, enc_hid_dim, dec_hid_dim):
        super().__init__()
        self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
        self.v = nn.Linear(dec_hid_dim, 1, bias=False)

    def forward(self, hidden, encoder_outputs, mask):
        src_len = encoder_outputs.shape[0]
        hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        energy = torch.tanh(self.attn(torch.cat((hidden, encoder_outputs), dim=2)))
        attention = self.v(energy).squeeze(2)
        attention = attention.masked_fill(mask == 0, -1e10)
        return F.softmax(attention, dim=1)


class Decoder(nn.Module):
    def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
        super().__init__()
        self.output_dim = output_dim
        self.attention = attention
        self.embedding = nn.Embedding(output_dim, emb_dim)
        self.rnn = nn.LSTM((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
        self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, input, hidden, cell, encoder_outputs, mask):
        input = input.unsqueeze(0)
        embedded = self.dropout(self.embedding(input))
        a = self.attention(hidden, encoder_outputs, mask).unsqueeze(1)
        encoder_outputs = encoder_outputs.permute(1, 0, 2)
        weighted = torch.bmm(a, encoder_outputs).permute(1, 0, 2)
        rnn_input = torch.cat((embedded, weighted), dim=2)
        output, (hidden, cell) = self.rnn(rnn_input, (hidden.unsqueeze(0), cell.unsqueeze(0)))
        embedded, output, weighted = embedded.squeeze(0), output.squeeze(0), weighted.squeeze(0)
        prediction = self.fc_out(torch.cat((output, weighted, embedded), dim=1))
        return prediction, hidden.squeeze(0), cell.squeeze(0), a.squeeze(1)


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder, src_pad_idx):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_pad_idx = src_pad_idx

    def create_mask(self, src):
        return (src != self.src_pad_idx).permute(1, 0)

    def forward(self, src, src_len, trg, teacher_forcing_ratio=0.5, teacher_force=None):
        batch_size, trg_len = src.shape[1], trg.shape[0]
        encoder_outputs, hidden = self.encoder(src, src_len)
        cell = torch.zeros_like(hidden)
        outputs = torch.zeros(trg_len, batch_size, self.decoder.output_dim, dtype=hidden.dtype)
        input = trg[0, :]
        mask = self.create_mask(src)
        for t in range(1, trg_len):
            output, hidden, cell, _ = self.decoder(input, hidden, cell, encoder_outputs, mask)
            outputs[t] = output
            force = teacher_force[t - 1] if teacher_force is not None else random.random() < teacher_forcing_ratio
            top1 = output.argmax(1)
            input = trg[t] if force else top1
        return outputs


def init_weights(m):
    for name, param in m.named_parameters():
        if "weight" in name:
            nn.init.normal_(param.data, mean=0, std=0.01)
        else:
            nn.init.constant_(param.data, 0)


def build(input_dim, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, src_pad_idx=1):
    attn = Attention(enc_hid_dim, dec_hid_dim)
    enc = Encoder(input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout)
    dec = Decoder(output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attn)
    return Seq2Seq(enc, dec, src_pad_idx)


SMALL = dict(input_dim=13, output_dim=11, emb_dim=6, enc_hid_dim=5, dec_hid_dim=7, dropout=0.0)
PAD, SOS = 1, 2


def main():
    out, meta = {}, {}
    torch.manual_seed(0)
    model = build(**SMALL)
    model.apply(init_weights)
    init_summary(model, "init", out)
    meta["keys"] = key_list(build(7853, 5893, 256, 512, 512, 0.5))

    torch.manual_seed(1)
    src_len = torch.tensor([7, 5, 3, 2])
    src = torch.randint(3, 13, (7, 4))
    for b, n in enumerate(src_len.tolist()):
        src[n:, b] = PAD
    trg = torch.randint(3, 11, (6, 4))
    trg[0, :] = SOS
    trg[4:, 2] = PAD
    trg[3:, 3] = PAD
    out["src"], out["src_len"], out["trg"] = src, src_len, trg

    model = build(**SMALL).double()
    fill_state(model)
    with torch.no_grad():
        outputs, hidden = model.encoder(src, src_len)
    out["enc.outputs"], out["enc.hidden"] = outputs, hidden
    criterion = nn.CrossEntropyLoss(ignore_index=PAD)
    for name, decisions in (("tf", [True] * 5), ("mixed", [True, False, False, True, False])):
        model.zero_grad()
        y = model(src, src_len, trg, teacher_force=decisions)
        loss = criterion(y[1:].reshape(-1, y.shape[-1]), trg[1:].reshape(-1))
        loss.backward()
        out[f"{name}.out"], out[f"{name}.loss"] = y.detach(), loss.detach()
        out[f"{name}.grads"] = packed(p.grad for _, p in model.named_parameters())

    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "models_seq2seq_golden.safetensors")
    save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
    print(path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
