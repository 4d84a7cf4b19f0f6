// No host synchronisation where none is needed: BatchNorm with momentum=None and the optimizers'
// op-by-op updates (16-bit or strided parameters) under a skip flag on the device used to read a
// number back from the device on every forward, and for every parameter of every step, making the
// host wait for the GPU each time. On the stand-in device (support/host_device_backend.h) every
// such read is a copy_to_host call, which these tests count; the results must stay bit for bit
// those of the versions that read on the host.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/batchnorm.h"
#include "ember/optim/optimizers.h"
#include "support/host_device_backend.h"
#include "support/optimizer_cases.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::host_device_backend;

class HostSyncs : public ::testing::Test {
 protected:
  static Device device() { return ember_test::ScopedHostDevice::device(); }
  static int64_t host_reads() { return host_device_backend().counts().copy_to_host; }
  ember_test::ScopedHostDevice host_device_;
};

/// Bitwise equality, NaN and signed zeros included, of a tensor anywhere and a CPU one.
::testing::AssertionResult same_bits(const Tensor& actual, const Tensor& expected) {
  const Tensor a = actual.detach().to(Device(kCPU)).contiguous();
  const Tensor e = expected.detach().contiguous();
  if (a.dtype() != e.dtype() || a.sizes().vec() != e.sizes().vec()) {
    return ::testing::AssertionFailure() << "dtype or shape differs";
  }
  if (std::memcmp(a.data_ptr(), e.data_ptr(), a.nbytes()) != 0) {
    return ::testing::AssertionFailure() << a << "\nvs\n" << e;
  }
  return ::testing::AssertionSuccess();
}

// ---- BatchNorm, momentum=None ----

struct BnCase {
  std::string name;
  Dtype module_dtype, input_dtype;
};

TEST_F(HostSyncs, BatchNormCumulativeAverageReadsNothingBackAndRoundsAsBefore) {
  const std::vector<BnCase> cases = {{"float32", kFloat32, kFloat32},
                                     {"float64", kFloat64, kFloat64},
                                     {"bfloat16", kBFloat16, kBFloat16},
                                     {"float16 input, float32 module", kFloat32, kFloat16}};
  for (const BnCase& c : cases) {
    SCOPED_TRACE(c.name);
    manual_seed(3);
    nn::BatchNorm2d cpu(3, 1e-5, /*momentum=*/std::nullopt), dev(3, 1e-5, std::nullopt);
    {
      NoGradGuard no_grad;  // a non-trivial affine part, the same in every copy
      cpu.weight.copy_(rand({3}) + 0.5);
      cpu.bias.copy_(randn({3}));
      dev.weight.copy_(cpu.weight);
      dev.bias.copy_(cpu.bias);
    }
    cpu.to(c.module_dtype);
    dev.to(device(), c.module_dtype);
    // The reference: the functional form with the factor 1/n as a number, which is how the
    // module computed it before, reading n back from the device.
    Tensor ref_mean = cpu.running_mean.clone(), ref_var = cpu.running_var.clone();
    for (int n = 1; n <= 4; ++n) {
      SCOPED_TRACE("step " + std::to_string(n));
      const Tensor x = (randn({5, 3, 4, 4}) * 2.0 + 1.0).to(c.input_dtype);
      const Tensor expected = F::batch_norm(x, ref_mean, ref_var, cpu.weight, cpu.bias, /*training=*/true,
                                            1.0 / static_cast<double>(n), 1e-5);
      EXPECT_TRUE(same_bits(cpu(x), expected));
      EXPECT_TRUE(same_bits(cpu.running_mean, ref_mean));
      EXPECT_TRUE(same_bits(cpu.running_var, ref_var));

      const Tensor xd = x.to(device());
      host_device_backend().reset_counts();
      const Tensor out = dev(xd);
      EXPECT_EQ(host_reads(), 0) << "the forward read something back from the device";
      EXPECT_TRUE(same_bits(out, expected));
      EXPECT_TRUE(same_bits(dev.running_mean, ref_mean));
      EXPECT_TRUE(same_bits(dev.running_var, ref_var));
    }
    EXPECT_EQ(dev.num_batches_tracked.item<int64_t>(), 4);
  }
}

TEST_F(HostSyncs, BatchNormWithAMomentumIsUnchanged) {
  // The number form (momentum given) and eval() read nothing back either.
  manual_seed(4);
  nn::BatchNorm2d cpu(2, 1e-5, 0.3), dev(2, 1e-5, 0.3);
  dev.to(device());
  for (int n = 0; n < 2; ++n) {
    const Tensor x = randn({4, 2, 3, 3});
    const Tensor expected = cpu(x);
    const Tensor xd = x.to(device());
    host_device_backend().reset_counts();
    const Tensor out = dev(xd);
    EXPECT_EQ(host_reads(), 0);
    EXPECT_TRUE(same_bits(out, expected));
    EXPECT_TRUE(same_bits(dev.running_var, cpu.running_var));
  }
  cpu.eval();
  dev.eval();
  const Tensor x = randn({4, 2, 3, 3});
  const Tensor xd = x.to(device());
  host_device_backend().reset_counts();
  const Tensor out = dev(xd);
  EXPECT_EQ(host_reads(), 0);
  EXPECT_TRUE(same_bits(out, cpu(x)));
}

// ---- Optimizers: op-by-op updates under a skip flag on the device ----

enum class Kind { kHalf, kBFloat16, kStrided };

/// Parameters that no fused kernel takes: 16-bit, or float32 but strided.
std::vector<Tensor> make_params(Kind kind, Device where) {
  manual_seed(5);
  std::vector<Tensor> out;
  for (std::vector<int64_t> sizes : {std::vector<int64_t>{7}, {30, 20}}) {
    Tensor p = randn(sizes);
    if (kind == Kind::kHalf) p = p.to(kFloat16);
    if (kind == Kind::kBFloat16) p = p.to(kBFloat16);
    p = p.to(where);
    if (kind == Kind::kStrided && p.dim() == 2) p = p.t().contiguous().t();
    out.push_back(p.detach().requires_grad_());
  }
  return out;
}

/// The same gradients for every copy, at least 1 away from 0 (smaller 16-bit ones underflow in the
/// squares of Adam and RMSprop, and the NaNs would hide every difference).
void set_grads(std::vector<Tensor>& params, int step) {
  manual_seed(100 + step);
  for (Tensor& p : params) {
    Tensor g = randn(p.sizes());
    g = where(lt(g, zeros_like(g)), g - 1.0, g + 1.0);
    p.set_grad(g.to(p.device(), p.dtype()));
  }
}

TEST_F(HostSyncs, OpByOpStepsUnderADeviceFlagReadNothingBackAndMatchTheTakenSteps) {
  // The first step skipped too: the state it creates (SGD's momentum buffer) must not survive.
  const std::vector<bool> pattern = {true, false, true, false, true, true, false};
  const std::vector<std::pair<Kind, std::string>> kinds = {
      {Kind::kHalf, "float16"}, {Kind::kBFloat16, "bfloat16"}, {Kind::kStrided, "strided float32"}};
  for (const auto& [kind, kind_name] : kinds) {
    for (const auto& [name, factory] : ember_test::optimizer_cases()) {
      SCOPED_TRACE(name + ", " + kind_name);
      std::vector<Tensor> dev = make_params(kind, device()), ref = make_params(kind, Device(kCPU));
      ASSERT_EQ(dev[1].is_contiguous(), kind != Kind::kStrided);
      auto dev_opt = factory(dev), ref_opt = factory(ref);
      for (size_t i = 0; i < pattern.size(); ++i) {
        SCOPED_TRACE("step " + std::to_string(i));
        set_grads(dev, static_cast<int>(i));
        set_grads(ref, static_cast<int>(i));
        const Tensor flag = scalar_tensor(static_cast<bool>(pattern[i]), kBool).to(device());
        const optim::Optimizer::HostState saved = dev_opt->host_state();
        host_device_backend().reset_counts();
        dev_opt->step(flag);
        EXPECT_EQ(host_reads(), 0) << "the step read something back from the device";
        if (pattern[i]) {
          dev_opt->restore_host_state(saved);  // as `ember train` does once it reads the flag
        } else {
          ref_opt->step();  // the reference takes the steps not skipped, and nothing else
        }
        for (size_t k = 0; k < dev.size(); ++k) ASSERT_TRUE(same_bits(dev[k], ref[k])) << "parameter " << k;
        for (size_t k = 0; k < dev.size(); ++k) {
          ASSERT_EQ(dev_opt->state(k).size(), ref_opt->state(k).size()) << "parameter " << k;
          for (const auto& [key, value] : ref_opt->state(k)) {
            ASSERT_TRUE(dev_opt->state(k).count(key)) << key;
            EXPECT_TRUE(same_bits(dev_opt->state(k).at(key), value)) << "parameter " << k << " " << key;
          }
        }
      }
    }
  }
}

TEST_F(HostSyncs, AnUnrestoredSkippedOpByOpStepChangesNoTensor) {
  // Without restore_host_state, a skipped step may only move the host's counts: every tensor keeps
  // its bits, and a momentum buffer that a skipped first step creates is zeros (as the fused
  // kernels leave it).
  for (const auto& [name, factory] : ember_test::optimizer_cases()) {
    SCOPED_TRACE(name);
    std::vector<Tensor> params = make_params(Kind::kHalf, device());
    auto opt = factory(params);
    const Tensor yes = scalar_tensor(true, kBool).to(device()), no = scalar_tensor(false, kBool).to(device());
    set_grads(params, 0);
    opt->step(yes);
    for (size_t k = 0; k < params.size(); ++k) {
      if (opt->state(k).count("momentum_buffer")) {
        EXPECT_TRUE(same_bits(opt->state(k).at("momentum_buffer"), zeros_like(params[k]).to(Device(kCPU))));
      }
    }
    set_grads(params, 1);
    opt->step(no);
    std::vector<Tensor> before;
    std::vector<std::map<std::string, Tensor>> state_before;
    for (size_t k = 0; k < params.size(); ++k) {
      before.push_back(params[k].detach().to(Device(kCPU)));
      std::map<std::string, Tensor> copies;
      for (const auto& [key, value] : opt->state(k)) copies[key] = value.to(Device(kCPU), false, true);
      state_before.push_back(copies);
    }
    set_grads(params, 2);
    opt->step(yes);
    for (size_t k = 0; k < params.size(); ++k) {
      EXPECT_TRUE(same_bits(params[k], before[k])) << "parameter " << k;
      for (const auto& [key, value] : state_before[k]) {
        if (key == "step") continue;  // the host counts the step; restore_host_state takes it back
        EXPECT_TRUE(same_bits(opt->state(k).at(key), value)) << k << " " << key;
      }
    }
  }
}

}  // namespace
