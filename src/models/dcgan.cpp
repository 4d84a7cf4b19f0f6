// pytorch/examples' DCGAN (see include/ember/models/dcgan.h), built from ember::nn layers.
#include "ember/models/dcgan.h"

#include "core/check.h"
#include "ember/nn/activation.h"
#include "ember/nn/batchnorm.h"
#include "ember/nn/conv.h"
#include "ember/nn/conv_transpose.h"
#include "ember/nn/init.h"

namespace ember::models {

namespace {

void check_options(const DCGANOptions& o) {
  EMBER_CHECK(o.nz >= 1 && o.ngf >= 1 && o.ndf >= 1 && o.nc >= 1, "DCGAN: nz, ngf, ndf and nc must be positive, got ",
              o.nz, ", ", o.ngf, ", ", o.ndf, " and ", o.nc);
}

/// A 4x4 transposed convolution without bias (every one of the generator's).
std::shared_ptr<nn::ConvTranspose2d> up(int64_t in, int64_t out, int64_t stride, int64_t padding) {
  return std::make_shared<nn::ConvTranspose2d>(
      in, out, 4, nn::ConvTranspose2dOptions{.stride = stride, .padding = padding, .bias = false});
}

/// A 4x4 convolution without bias (every one of the discriminator's).
std::shared_ptr<nn::Conv2d> down(int64_t in, int64_t out, int64_t stride, int64_t padding) {
  return std::make_shared<nn::Conv2d>(in, out, 4,
                                      nn::Conv2dOptions{.stride = stride, .padding = padding, .bias = false});
}

std::shared_ptr<nn::BatchNorm2d> norm(int64_t channels) { return std::make_shared<nn::BatchNorm2d>(channels); }

std::shared_ptr<nn::LeakyReLU> leaky() { return std::make_shared<nn::LeakyReLU>(0.2, true); }

}  // namespace

void dcgan_weights_init(nn::Module& module) {
  // By class name, as the example's classname.find('Conv') / find('BatchNorm'): Conv2d and
  // ConvTranspose2d alike.
  const std::string class_name = module.name();
  if (class_name.find("Conv") != std::string::npos) {
    nn::init::normal_(module.get_parameter("weight"), 0.0, 0.02);
  } else if (class_name.find("BatchNorm") != std::string::npos) {
    nn::init::normal_(module.get_parameter("weight"), 1.0, 0.02);
    nn::init::zeros_(module.get_parameter("bias"));
  }
}

DCGANGenerator::DCGANGenerator(DCGANOptions options) : options(options) {
  check_options(options);
  const int64_t nz = options.nz, ngf = options.ngf, nc = options.nc;
  main = register_module("main",
                         std::make_shared<nn::Sequential>(
                             up(nz, ngf * 8, 1, 0), norm(ngf * 8), std::make_shared<nn::ReLU>(true),  // (ngf*8) x 4 x 4
                             up(ngf * 8, ngf * 4, 2, 1), norm(ngf * 4), std::make_shared<nn::ReLU>(true),  // 8 x 8
                             up(ngf * 4, ngf * 2, 2, 1), norm(ngf * 2), std::make_shared<nn::ReLU>(true),  // 16 x 16
                             up(ngf * 2, ngf, 2, 1), norm(ngf), std::make_shared<nn::ReLU>(true),          // 32 x 32
                             up(ngf, nc, 2, 1), std::make_shared<nn::Tanh>()));  // nc x 64 x 64
  // netG.apply(weights_init): the draws follow each layer's default initialisation, in the
  // order of the layers (apply's order differs only in visiting the containers, which draw nothing).
  apply(dcgan_weights_init);
}

Tensor DCGANGenerator::forward(const Tensor& input) { return (*main)(input); }

DCGANDiscriminator::DCGANDiscriminator(DCGANOptions options) : options(options) {
  check_options(options);
  const int64_t ndf = options.ndf, nc = options.nc;
  main = register_module(
      "main", std::make_shared<nn::Sequential>(down(nc, ndf, 2, 1), leaky(),                          // ndf x 32 x 32
                                               down(ndf, ndf * 2, 2, 1), norm(ndf * 2), leaky(),      // 16 x 16
                                               down(ndf * 2, ndf * 4, 2, 1), norm(ndf * 4), leaky(),  // 8 x 8
                                               down(ndf * 4, ndf * 8, 2, 1), norm(ndf * 8), leaky(),  // 4 x 4
                                               down(ndf * 8, 1, 1, 0), std::make_shared<nn::Sigmoid>()));  // 1 x 1 x 1
  apply(dcgan_weights_init);
}

Tensor DCGANDiscriminator::forward(const Tensor& input) { return (*main)(input).view({-1, 1}).squeeze(1); }

}  // namespace ember::models
