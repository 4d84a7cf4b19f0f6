// Optimizers on each accelerator against the CPU: one model built twice from one seed, one copy
// on the device, five identical steps, parameters compared; then checkpoints cross devices (a
// model and optimizer trained on the device load on the CPU and carry on identically).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/optimizers.h"
#include "support/devices.h"
#include "support/optimizer_cases.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace optim = ember::optim;
using ember_test::close_to_cpu;

// Five steps compound per-step rounding differences (reductions in the backward pass).
constexpr double kRtol = 1e-4, kAtol = 1e-5;

class DeviceParityOptim : public ember_test::DeviceTest {};

std::shared_ptr<nn::Sequential> make_model() {
  manual_seed(21);
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(12, 16), std::make_shared<nn::Tanh>(),
                                          std::make_shared<nn::Linear>(16, 4));
}

struct Batch {
  Tensor x, y;
};

std::vector<Batch> make_batches(int n) {
  manual_seed(22);
  std::vector<Batch> out;
  for (int i = 0; i < n; ++i) out.push_back({randn({8, 12}), randint(0, 4, {8})});
  return out;
}

void train(nn::Module& model, optim::Optimizer& opt, const std::vector<Batch>& batches, const Device& device) {
  for (const Batch& b : batches) {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model(b.x.to(device)), b.y.to(device));
    loss.backward();
    opt.step();
  }
}

TEST_P(DeviceParityOptim, FiveStepsMatchTheCpu) {
  const std::vector<Batch> batches = make_batches(5);
  for (const auto& [name, factory] : ember_test::optimizer_cases()) {
    auto cpu = make_model();
    auto dev = make_model();
    dev->to(device());
    auto cpu_opt = factory(cpu->parameters());
    auto dev_opt = factory(dev->parameters());
    train(*cpu, *cpu_opt, batches, Device(kCPU));
    train(*dev, *dev_opt, batches, device());
    const auto pc = cpu->named_parameters();
    const auto pd = dev->named_parameters();
    ASSERT_EQ(pc.size(), pd.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_FALSE(pd[i].second.is_cpu() && !device().is_cpu()) << name << ": " << pd[i].first << " left the device";
      EXPECT_TRUE(close_to_cpu(pd[i].second.detach(), pc[i].second.detach(), kRtol, kAtol,
                               name + ": " + pd[i].first + " after 5 steps"));
    }
    // The optimizer's state lives with its parameter and agrees with the CPU's.
    for (size_t i = 0; i < pc.size(); ++i) {
      for (const auto& [key, value] : cpu_opt->state(i)) {
        ASSERT_TRUE(dev_opt->state(i).count(key)) << name << " has no state '" << key << "' on the device";
        const Tensor& dv = dev_opt->state(i).at(key);
        if (key != "step") {
          EXPECT_EQ(dv.device(), pd[i].second.device()) << name << " state " << key;
        }
        EXPECT_TRUE(close_to_cpu(dv, value, kRtol, kAtol, name + " state " + std::to_string(i) + "." + key));
      }
    }
  }
}

TEST_P(DeviceParityOptim, ClipGradNormMatchesTheCpu) {
  const std::vector<Batch> batches = make_batches(1);
  auto cpu = make_model();
  auto dev = make_model();
  dev->to(device());
  nn::functional::cross_entropy((*cpu)(batches[0].x), batches[0].y).backward();
  nn::functional::cross_entropy((*dev)(batches[0].x.to(device())), batches[0].y.to(device())).backward();
  const Tensor nc = optim::clip_grad_norm_(cpu->parameters(), 0.1);
  const Tensor nd = optim::clip_grad_norm_(dev->parameters(), 0.1);
  EXPECT_CLOSE_TO_CPU(nd, nc, 1e-5, 0);
  const auto pc = cpu->parameters();
  const auto pd = dev->parameters();
  for (size_t i = 0; i < pc.size(); ++i) {
    EXPECT_TRUE(close_to_cpu(pd[i].grad(), pc[i].grad(), kRtol, kAtol, "clipped grad " + std::to_string(i)));
  }
}

TEST_P(DeviceParityOptim, StateTrainedOnTheDeviceLoadsOnTheCpu) {
  const std::vector<Batch> batches = make_batches(6);
  const std::vector<Batch> first(batches.begin(), batches.begin() + 3);
  const std::vector<Batch> rest(batches.begin() + 3, batches.end());
  auto dev = make_model();
  dev->to(device());
  optim::Adam dev_opt(dev->parameters(), {.lr = 0.01});
  train(*dev, dev_opt, first, device());

  // Model weights: a CPU model loads the device's state_dict and computes what the device does.
  nn::StateDict state = dev->state_dict();
  for (const auto& [key, value] : state) EXPECT_EQ(value.device(), dev->parameters()[0].device()) << key;
  auto cpu = make_model();
  cpu->load_state_dict(state);
  for (const auto& [key, value] : cpu->state_dict()) {
    EXPECT_TRUE(value.is_cpu()) << key;
    EXPECT_TRUE(close_to_cpu(state.at(key), value, 0, 0, "loaded " + key));
  }
  Tensor probe = randn({3, 12});
  EXPECT_TRUE(close_to_cpu((*dev)(probe.to(device())).detach(), (*cpu)(probe).detach(), 1e-5, 1e-6, "loaded model"));

  // Optimizer state: the CPU optimizer takes over and both continue in step.
  optim::Adam cpu_opt(cpu->parameters(), {.lr = 0.01});
  cpu_opt.load_state_dict(dev_opt.state_dict());
  for (size_t i = 0; i < cpu->parameters().size(); ++i) {
    for (const auto& [key, value] : cpu_opt.state(i)) EXPECT_TRUE(value.is_cpu()) << i << "." << key;
  }
  train(*dev, dev_opt, rest, device());
  train(*cpu, cpu_opt, rest, Device(kCPU));
  const auto pc = cpu->named_parameters();
  const auto pd = dev->named_parameters();
  for (size_t i = 0; i < pc.size(); ++i) {
    EXPECT_TRUE(close_to_cpu(pd[i].second.detach(), pc[i].second.detach(), kRtol, kAtol, "resumed " + pd[i].first));
  }

  // And back: CPU state into a fresh device model and optimizer (a GPU run resumed from its
  // checkpoint). The moments move to the device; the step counts stay on the CPU, as PyTorch
  // keeps them, so that the update reads them without waiting for the GPU.
  auto again = make_model();
  again->to(device());
  again->load_state_dict(cpu->state_dict());
  for (const auto& [key, value] : again->state_dict()) {
    EXPECT_TRUE(close_to_cpu(value, cpu->state_dict().at(key), 0, 0, "loaded back " + key));
  }
  optim::Adam again_opt(again->parameters(), {.lr = 0.01});
  again_opt.load_state_dict(cpu_opt.state_dict());
  for (size_t i = 0; i < again->parameters().size(); ++i) {
    for (const auto& [key, value] : again_opt.state(i)) {
      EXPECT_EQ(value.device(), key == "step" ? Device(kCPU) : again->parameters()[i].device()) << i << "." << key;
    }
  }
}

TEST_P(DeviceParityOptim, StepsSkippedOnTheDeviceMatchTheCpu) {
  // As `ember train` does it: the skip flag is computed on the device from the gradients, a NaN
  // in one of them skips the step, and the host restores its counts once it reads the flag. The
  // flag on the CPU instead (parameters on the device) takes the host-read path.
  const std::vector<bool> pattern = {false, true, false, true, true, false, false};
  const std::vector<Batch> batches = make_batches(static_cast<int>(pattern.size()));
  for (const bool flag_on_device : {true, false}) {
    for (const auto& [name, factory] : ember_test::optimizer_cases()) {
      const std::string what = name + (flag_on_device ? "" : " (flag on the CPU)");
      auto cpu = make_model();
      auto dev = make_model();
      dev->to(device());
      auto cpu_opt = factory(cpu->parameters());
      auto dev_opt = factory(dev->parameters());
      for (size_t i = 0; i < pattern.size(); ++i) {
        // The CPU reference takes the plain step on the steps not skipped, and nothing else.
        cpu_opt->zero_grad();
        nn::functional::cross_entropy((*cpu)(batches[i].x), batches[i].y).backward();
        if (!pattern[i]) cpu_opt->step();

        dev_opt->zero_grad();
        nn::functional::cross_entropy((*dev)(batches[i].x.to(device())), batches[i].y.to(device())).backward();
        std::vector<Tensor> params = dev->parameters(), grads;
        if (pattern[i]) {
          Tensor one = params[0].grad();  // one element of one gradient turns NaN
          while (one.dim() > 0) one = one.select(0, one.size(0) / 2);
          one.fill_(std::nan(""));
        }
        for (const Tensor& p : params) grads.push_back(p.grad());
        Tensor skip = logical_not(all_finite(grads));
        EXPECT_EQ(skip.device(), params[0].device()) << what;
        if (!flag_on_device) skip = skip.to(Device(kCPU));
        std::vector<Tensor> before;
        for (const Tensor& p : params) before.push_back(p.detach().clone());
        const optim::Optimizer::HostState saved = dev_opt->host_state();
        dev_opt->step(skip);
        // Read after the step, as a training loop would: the step itself did not wait for it.
        ASSERT_EQ(skip.item<bool>(), pattern[i]) << what << " step " << i;
        if (pattern[i]) {
          dev_opt->restore_host_state(saved);
          // A skipped step leaves the parameters bit for bit, NaN gradient and all.
          for (size_t k = 0; k < params.size(); ++k) {
            EXPECT_TRUE(
                close_to_cpu(params[k].detach(), before[k].to(Device(kCPU)), 0, 0,
                             what + ": parameter " + std::to_string(k) + " after skipped step " + std::to_string(i)));
          }
        }
      }
      const auto pc = cpu->named_parameters();
      const auto pd = dev->named_parameters();
      for (size_t k = 0; k < pc.size(); ++k) {
        EXPECT_TRUE(close_to_cpu(pd[k].second.detach(), pc[k].second.detach(), kRtol, kAtol,
                                 what + ": " + pd[k].first + " after the skips"));
        // Every state tensor too: no NaN leaked in, and the restored counts equal the CPU's.
        for (const auto& [key, value] : cpu_opt->state(k)) {
          ASSERT_TRUE(dev_opt->state(k).count(key)) << what << " has no state '" << key << "' on the device";
          EXPECT_TRUE(close_to_cpu(dev_opt->state(k).at(key), value, key == "step" ? 0 : kRtol,
                                   key == "step" ? 0 : kAtol, what + " state " + std::to_string(k) + "." + key));
        }
        EXPECT_EQ(dev_opt->state(k).size(), cpu_opt->state(k).size()) << what << " parameter " << k;
      }
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityOptim);

}  // namespace
