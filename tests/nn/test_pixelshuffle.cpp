// nn::PixelShuffle / PixelUnshuffle / ChannelShuffle and their functional forms against PyTorch
// 2.15 (tests/nn/golden/nn_layers_golden.safetensors from tools/gen_nn_layers_golden.py): outputs
// and input gradients in float64 and float32, through the layer and the function; the
// rearrangement written out element by element; results that are new tensors (as PyTorch's,
// never views of the input); other dtypes and strided inputs; and PyTorch's error messages.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "ember/nn/pixelshuffle.h"
#include "support/error_of.h"
#include "support/golden_cases.h"
#include "support/gradcheck.h"

namespace {

using namespace ember;
namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember_test::error_of;
using ember_test::GoldenCase;

const io::SafetensorsData& golden() {
  static const io::SafetensorsData data =
      io::load_safetensors(EMBER_SOURCE_DIR "/tests/nn/golden/nn_layers_golden.safetensors");
  return data;
}

const Tensor& at(const GoldenCase& c, const std::string& name) { return golden().at(c.prefix + name); }

std::vector<GoldenCase> shuffle_cases() {
  std::vector<GoldenCase> out;
  for (GoldenCase& c : ember_test::golden_cases(golden().metadata)) {
    if (c.kind == "PixelShuffle" || c.kind == "PixelUnshuffle" || c.kind == "ChannelShuffle") {
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::shared_ptr<nn::Module> build(const GoldenCase& c) {
  if (c.kind == "PixelShuffle") return std::make_shared<nn::PixelShuffle>(c.num("r"));
  if (c.kind == "PixelUnshuffle") return std::make_shared<nn::PixelUnshuffle>(c.num("r"));
  return std::make_shared<nn::ChannelShuffle>(c.num("groups"));
}

Tensor run_functional(const GoldenCase& c, const Tensor& x) {
  if (c.kind == "PixelShuffle") return F::pixel_shuffle(x, c.num("r"));
  if (c.kind == "PixelUnshuffle") return F::pixel_unshuffle(x, c.num("r"));
  return F::channel_shuffle(x, c.num("groups"));
}

void check_goldens(Dtype dtype, bool layer) {
  const std::vector<GoldenCase> cases = shuffle_cases();
  ASSERT_EQ(cases.size(), 10u);
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.description + (layer ? " (layer) in " : " (function) in ") + std::string(dtype_name(dtype)));
    EXPECT_TRUE(c.keys.empty());
    Tensor x = at(c, "x").to(dtype).clone().requires_grad_();
    Tensor y = layer ? build(c)->forward(x) : run_functional(c, x);
    ASSERT_EQ(y.dtype(), dtype);
    (y * at(c, "gy").to(dtype)).sum().backward();
    // A rearrangement: every value, and every gradient, is exactly PyTorch's.
    ASSERT_EQ(y.sizes().vec(), at(c, "y").sizes().vec());
    EXPECT_TRUE(equal(y.detach(), at(c, "y").to(dtype))) << y << "\nwant\n" << at(c, "y");
    ASSERT_TRUE(x.grad().defined());
    EXPECT_TRUE(equal(x.grad(), at(c, "gx").to(dtype))) << x.grad() << "\nwant\n" << at(c, "gx");
  }
}

TEST(PixelShuffleGolden, LayersFloat64) { check_goldens(kFloat64, true); }
TEST(PixelShuffleGolden, FunctionsFloat64) { check_goldens(kFloat64, false); }
TEST(PixelShuffleGolden, LayersFloat32) { check_goldens(kFloat32, true); }
TEST(PixelShuffleGolden, FunctionsFloat32) { check_goldens(kFloat32, false); }

// ---------------------------------------------------------------- the rearrangement itself

TEST(PixelShuffle, ElementByElement) {
  const int64_t n = 2, c = 3, r = 2, h = 2, w = 3;
  Tensor x = arange(n * c * r * r * h * w, kFloat64).reshape({n, c * r * r, h, w});
  Tensor y = F::pixel_shuffle(x, r);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{n, c, h * r, w * r}));
  Tensor back = F::pixel_unshuffle(y, r);
  EXPECT_TRUE(equal(back, x));
  const double* in = x.data_ptr<double>();
  const double* out = y.contiguous().data_ptr<double>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < h * r; ++i)
        for (int64_t j = 0; j < w * r; ++j) {
          // out[b, ch, i, j] = in[b, ch r^2 + (i % r) r + (j % r), i / r, j / r]
          const int64_t src = ((b * c * r * r + ch * r * r + (i % r) * r + (j % r)) * h + i / r) * w + j / r;
          const int64_t dst = ((b * c + ch) * h * r + i) * w * r + j;
          ASSERT_EQ(out[dst], in[src]) << b << " " << ch << " " << i << " " << j;
        }
}

TEST(ChannelShuffle, InterleavesTheGroups) {
  // PyTorch: channel_shuffle(arange(16).reshape(1, 4, 2, 2), 2).view(-1)
  Tensor y = F::channel_shuffle(arange(16).reshape({1, 4, 2, 2}), 2);
  EXPECT_EQ(y.dtype(), kInt64);
  EXPECT_TRUE(equal(y.reshape({-1}), tensor({0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15})));
  // Three groups of two: channel i k + j goes to j g + i.
  Tensor z = F::channel_shuffle(arange(6, kFloat32).reshape({1, 6, 1}), 3);
  EXPECT_TRUE(equal(z.reshape({-1}), tensor({0.f, 2.f, 4.f, 1.f, 3.f, 5.f})));
}

// ---------------------------------------------------------------- results, dtypes, layouts

TEST(PixelShuffle, ResultsAreNewContiguousTensors) {
  manual_seed(3);
  Tensor x = randn({1, 4, 2, 2});
  for (const Tensor& y : {F::pixel_shuffle(x, 2), F::pixel_shuffle(x, 1), F::pixel_unshuffle(x, 1),
                          F::pixel_unshuffle(x, 2), F::channel_shuffle(x, 2), F::channel_shuffle(x, 1)}) {
    EXPECT_FALSE(y.is_alias_of(x));
    EXPECT_FALSE(y.is_view());
    EXPECT_TRUE(y.is_contiguous());
  }
  // Factor 1 and one group change nothing but are copies, as PyTorch's kernels make.
  EXPECT_TRUE(equal(F::pixel_shuffle(x, 1), x));
  EXPECT_TRUE(equal(F::channel_shuffle(x, 1), x));
  // Writing into a result leaves the input alone.
  Tensor y = F::pixel_shuffle(x, 1);
  y.fill_(7);
  EXPECT_FALSE(equal(x, y));
}

TEST(PixelShuffle, StridedAndEmptyInputsAndOtherDtypes) {
  manual_seed(4);
  Tensor base = randn({2, 3, 4, 8});
  Tensor strided = base.transpose(2, 3);  // [2, 3, 8, 4], not contiguous
  EXPECT_TRUE(equal(F::pixel_unshuffle(strided, 2), F::pixel_unshuffle(strided.contiguous(), 2)));
  Tensor wide = randn({2, 4, 3, 3}).transpose(0, 1);  // [4, 2, 3, 3]
  EXPECT_TRUE(equal(F::pixel_shuffle(wide, 1), wide.contiguous()));
  Tensor channels_last = randn({2, 4, 4, 6}).permute({0, 3, 1, 2});  // [2, 6, 4, 4]
  EXPECT_TRUE(equal(F::channel_shuffle(channels_last, 3), F::channel_shuffle(channels_last.contiguous(), 3)));
  // Empty: the output's sizes, as PyTorch.
  EXPECT_EQ(F::pixel_shuffle(zeros({0, 4, 2, 2}), 2).sizes().vec(), (std::vector<int64_t>{0, 1, 4, 4}));
  EXPECT_EQ(F::pixel_unshuffle(zeros({0, 1, 4, 4}), 2).sizes().vec(), (std::vector<int64_t>{0, 4, 2, 2}));
  Tensor none = zeros({0, 4, 2, 2});
  Tensor shuffled = F::channel_shuffle(none, 2);
  EXPECT_EQ(shuffled.sizes().vec(), none.sizes().vec());
  EXPECT_FALSE(shuffled.is_view());
  // Integer and bool tensors are rearranged too.
  Tensor ints = arange(16).reshape({4, 2, 2});
  EXPECT_TRUE(equal(F::pixel_unshuffle(F::pixel_shuffle(ints, 2), 2), ints));
  Tensor flags = (arange(8).reshape({1, 4, 2}) > 2);
  EXPECT_EQ(F::channel_shuffle(flags, 2).dtype(), kBool);
}

TEST(PixelShuffle, ModulesKeepTheirArguments) {
  nn::PixelShuffle ps(3);
  nn::PixelUnshuffle pu(2);
  nn::ChannelShuffle cs(4);
  EXPECT_EQ(ps.name(), "PixelShuffle");
  EXPECT_EQ(pu.name(), "PixelUnshuffle");
  EXPECT_EQ(cs.name(), "ChannelShuffle");
  EXPECT_EQ(ps.upscale_factor, 3);
  EXPECT_EQ(pu.downscale_factor, 2);
  EXPECT_EQ(cs.groups, 4);
  EXPECT_TRUE(ps.state_dict().keys().empty());
  EXPECT_TRUE(ps.parameters().empty());
}

TEST(PixelShuffle, Gradcheck) {
  manual_seed(5);
  test::gradcheck("pixel_shuffle", [](const std::vector<Tensor>& in) { return F::pixel_shuffle(in[0], 2); },
                  {randn({2, 4, 2, 3})});
  test::gradcheck("pixel_unshuffle", [](const std::vector<Tensor>& in) { return F::pixel_unshuffle(in[0], 2); },
                  {randn({1, 2, 4, 2})});
  test::gradcheck("channel_shuffle", [](const std::vector<Tensor>& in) { return F::channel_shuffle(in[0], 3); },
                  {randn({2, 6, 2})});
}

// ---------------------------------------------------------------- PyTorch's errors

TEST(PixelShuffle, ErrorsArePyTorchs) {
  Tensor x = randn({1, 8, 2, 3});
  EXPECT_EQ(error_of([] {
              F::pixel_shuffle(randn({4, 4}), 2);
            }),
            "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)");
  EXPECT_EQ(error_of([&] { F::pixel_shuffle(x, 0); }), "pixel_shuffle expects a positive upscale_factor, but got 0");
  EXPECT_EQ(error_of([&] { nn::PixelShuffle(3)(x); }),
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            "but input.size(-3)=8 is not divisible by 9");
  EXPECT_EQ(error_of([] {
              F::pixel_unshuffle(randn({4, 4}), 2);
            }),
            "pixel_unshuffle expects input to have at least 3 dimensions, but got input with 2 dimension(s)");
  EXPECT_EQ(error_of([&] { F::pixel_unshuffle(x, -1); }),
            "pixel_unshuffle expects a positive downscale_factor, but got -1");
  EXPECT_EQ(error_of([] {
              F::pixel_unshuffle(randn({1, 2, 3, 4}), 2);
            }),
            "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=3 is not "
            "divisible by 2");
  EXPECT_EQ(error_of([] {
              nn::PixelUnshuffle(2)(randn({1, 2, 4, 3}));
            }),
            "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=3 is not "
            "divisible by 2");
  EXPECT_EQ(error_of([] {
              F::channel_shuffle(randn({4, 4}), 2);
            }),
            "channel_shuffle expects input with > 2 dims, but got input with sizes [4, 4]");
  EXPECT_EQ(error_of([&] { F::channel_shuffle(x, 0); }),
            "Number of groups to divide channels in must be positive. Value of groups:0");
  EXPECT_EQ(error_of([&] { nn::ChannelShuffle(3)(x); }),
            "Number of channels must be divisible by groups. Got 8 channels and 3 groups.");
}

}  // namespace
