#pragma once
// The harness of the DevicePlacement suites (tests/backend/test_device_placement_ops.cpp,
// tests/nn/test_device_placement_training.cpp): device placement without a GPU. Every op, layer,
// loss, optimizer step and backward pass runs on "mps:0", which the host-device backend
// (support/host_device_backend.h) serves with the CPU's kernels, and is compared with the same
// computation on the CPU. Values must match exactly (the same kernels run) and every result must
// be on mps:0. A temporary made on the CPU by the library (zeros(sizes, dtype) without a device,
// say) then fails with "Expected all tensors to be on the same device", as it would on a GPU, and
// a CPU tensor that slips into a device kernel fails with the backend's "[host-device backend]
// ... is not memory of mps:0".
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "ember/optim/clip_grad.h"
#include "ember/optim/optimizers.h"
#include "support/devices.h"
#include "support/error_of.h"
#include "support/host_device_backend.h"

namespace ember_test::placement {

using namespace ember;
namespace nn = ember::nn;

inline const Device kCpu(DeviceType::CPU);

class DevicePlacement : public ::testing::Test {
 protected:
  void SetUp() override { manual_seed(1234); }
  void TearDown() override {
    // Every tensor of the test is gone: nothing may stay allocated on the stand-in device.
    EXPECT_EQ(ember_test::host_device_backend().live_bytes(), 0u);
  }
  static Device dev() { return ember_test::ScopedHostDevice::device(); }
  /// A copy on mps:0 (never an alias of the CPU reference).
  static Tensor on(const Tensor& cpu) { return cpu.to(dev(), false, true); }

  ember_test::ScopedHostDevice host_device_;
};

// ---------------------------------------------------------------------------------------------
// Running one computation on both devices.

/// One input of a computation: a leaf that requires grad, or a constant (indices, targets,
/// running statistics...).
struct Input {
  Tensor value;
  bool grad;
};
inline Input leaf(const Tensor& t) { return {t, true}; }
inline Input constant(const Tensor& t) { return {t, false}; }

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

/// A fixed, non-trivial cotangent shaped like `out`, on the CPU.
inline Tensor cotangent_like(const Tensor& out) {
  const int64_t n = out.numel();
  return sin(arange(0.0, static_cast<double>(n), 1.0, kFloat64) * 1.37 + 0.5).reshape(out.sizes()).to(out.dtype());
}

struct Run {
  Tensor out;
  std::vector<Tensor> grads;  // per input; undefined for constants
};

inline Run run_on(const Device& device, const std::vector<Input>& inputs, const Fn& f) {
  std::vector<Tensor> args;
  for (const Input& in : inputs) {
    Tensor t = in.value.detach().to(device, false, /*copy=*/true);
    if (in.grad) t.requires_grad_();
    args.push_back(t);
  }
  Run r;
  r.out = f(args);
  if (r.out.is_floating_point() && r.out.requires_grad()) r.out.backward(cotangent_like(r.out).to(device));
  for (size_t i = 0; i < inputs.size(); ++i) r.grads.push_back(inputs[i].grad ? args[i].grad() : Tensor());
  r.out = r.out.detach();
  return r;
}

/// Runs f on the CPU and on mps:0 and checks: the output is on mps:0 and equals the CPU's; every
/// leaf's gradient (of sum(out * cotangent)) exists on both or neither, is on mps:0, and equals
/// the CPU's.
inline void expect_same(const std::string& what, const std::vector<Input>& inputs, const Fn& f, double rtol = 0,
                        double atol = 0) {
  SCOPED_TRACE(what);
  Run want, got;
  const std::string cpu_error = full_error_of([&] { want = run_on(kCpu, inputs, f); });
  ASSERT_EQ(cpu_error, "no error") << "the CPU reference fails";
  const std::string dev_error = full_error_of([&] { got = run_on(Device(DeviceType::MPS, 0), inputs, f); });
  ASSERT_EQ(dev_error, "no error") << what << " fails on mps:0 but not on the CPU";
  EXPECT_EQ(got.out.device(), Device(DeviceType::MPS, 0)) << what << ": result";
  EXPECT_TRUE(close_to_cpu(got.out, want.out, rtol, atol, what + " forward"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].grad) continue;
    const std::string name = what + " gradient of input " + std::to_string(i);
    ASSERT_EQ(got.grads[i].defined(), want.grads[i].defined()) << name;
    if (!want.grads[i].defined()) continue;
    EXPECT_EQ(got.grads[i].device(), Device(DeviceType::MPS, 0)) << name;
    EXPECT_TRUE(close_to_cpu(got.grads[i], want.grads[i], rtol, atol, name));
  }
}

/// Each tensor of a module's state_dict, compared across devices; those of `dev_model` must be on mps:0.
inline void expect_same_state(const nn::Module& dev_model, const nn::Module& cpu_model, const std::string& what,
                              double rtol = 0, double atol = 0) {
  const nn::StateDict got = dev_model.state_dict(), want = cpu_model.state_dict();
  ASSERT_EQ(got.keys(), want.keys());
  for (const auto& [key, value] : want) {
    EXPECT_EQ(got.at(key).device(), Device(DeviceType::MPS, 0)) << what << " " << key;
    EXPECT_TRUE(close_to_cpu(got.at(key), value, rtol, atol, what + " " + key));
  }
}

}  // namespace ember_test::placement
