// 16-bit convolutions on each accelerator against the CPU's float32 result: float16 and bfloat16
// conv2d forward and backward (bias, one input channel as the cnn's first layer, groups, stride,
// padding, dilation), and one autocast training step of the trainer's cnn (forward, backward,
// optimizer step) against the same step on the CPU. On CUDA these go through cuDNN's NCHW API with
// the bias added by cudnnAddTensor and tensor-core math, a path no float32 test reaches; `ember
// train --amp` on the cnn runs it.
//
// Tolerances are 16-bit ones, relative to the machine epsilon of the type (eps: 2^-10 for
// float16, 2^-7 for bfloat16): each element within 2 eps of the reference plus 4 eps of the
// largest reference element, which covers the rounding of the result, of the separate bias
// addition, and of sums accumulated in float in another order. A wrong dtype, channel, group or
// stride is off by far more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/nn/nn.h"
#include "support/devices.h"
#include "train/models.h"
#include "train/recipe.h"
#include "train/trainer.h"

namespace {

using namespace ember;
namespace F = ember::nn::functional;
using ember_test::close_to_cpu;

double epsilon_of(Dtype dtype) { return dtype == kFloat16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7); }

/// Whether `got` (a 16-bit result, on any device) matches the float32 CPU reference `want`
/// within `ulps` epsilons of the reference and of its largest element.
::testing::AssertionResult close_16bit(const Tensor& got, Dtype dtype, const Tensor& want, double ulps,
                                       const std::string& what) {
  if (got.dtype() != dtype) {
    return ::testing::AssertionFailure() << what << ": dtype " << dtype_name(got.dtype()) << ", expected "
                                         << dtype_name(dtype);
  }
  const double eps = epsilon_of(dtype);
  const double scale = want.abs().max().item<double>();
  return close_to_cpu(got.to(kFloat32), want, ulps * eps, 2 * ulps * eps * scale, what);
}

class DeviceParityConv16 : public ember_test::DeviceTest {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped()) return;
    manual_seed(1616);
  }
  Tensor on(const Tensor& cpu) const { return cpu.to(device(), false, true); }
};

struct ConvCase {
  std::string name;
  int64_t n, cin, h, w, cout, kh, kw;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias;
};

TEST_P(DeviceParityConv16, Conv2dForwardAndBackwardMatchFloat32) {
  const std::vector<ConvCase> cases = {
      {"1 input channel with bias (the cnn's conv1)", 4, 1, 28, 28, 32, 3, 3, {1}, {0}, {1}, 1, true},
      {"32 -> 64 with bias (the cnn's conv2)", 2, 32, 12, 12, 64, 3, 3, {1}, {0}, {1}, 1, true},
      {"stride 2 padding 1", 2, 3, 11, 10, 6, 3, 3, {2}, {1}, {1}, 1, true},
      {"groups 2", 2, 4, 9, 9, 6, 3, 3, {1}, {1}, {1}, 2, true},
      {"depthwise, no bias", 2, 8, 8, 8, 8, 3, 3, {1}, {1}, {1}, 8, false},
      {"asymmetric stride, padding and dilation", 2, 3, 12, 13, 4, 3, 5, {2, 1}, {1, 2}, {1, 2}, 1, true},
      {"1x1", 3, 16, 5, 5, 8, 1, 1, {1}, {0}, {1}, 1, true},
  };
  for (const Dtype dtype : {kFloat16, kBFloat16}) {
    for (const ConvCase& c : cases) {
      const std::string what = std::string(dtype_name(dtype)) + " conv2d " + c.name;
      SCOPED_TRACE(what);
      // The operands are 16-bit values; the reference computes with exactly those values in float32.
      const Tensor x = randn({c.n, c.cin, c.h, c.w}).to(dtype);
      const Tensor w = (randn({c.cout, c.cin / c.groups, c.kh, c.kw}) * 0.3).to(dtype);
      const Tensor b = c.bias ? randn({c.cout}).to(dtype) : Tensor();

      const Tensor xr = x.to(kFloat32).requires_grad_(), wr = w.to(kFloat32).requires_grad_();
      const Tensor br = c.bias ? b.to(kFloat32).requires_grad_() : Tensor();
      const Tensor yr = F::conv2d(xr, wr, br, c.stride, c.padding, c.dilation, c.groups);
      const Tensor gy = randn(yr.sizes().vec()).to(dtype);  // the output's gradient, 16-bit too
      (yr * gy.to(kFloat32)).sum().backward();

      const Tensor xd = on(x).requires_grad_(), wd = on(w).requires_grad_();
      const Tensor bd = c.bias ? on(b).requires_grad_() : Tensor();
      const Tensor yd = F::conv2d(xd, wd, bd, c.stride, c.padding, c.dilation, c.groups);
      ASSERT_EQ(yd.device(), xd.device());
      (yd * on(gy)).sum().backward();  // d/dy of sum(y * gy) is gy, exactly

      EXPECT_TRUE(close_16bit(yd, dtype, yr.detach(), 2, what + " forward"));
      ASSERT_TRUE(xd.grad().defined() && wd.grad().defined());
      EXPECT_TRUE(close_16bit(xd.grad(), dtype, xr.grad(), 2, what + " input gradient"));
      EXPECT_TRUE(close_16bit(wd.grad(), dtype, wr.grad(), 2, what + " weight gradient"));
      if (c.bias) {
        ASSERT_TRUE(bd.grad().defined());
        EXPECT_TRUE(close_16bit(bd.grad(), dtype, br.grad(), 2, what + " bias gradient"));
      }
    }
  }
}

// ---- one autocast training step of the trainer's cnn ----

struct StepResult {
  Tensor loss;                               // float32, on the CPU
  Dtype logits_dtype = kFloat32;             // what the region computed the logits in
  std::vector<Tensor> grads, before, after;  // per parameter, float32, on the CPU
};

/// One step of `ember train --model cnn --amp`'s loop on `device`: the model and its Adadelta
/// (the cnn's recipe) from seed 7, the forward pass and loss in a `dtype` autocast region,
/// backward and the optimizer's step outside it. Dropout is off (eval mode): its masks come from
/// each device type's own generator and differ by design.
StepResult autocast_cnn_step(const Device& device, Dtype dtype, const Tensor& images, const Tensor& labels) {
  manual_seed(7);
  std::shared_ptr<nn::Module> model = train::make_model("cnn");
  model->to(device);
  model->eval();
  train::TrainOptions options;
  options.model = "cnn";
  const train::RunConfig recipe = train::resolve(options);
  std::unique_ptr<optim::Optimizer> optimizer = train::make_optimizer(recipe, model->parameters());
  StepResult r;
  for (const Tensor& p : model->parameters()) r.before.push_back(p.detach().to(Device(kCPU), false, true));
  optimizer->zero_grad();
  Tensor loss;
  {
    amp::autocast region(device.type(), dtype);
    EXPECT_TRUE(region.enabled()) << "autocast is off for " << device;
    const Tensor logits = (*model)(images.to(device));
    r.logits_dtype = logits.dtype();
    loss = F::cross_entropy(logits, labels.to(device));
  }
  loss.backward();
  optimizer->step();
  r.loss = loss.detach().to(Device(kCPU));
  for (const Tensor& p : model->parameters()) {
    r.grads.push_back(p.grad().to(Device(kCPU)));
    r.after.push_back(p.detach().to(Device(kCPU)));
  }
  return r;
}

TEST_P(DeviceParityConv16, AutocastCnnStepMatchesTheCpu) {
  // Fashion-MNIST-like inputs: [8, 1, 28, 28] in [0, 1] (the trainer feeds pixels / 255), and labels.
  const Tensor images = rand({8, 1, 28, 28});
  const Tensor labels = randint(0, 10, {8});
  for (const Dtype dtype : {kBFloat16, kFloat16}) {
    const std::string what = std::string(dtype_name(dtype)) + " autocast cnn step";
    SCOPED_TRACE(what);
    const StepResult cpu = autocast_cnn_step(Device(kCPU), dtype, images, labels);
    const StepResult dev = autocast_cnn_step(device(), dtype, images, labels);
    EXPECT_EQ(cpu.logits_dtype, dtype);
    EXPECT_EQ(dev.logits_dtype, dtype);
    // Through four 16-bit layers, the devices' roundings differ by a few epsilons of each
    // activation: 4 eps of each value plus 8 eps of the tensor's largest.
    const double eps = epsilon_of(dtype);
    EXPECT_TRUE(close_to_cpu(dev.loss, cpu.loss, 4 * eps, 4 * eps, what + " loss"));
    ASSERT_EQ(dev.grads.size(), cpu.grads.size());
    ASSERT_EQ(cpu.grads.size(), 8u);  // conv1, conv2, fc1, fc2: weight and bias each
    for (size_t i = 0; i < cpu.grads.size(); ++i) {
      const std::string p = what + " parameter " + std::to_string(i);
      EXPECT_TRUE(close_to_cpu(dev.before[i], cpu.before[i], 0, 0, p + " initial value"));
      const double g = cpu.grads[i].abs().max().item<double>();
      EXPECT_GT(g, 0) << p << ": no gradient reached it";
      EXPECT_TRUE(close_to_cpu(dev.grads[i], cpu.grads[i], 4 * eps, 8 * eps * g, p + " gradient"));
      const Tensor update_cpu = cpu.after[i] - cpu.before[i], update_dev = dev.after[i] - dev.before[i];
      const double u = update_cpu.abs().max().item<double>();
      EXPECT_GT(u, 0) << p << ": the step did not change it";
      EXPECT_TRUE(close_to_cpu(update_dev, update_cpu, 4 * eps, 8 * eps * u, p + " update"));
    }
  }
}

EMBER_INSTANTIATE_DEVICE_SUITE(DeviceParityConv16);

}  // namespace
