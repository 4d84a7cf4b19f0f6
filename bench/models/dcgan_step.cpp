// pytorch/examples' DCGAN (ember::models::DCGANGenerator/DCGANDiscriminator, nz 100, ngf = ndf
// = 64, nc 3, 64x64): one full iteration of the example's loop on a fixed batch of 16 real
// images: D on real (label 1) and on G(z).detach() (label 0), D's Adam step, then G through D
// (label 1) and G's Adam step (both lr 2e-4, betas (0.5, 0.999)), BCELoss; z drawn each step.
// bench/models/dcgan_pytorch.py is the same iteration in PyTorch.
#include "ember/models/dcgan.h"
#include "ember/nn/loss.h"
#include "ember/optim/optimizers.h"
#include "step_registry.h"

EMBER_BENCH_MODEL_STEP(dcgan, "DCGAN nz 100, ngf = ndf = 64, nc 3, batch 16 of 64x64, D step + G step, two Adam") {
  const ember::models::DCGANOptions options;
  auto netG = std::make_shared<ember::models::DCGANGenerator>(options);
  auto netD = std::make_shared<ember::models::DCGANDiscriminator>(options);
  netG->to(device);
  netD->to(device);
  const ember::optim::AdamOptions adam{.lr = 0.0002, .beta1 = 0.5, .beta2 = 0.999};
  auto optimizerD = std::make_shared<ember::optim::Adam>(netD->parameters(), adam);
  auto optimizerG = std::make_shared<ember::optim::Adam>(netG->parameters(), adam);
  auto criterion = std::make_shared<ember::nn::BCELoss>();
  const int64_t batch = 16;
  const ember::Tensor real = (ember::rand({batch, 3, 64, 64}) * 2 - 1).to(device);
  return [=] {
    netD->zero_grad();
    ember::Tensor label = ember::full({batch}, 1.0, ember::TensorOptions().device(device));
    (*criterion)((*netD)(real), label).backward();
    const ember::Tensor fake = (*netG)(ember::randn({batch, options.nz, 1, 1}).to(device));
    label.fill_(0.0);
    (*criterion)((*netD)(fake.detach()), label).backward();
    optimizerD->step();
    netG->zero_grad();
    label.fill_(1.0);
    (*criterion)((*netD)(fake), label).backward();
    optimizerG->step();
  };
}
