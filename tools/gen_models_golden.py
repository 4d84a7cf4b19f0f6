#!/usr/bin/env python3
"""Writes the PyTorch goldens for tests/models/test_resnet.cpp and tests/models/test_gpt2.cpp.

torchvision is not installed (and nothing can be downloaded), so this script writes torchvision's
ResNet (BasicBlock, Bottleneck, _make_layer, the initialisation) and nanoGPT's GPT (model.py)
itself, with the same module names, registration order and computations, so that their
state_dicts have the reference keys in the reference order.

The one departure, used only to keep the goldens small: ResNet's per-stage widths (torchvision's
fixed 64, 128, 256, 512, where the stem also has 64) are a parameter, `stage_widths`, which
ember exposes as a documented extension. The structure is otherwise unchanged.

models_resnet_golden.safetensors, per case <c>: r18 (BasicBlock, 2-2-2-2, stage_widths 1, 2, 4,
8) and r50 (Bottleneck, 3-4-6-3, stage_widths 2, 2, 4, 4), num_classes 10:
  <c>.target        the class targets; the weights, running statistics and the input
                    [2, 3, 32, 32] are pattern() values (see there), computed by the test too
  <c>.train.out, .loss, .gx (r18 only), .grads, .after   train mode (batch statistics;
                    running statistics after one forward)
  <c>.eval.out, .loss, .grads   eval mode, after calibrate_running_stats
                    .grads: every parameter's gradient, packed() in named_parameters order;
                    .after: the buffers (num_batches_tracked as float64), packed() in
                    named_buffers order
  metadata "<c>.config" = "blocks=2,2,2,2;widths=1,2,4,8;kind=basic|bottleneck"
  metadata "keys.resnet18|resnet34|resnet50" = "key:d0,d1,...;..." the full-width models'
                    state_dict keys and shapes in order (num_classes 1000); "keys.resnet34_eighth"
                    and "keys.resnet50_eighth" the same with stage_widths (8, 16, 32, 64)
  r18init.<param>, r50init.<param>: init_summary of a ResNet-18 (stage_widths 4, 8, 8, 16) and a
                    one-block-per-stage Bottleneck ResNet (4, 4, 8, 8, zero_init_residual) built
                    from manual_seed(0) in float32
models_gpt2_golden.safetensors: the GPT (n_layer 2, n_head 2, n_embd 32, vocab 64, block 16,
  bias True, dropout 0):
  init.<param>      init_summary after manual_seed(0) in float32
  idx, targets (one -1, ignored), logits, loss, grads (packed() in named_parameters order, where
                    lm_head.weight is transformer.wte.weight), logits_last (forward without
                    targets: the last position only), all with pattern() weights in float64
  metadata "keys" (key:shape list of state_dict, both tied keys), "param_keys" (named_parameters)

Run: ~/.cache/ember-bench/torch-venv/bin/python tools/gen_models_golden.py
"""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models", "golden")


# ---------------------------------------------------------------- torchvision's ResNet
def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1):
        super().__init__()
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64, dilation=1):
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, zero_init_residual=False, groups=1, width_per_group=64,
                 stage_widths=(64, 128, 256, 512)):
        super().__init__()
        self.inplanes = stage_widths[0]
        self.dilation = 1
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, stage_widths[0], layers[0])
        self.layer2 = self._make_layer(block, stage_widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, stage_widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, stage_widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(stage_widths[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, self.dilation)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


# ---------------------------------------------------------------- nanoGPT's GPT
class LayerNorm(nn.Module):
    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_attn = nn.Linear(c["n_embd"], 3 * c["n_embd"], bias=c["bias"])
        self.c_proj = nn.Linear(c["n_embd"], c["n_embd"], bias=c["bias"])
        self.attn_dropout = nn.Dropout(c["dropout"])
        self.resid_dropout = nn.Dropout(c["dropout"])
        self.n_head, self.n_embd, self.dropout = c["n_head"], c["n_embd"], c["dropout"]

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c_fc = nn.Linear(c["n_embd"], 4 * c["n_embd"], bias=c["bias"])
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * c["n_embd"], c["n_embd"], bias=c["bias"])
        self.dropout = nn.Dropout(c["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = LayerNorm(c["n_embd"], bias=c["bias"])
        self.attn = CausalSelfAttention(c)
        self.ln_2 = LayerNorm(c["n_embd"], bias=c["bias"])
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c["vocab_size"], c["n_embd"]),
            wpe=nn.Embedding(c["block_size"], c["n_embd"]),
            drop=nn.Dropout(c["dropout"]),
            h=nn.ModuleList([Block(c) for _ in range(c["n_layer"])]),
            ln_f=LayerNorm(c["n_embd"], bias=c["bias"]),
        ))
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * c["n_layer"]))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss


def key_list(module):
    return ";".join(k + ":" + ",".join(str(s) for s in v.shape) for k, v in module.state_dict().items())


PATTERN_A, PATTERN_B, PATTERN_M = 40503, 7919, 65521


def pattern(shape, t, offset, scale):
    """offset + scale * (u - 1/2), u = ((i A + t B) mod M) / M for element i (row-major) of tensor
    number t: values that C++ computes bit for bit (tests/models/model_pattern.h) with IEEE's
    correctly rounded division and multiplication, so the goldens need not store any weights."""
    n = math.prod(shape)
    i = torch.arange(n, dtype=torch.int64)
    u = ((i * PATTERN_A + t * PATTERN_B) % PATTERN_M).double() / PATTERN_M
    return (offset + scale * (u - 0.5)).reshape(shape)


def pattern_for(key, shape, t):
    """The values tensor number t of a state_dict gets: normalisation weights and running
    variances near 1, biases and means near 0, matrices scaled by 2/sqrt(fan_in)."""
    if key.endswith("running_var"):
        return pattern(shape, t, 1.2, 0.4)
    if len(shape) == 1:
        norm_weight = key.endswith("weight")
        return pattern(shape, t, 1.0 if norm_weight else 0.0, 0.4)
    fan_in = math.prod(shape) // shape[0]
    return pattern(shape, t, 0.0, 2.0 / math.sqrt(fan_in))


def fill_state(model):
    """Every floating-point state_dict entry, in state_dict order (tied tensors once), from pattern_for."""
    seen, t = set(), 0
    with torch.no_grad():
        for k, v in model.state_dict(keep_vars=True).items():
            if not v.is_floating_point() or id(v) in seen:
                continue
            seen.add(id(v))
            v.copy_(pattern_for(k, tuple(v.shape), t))
            t += 1


def calibrate_running_stats(model, x):
    """Running statistics from one batch (momentum None: a cumulative average, of one batch), so
    that eval mode normalises as train mode roughly does; with pattern() running statistics many
    narrow branches end dead after the ReLUs and their gradients would be zeros."""
    with torch.no_grad():
        model.train()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
                m.momentum = None
        model(x)
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.momentum = 0.1


def resnet_case(name, block, layers, widths, out, meta, input_grad):
    model = ResNet(block, layers, num_classes=10, stage_widths=widths).double()
    fill_state(model)
    x = pattern((2, 3, 32, 32), 1000, 0.0, 4.0)
    target = torch.tensor([3, 7])
    out[f"{name}.target"] = target
    meta[f"{name}.config"] = f"blocks={','.join(map(str, layers))};widths={','.join(map(str, widths))};" \
                             f"kind={'bottleneck' if block is Bottleneck else 'basic'}"
    for mode in ("train", "eval"):
        if mode == "eval":
            calibrate_running_stats(model, x)
        model.train(mode == "train")
        model.zero_grad()
        xg = x.clone().requires_grad_(input_grad and mode == "train")
        y = model(xg)
        loss = F.cross_entropy(y, target)
        loss.backward()
        out[f"{name}.{mode}.out"] = y.detach()
        out[f"{name}.{mode}.loss"] = loss.detach()
        if mode == "train":
            if input_grad:
                out[f"{name}.train.gx"] = xg.grad
            out[f"{name}.train.after"] = packed(v for _, v in model.named_buffers())
        out[f"{name}.{mode}.grads"] = packed(p.grad for _, p in model.named_parameters())


def packed(tensors):
    """The tensors flattened and joined in float64 (one header entry instead of hundreds; the
    test slices them back in named_parameters / named_buffers order)."""
    return torch.cat([t.detach().double().reshape(-1) for t in tensors])


def init_summary(model, prefix, out):
    """For each parameter after construction from manual_seed(0) (float32): its sum (in float64)
    and first four values, to check that ember draws the same initial values."""
    for k, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        out[f"{prefix}.{k}"] = torch.cat([flat.double().sum().reshape(1), flat[:4].double()])


def resnet_goldens():
    out, meta = {}, {}
    torch.manual_seed(0)
    init_summary(ResNet(BasicBlock, [2, 2, 2, 2], num_classes=10, stage_widths=(4, 8, 8, 16)), "r18init", out)
    torch.manual_seed(0)
    init_summary(ResNet(Bottleneck, [1, 1, 1, 1], num_classes=10, zero_init_residual=True,
                        stage_widths=(4, 4, 8, 8)), "r50init", out)
    resnet_case("r18", BasicBlock, [2, 2, 2, 2], (1, 2, 4, 8), out, meta, input_grad=True)
    resnet_case("r50", Bottleneck, [3, 4, 6, 3], (2, 2, 4, 4), out, meta, input_grad=False)
    meta["keys.resnet18"] = key_list(ResNet(BasicBlock, [2, 2, 2, 2]))
    meta["keys.resnet34"] = key_list(ResNet(BasicBlock, [3, 4, 6, 3]))
    meta["keys.resnet50"] = key_list(ResNet(Bottleneck, [3, 4, 6, 3]))
    # The same with an eighth of the channels, which the test builds faster than the full ones.
    eighth = (8, 16, 32, 64)
    meta["keys.resnet34_eighth"] = key_list(ResNet(BasicBlock, [3, 4, 6, 3], stage_widths=eighth))
    meta["keys.resnet50_eighth"] = key_list(ResNet(Bottleneck, [3, 4, 6, 3], stage_widths=eighth))
    meta["keys.resnext_like"] = key_list(ResNet(Bottleneck, [1, 1, 1, 1], groups=2, width_per_group=32,
                                                stage_widths=(4, 8, 8, 16)))
    return out, meta


def gpt_goldens():
    c = dict(block_size=16, vocab_size=64, n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True)
    torch.manual_seed(0)
    model = GPT(c)
    out, meta = {}, {}
    init_summary(model, "init", out)
    meta["keys"] = key_list(model)
    meta["param_keys"] = ";".join(k for k, _ in model.named_parameters())
    model.double()
    fill_state(model)
    idx = torch.randint(0, 64, (2, 16))
    targets = torch.randint(0, 64, (2, 16))
    targets[1, 5] = -1
    out["idx"], out["targets"] = idx, targets
    logits, loss = model(idx, targets)
    loss.backward()
    out["logits"], out["loss"] = logits.detach(), loss.detach()
    out["grads"] = packed(p.grad for _, p in model.named_parameters())
    with torch.no_grad():
        out["logits_last"] = model(idx[:, :9])[0]
    return out, meta


def main():
    os.makedirs(OUT, exist_ok=True)
    for fname, make in (("models_resnet_golden.safetensors", resnet_goldens),
                        ("models_gpt2_golden.safetensors", gpt_goldens)):
        out, meta = make()
        path = os.path.join(OUT, fname)
        save_file({k: v.contiguous() for k, v in out.items()}, path, metadata=meta)
        print(fname, os.path.getsize(path), "bytes,", sum(v.numel() for v in out.values()), "values")


if __name__ == "__main__":
    main()
