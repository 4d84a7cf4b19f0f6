#pragma once
/// ember::models: model families written as their reference implementations write them, with
/// their state_dict keys, so that weights move between ember and PyTorch unchanged.
///   resnet.h          torchvision's resnet18, resnet34, resnet50 (ResNet, BasicBlock, Bottleneck)
///   mobilenet.h       torchvision's mobilenet_v2 (MobileNetV2, InvertedResidual,
///                     Conv2dNormActivation, make_divisible)
///   efficientnet.h    torchvision's efficientnet_b0 (EfficientNet, MBConv, MBConvConfig,
///                     SqueezeExcitation, StochasticDepth)
///   vit.h             torchvision's VisionTransformer (vit_b_16 and the other sizes)
///   unet.h            milesial's Pytorch-UNet (UNet; unet_parts DoubleConv, Down, Up, OutConv)
///   diffusion_unet.h  diffusers' UNet2DModel with its 2-D down, mid and up blocks
///   gpt2.h            nanoGPT's GPT-2 (GPT, GPTConfig, Block, CausalSelfAttention, MLP)
///   llama.h           Meta's LLaMA reference (Transformer, ModelArgs, RMSNorm, rotary, GQA)
///   vae.h             pytorch/examples' VAE (VAE, VAEOptions, VAEOutput, vae_loss)
///   dcgan.h           pytorch/examples' DCGAN (DCGANGenerator, DCGANDiscriminator, DCGANOptions,
///                     dcgan_weights_init)
///   text_cnn.h        the CNN text classifier of bentrevett's pytorch-sentiment-analysis (TextCNN)
///   seq2seq.h         bentrevett's attention seq2seq with LSTMs (Encoder, Attention, Decoder,
///                     Seq2Seq)
#include "ember/models/dcgan.h"
#include "ember/models/diffusion_unet.h"
#include "ember/models/efficientnet.h"
#include "ember/models/gpt2.h"
#include "ember/models/llama.h"
#include "ember/models/mobilenet.h"
#include "ember/models/resnet.h"
#include "ember/models/seq2seq.h"
#include "ember/models/text_cnn.h"
#include "ember/models/unet.h"
#include "ember/models/vae.h"
#include "ember/models/vit.h"
