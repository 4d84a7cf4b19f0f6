#pragma once
/// ember::models: model families written as their reference implementations write them, with
/// their state_dict keys, so that weights move between ember and PyTorch unchanged.
///   resnet.h  torchvision's resnet18, resnet34, resnet50 (ResNet, BasicBlock, Bottleneck)
///   gpt2.h    nanoGPT's GPT-2 (GPT, GPTConfig, Block, CausalSelfAttention, MLP)
#include "ember/models/gpt2.h"
#include "ember/models/resnet.h"
