// Training ember::models::DCGANGenerator and DCGANDiscriminator (pytorch/examples' DCGAN) from
// C++ as the example's loop does, on 64x64 one-channel pictures it draws itself: a bright disc of
// random position and radius on a dark field, in [-1, 1] as the example normalises its data. Each
// iteration updates D on real (label 1) and G(z).detach() (label 0), then G through D (label 1),
// with Adam(lr 2e-4, betas (0.5, 0.999)) and BCELoss. The networks are narrower than the
// example's (ngf = ndf = 8, nz = 32, so that it runs in seconds on a CPU); the discriminator's
// loss falls as it learns to tell the discs from the generator's first pictures.
//   usage: train_dcgan [STEPS]   (default 200)
#include <ember/ember.h>
#include <ember/models/dcgan.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <vector>

namespace {

/// `n` pictures [n, 1, 64, 64] in [-1, 1]: a disc of value 1 on a field of -1.
ember::Tensor discs(int64_t n) {
  using namespace ember;
  const Tensor coords = arange(64, TensorOptions().dtype(kFloat32));
  const Tensor rows = coords.view({1, 64, 1}), cols = coords.view({1, 1, 64});
  const Tensor centre_r = rand({n, 1, 1}) * 32 + 16, centre_c = rand({n, 1, 1}) * 32 + 16;
  const Tensor radius = rand({n, 1, 1}) * 8 + 6;
  const Tensor inside = ((rows - centre_r).pow(2) + (cols - centre_c).pow(2)).le(radius.pow(2));
  return (inside.to(kFloat32) * 2 - 1).unsqueeze(1);
}

}  // namespace

int main(int argc, char** argv) try {
  using namespace ember;
  const int steps = argc > 1 ? std::stoi(argv[1]) : 200;
  const Device device = best_device();
  manual_seed(0);

  const models::DCGANOptions options{.nz = 32, .ngf = 8, .ndf = 8, .nc = 1};
  auto netG = std::make_shared<models::DCGANGenerator>(options);
  auto netD = std::make_shared<models::DCGANDiscriminator>(options);
  netG->to(device);
  netD->to(device);
  nn::BCELoss criterion;
  optim::Adam optimizerD(netD->parameters(), {.lr = 0.0002, .beta1 = 0.5, .beta2 = 0.999});
  optim::Adam optimizerG(netG->parameters(), {.lr = 0.0002, .beta1 = 0.5, .beta2 = 0.999});
  const int64_t batch_size = 16;

  std::vector<double> errDs;
  for (int step = 0; step < steps; ++step) {
    // (1) Update D: maximize log(D(x)) + log(1 - D(G(z))).
    netD->zero_grad();
    const Tensor real = discs(batch_size).to(device);
    Tensor label = full({batch_size}, 1.0, TensorOptions().device(device));
    Tensor output = (*netD)(real);
    const Tensor errD_real = criterion(output, label);
    errD_real.backward();
    const double D_x = output.mean().item<double>();
    const Tensor noise = randn({batch_size, options.nz, 1, 1}).to(device);
    const Tensor fake = (*netG)(noise);
    label.fill_(0.0);
    output = (*netD)(fake.detach());
    const Tensor errD_fake = criterion(output, label);
    errD_fake.backward();
    const double D_G_z1 = output.mean().item<double>();
    const double errD = errD_real.item<double>() + errD_fake.item<double>();
    optimizerD.step();

    // (2) Update G: maximize log(D(G(z))).
    netG->zero_grad();
    label.fill_(1.0);
    output = (*netD)(fake);
    const Tensor errG = criterion(output, label);
    errG.backward();
    const double D_G_z2 = output.mean().item<double>();
    optimizerG.step();

    errDs.push_back(errD);
    if (step % 10 == 0 || step == steps - 1) {
      std::printf("[%d/%d] Loss_D: %.4f Loss_G: %.4f D(x): %.4f D(G(z)): %.4f / %.4f\n", step, steps, errD,
                  errG.item<double>(), D_x, D_G_z1, D_G_z2);
    }
  }
  io::save_safetensors("netG_discs.safetensors", netG->state_dict().items());
  io::save_safetensors("netD_discs.safetensors", netD->state_dict().items());

  const size_t window = std::max<size_t>(1, std::min<size_t>(5, errDs.size() / 2));
  double first = 0.0, last = 0.0;
  for (size_t i = 0; i < window; ++i) {
    first += errDs[i] / static_cast<double>(window);
    last += errDs[errDs.size() - 1 - i] / static_cast<double>(window);
  }
  std::printf("mean Loss_D of the first %zu steps %.4f, of the last %zu %.4f\n", window, first, window, last);
  if (!(last < first)) {
    std::fprintf(stderr, "the discriminator's loss did not fall\n");
    return 1;
  }
  return 0;
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
