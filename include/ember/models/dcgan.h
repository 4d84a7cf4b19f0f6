#pragma once
/// ember::models::DCGANGenerator and DCGANDiscriminator: the DCGAN of pytorch/examples
/// (dcgan/main.py, classes Generator and Discriminator), with its module names, so a state_dict
/// moves between the two unchanged ("main.0.weight", "main.1.weight", "main.1.bias",
/// "main.1.running_mean", ...).
///
///   auto netG = std::make_shared<ember::models::DCGANGenerator>();      // nz 100, ngf 64, nc 3
///   auto netD = std::make_shared<ember::models::DCGANDiscriminator>();  // ndf 64, nc 3
///   Tensor fake = (*netG)(ember::randn({16, 100, 1, 1}));               // [16, 3, 64, 64] in (-1, 1)
///   Tensor p = (*netD)(fake);                                           // [16], probabilities
///
/// Both work on 64x64 images (the architecture's fixed size: four stride-2 layers and a 4x4
/// kernel). The constructors end with the example's weights_init (dcgan_weights_init), which the
/// script applies right after building each network: every convolution's weight from
/// normal(0, 0.02), every BatchNorm's weight from normal(1, 0.02) and its bias zero.
#include <cstdint>
#include <memory>
#include <string>

#include "ember/nn/modules.h"

namespace ember::models {

/// The example's command-line options that shape the networks, with its names and defaults.
struct DCGANOptions {
  int64_t nz = 100;  // size of the latent vector z
  int64_t ngf = 64;  // the generator's base width (its layers have 8, 4, 2, 1 times ngf channels)
  int64_t ndf = 64;  // the discriminator's base width (1, 2, 4, 8 times ndf)
  int64_t nc = 3;    // image channels (the example sets 1 for MNIST, 3 otherwise)
};

/// z [N, nz, 1, 1] -> images [N, nc, 64, 64] (the example's Generator): five ConvTranspose2d
/// (4x4, no bias; the first stride 1, the others stride 2 padding 1), BatchNorm2d and ReLU after
/// each but the last, which ends in Tanh.
class DCGANGenerator : public nn::Module {
 public:
  explicit DCGANGenerator(DCGANOptions options = {});
  std::string name() const override { return "Generator"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> main;
  DCGANOptions options;
};

/// images [N, nc, 64, 64] -> probabilities [N] (the example's Discriminator): five Conv2d (4x4,
/// no bias; stride 2 padding 1 but the last) with LeakyReLU(0.2) after each but the last (and
/// BatchNorm2d after the middle three), ending in Sigmoid; the output viewed as [-1, 1] and
/// squeezed.
class DCGANDiscriminator : public nn::Module {
 public:
  explicit DCGANDiscriminator(DCGANOptions options = {});
  std::string name() const override { return "Discriminator"; }
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Sequential> main;
  DCGANOptions options;
};

/// The example's weights_init for one module: a module whose class name contains "Conv" gets its
/// weight from normal(0, 0.02), one whose name contains "BatchNorm" its weight from normal(1, 0.02)
/// and its bias zero; others are left alone. Use as network.apply(dcgan_weights_init).
void dcgan_weights_init(nn::Module& module);

}  // namespace ember::models
