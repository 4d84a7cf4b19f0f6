// kernels/pool_window.h against brute-force definitions of the pooling windows (PyTorch's rules,
// as src/backend/cpu/pool.cpp implements them) over every small geometry: padding, dilation,
// ceil_mode and adaptive sizes; then its per-element bodies, which are the CUDA pooling kernels'
// bodies, run on the host over whole tensors and compared bit for bit with the CPU backend. This
// is what pins the GPU's pooling on machines without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "kernels/pool_window.h"

namespace ember::kernels {
namespace {

// PyTorch's pooling_output_shape: the output size the front end computes.
int64_t output_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

// Every geometry PyTorch accepts for a small input: padding at most half the kernel, a positive
// output size.
std::vector<PoolDim> valid_dims(bool with_dilation) {
  std::vector<PoolDim> dims;
  for (int64_t in = 1; in <= 9; ++in) {
    for (int64_t k = 1; k <= 4; ++k) {
      for (int64_t s = 1; s <= 4; ++s) {
        for (int64_t p = 0; p <= k / 2; ++p) {
          for (int64_t d = 1; d <= (with_dilation ? 3 : 1); ++d) {
            for (bool ceil_mode : {false, true}) {
              const int64_t out = output_size(in, k, s, p, d, ceil_mode);
              if (out <= 0) continue;
              dims.push_back({in, out, k, s, p, d});
            }
          }
        }
      }
    }
  }
  return dims;
}

// The max-pooling taps of output o, straight from the definition.
std::vector<int64_t> brute_max_taps(const PoolDim& d, int64_t o) {
  std::vector<int64_t> taps;
  for (int64_t k = 0; k < d.kernel; ++k) {
    const int64_t i = o * d.stride - d.padding + k * d.dilation;
    if (i >= 0 && i < d.in) taps.push_back(i);
  }
  return taps;
}

std::vector<int64_t> walk(const MaxTaps& t, int64_t dilation) {
  std::vector<int64_t> taps;
  for (int64_t i = t.begin; i < t.end; i += dilation) taps.push_back(i);
  return taps;
}

TEST(PoolWindow, MaxTapsMatchTheDefinition) {
  for (const PoolDim& d : valid_dims(true)) {
    for (int64_t o = 0; o < d.out; ++o) {
      const MaxTaps t = max_taps(d, o);
      const std::vector<int64_t> expected = brute_max_taps(d, o);
      EXPECT_EQ(walk(t, d.dilation), expected) << "in " << d.in << " k " << d.kernel << " s " << d.stride << " p "
                                               << d.padding << " d " << d.dilation << " o " << o;
      // A window can miss the input altogether (in 1, kernel 2, padding 1, dilation 2 has taps -1
      // and 1); then begin is the first tap past the input, which is still what PyTorch reports.
      if (!expected.empty()) {
        EXPECT_EQ(t.begin, expected.front());
      }
    }
  }
}

TEST(PoolWindow, MaxTapsMatchTheCpuLoopForAnyPadding) {
  // Geometry outside PyTorch's limits too (padding up to the kernel): the first tap must still be
  // what the CPU's `while (h0 < 0) h0 += dilation` produces, since it is the reported index.
  for (int64_t in = 1; in <= 7; ++in) {
    for (int64_t k = 1; k <= 4; ++k) {
      for (int64_t s = 1; s <= 3; ++s) {
        for (int64_t p = 0; p <= k; ++p) {
          for (int64_t dil = 1; dil <= 3; ++dil) {
            const PoolDim d{in, 6, k, s, p, dil};
            for (int64_t o = 0; o < d.out; ++o) {
              int64_t begin = o * s - p;
              const int64_t end = std::min(begin + (k - 1) * dil + 1, in);
              while (begin < 0) begin += dil;
              const MaxTaps t = max_taps(d, o);
              EXPECT_EQ(t.begin, begin);
              EXPECT_EQ(t.end, end);
            }
          }
        }
      }
    }
  }
}

TEST(PoolWindow, AvgSpansMatchTheDefinition) {
  for (const PoolDim& d : valid_dims(false)) {
    for (int64_t o = 0; o < d.out; ++o) {
      int64_t padded = 0;
      std::vector<int64_t> inside;
      for (int64_t k = 0; k < d.kernel; ++k) {
        const int64_t i = o * d.stride - d.padding + k;
        if (i >= -d.padding && i < d.in + d.padding) ++padded;
        if (i >= 0 && i < d.in) inside.push_back(i);
      }
      const AvgSpan a = avg_span(d, o, false);
      EXPECT_EQ(a.padded_size, padded);
      std::vector<int64_t> got;
      for (int64_t i = a.clipped.begin; i < a.clipped.end; ++i) got.push_back(i);
      EXPECT_EQ(got, inside) << "in " << d.in << " k " << d.kernel << " s " << d.stride << " p " << d.padding << " o "
                             << o;
    }
  }
}

TEST(PoolWindow, AdaptiveSpansMatchTheDefinition) {
  for (int64_t in = 1; in <= 20; ++in) {
    for (int64_t out = 1; out <= 20; ++out) {
      const PoolDim d{in, out, 1, 1, 0, 1};
      for (int64_t o = 0; o < out; ++o) {
        // start: the largest s with s*out <= o*in; end: the smallest e with e*out >= (o+1)*in.
        int64_t start = 0;
        while ((start + 1) * out <= o * in) ++start;
        int64_t end = 0;
        while (end * out < (o + 1) * in) ++end;
        const AvgSpan a = avg_span(d, o, true);
        EXPECT_EQ(a.clipped.begin, start);
        EXPECT_EQ(a.clipped.end, end);
        EXPECT_EQ(a.padded_size, end - start);
        EXPECT_FALSE(a.clipped.empty());
      }
    }
  }
}

TEST(PoolWindow, AvgDivisors) {
  PoolGeometry g;
  g.h = {5, 3, 3, 2, 1, 1};  // rows: windows [-1,2), [1,4), [3,6)
  g.w = {4, 2, 2, 2, 1, 1};  // cols: windows [-1,1), [1,3)
  g.count_include_pad = true;
  AvgWindow w = avg_window(g, 0, 0);
  EXPECT_EQ(w.h.begin, 0);
  EXPECT_EQ(w.h.end, 2);
  EXPECT_EQ(w.w.begin, 0);
  EXPECT_EQ(w.w.end, 1);
  EXPECT_EQ(w.divisor, 3 * 2);  // the padding counts
  w = avg_window(g, 2, 1);
  EXPECT_EQ(w.h.end, 5);
  EXPECT_EQ(w.divisor, 3 * 2);  // [3,6) reaches the bottom padding row exactly
  g.count_include_pad = false;
  EXPECT_EQ(avg_window(g, 0, 0).divisor, 2 * 1);
  EXPECT_EQ(avg_window(g, 2, 1).divisor, 2 * 2);
  g.divisor_override = 7;
  EXPECT_EQ(avg_window(g, 0, 0).divisor, 7);
  g.count_include_pad = true;
  EXPECT_EQ(avg_window(g, 1, 1).divisor, 7);

  // ceil_mode: a last window hanging past the padded input is cut at in + pad for the divisor.
  PoolGeometry c;
  c.h = {5, 3, 2, 2, 0, 1};  // windows [0,2), [2,4), [4,6) -> padded [4,5)
  c.w = {1, 1, 1, 1, 0, 1};
  EXPECT_EQ(avg_window(c, 2, 0).divisor, 1);
  c.h = {5, 3, 3, 2, 1, 1};  // ceil_mode with padding: [3,6) stays inside in + pad = 6
  EXPECT_EQ(avg_window(c, 2, 0).divisor, 3);

  PoolGeometry a;
  a.adaptive = true;
  a.h = {5, 3, 1, 1, 0, 1};  // [0,2), [1,4), [3,5)
  a.w = {3, 2, 1, 1, 0, 1};  // [0,2), [1,3)
  a.divisor_override = 9;    // ignored: adaptive pooling has no override
  EXPECT_EQ(avg_window(a, 1, 1).divisor, 3 * 2);
}

TEST(PoolWindow, MaxGatherFindsEveryOutputThatCanReportAnInput) {
  for (const PoolDim& d : valid_dims(true)) {
    std::vector<std::set<int64_t>> readers(static_cast<size_t>(d.in));
    for (int64_t o = 0; o < d.out; ++o) {
      for (int64_t i : brute_max_taps(d, o)) readers[static_cast<size_t>(i)].insert(o);
      // The index of an all -inf window; when the window misses the input it lies outside the
      // plane and no gather finds it (the gradient of such an output is dropped).
      const int64_t reported = max_taps(d, o).begin;
      if (reported < d.in) readers[static_cast<size_t>(reported)].insert(o);
    }
    for (int64_t i = 0; i < d.in; ++i) {
      const Span s = max_outputs_reading(d, i);
      for (int64_t o : readers[static_cast<size_t>(i)]) {
        EXPECT_TRUE(o >= s.begin && o < s.end) << "in " << d.in << " k " << d.kernel << " s " << d.stride << " p "
                                               << d.padding << " d " << d.dilation << " i " << i << " o " << o;
      }
      // Not needlessly wide: every candidate's span holds i.
      for (int64_t o = s.begin; o < s.end; ++o) {
        const int64_t first = o * d.stride - d.padding;
        EXPECT_TRUE(first <= i && i <= first + (d.kernel - 1) * d.dilation);
      }
    }
  }
}

TEST(PoolWindow, AvgGatherFindsEveryWindowHoldingAnInput) {
  auto check = [](const PoolDim& d, bool adaptive) {
    for (int64_t i = 0; i < d.in; ++i) {
      const Span s = avg_outputs_reading(d, i, adaptive);
      for (int64_t o = 0; o < d.out; ++o) {
        const Span w = avg_span(d, o, adaptive).clipped;
        if (i >= w.begin && i < w.end) {
          EXPECT_TRUE(o >= s.begin && o < s.end)
              << "adaptive " << adaptive << " in " << d.in << " out " << d.out << " i " << i << " o " << o;
        }
      }
      EXPECT_LE(s.size(), adaptive ? d.out : d.kernel / d.stride + 2);
    }
  };
  for (const PoolDim& d : valid_dims(false)) check(d, false);
  for (int64_t in = 1; in <= 20; ++in) {
    for (int64_t out = 1; out <= 20; ++out) check(PoolDim{in, out, 1, 1, 0, 1}, true);
  }
}

// ------------------------------------------------------------------------------- the kernels' bodies

struct Case {
  PoolKind kind;
  PoolDim h, w;
  bool count_include_pad = true;
  int64_t divisor_override = 0;
};

Pool2dArgs args_of(const Case& c) {
  Pool2dArgs a;
  a.kind = c.kind;
  a.kernel[0] = c.h.kernel, a.kernel[1] = c.w.kernel;
  a.stride[0] = c.h.stride, a.stride[1] = c.w.stride;
  a.padding[0] = c.h.padding, a.padding[1] = c.w.padding;
  a.dilation[0] = c.h.dilation, a.dilation[1] = c.w.dilation;
  a.count_include_pad = c.count_include_pad;
  a.divisor_override = c.divisor_override;
  return a;
}

// What CudaBackend::pool2d builds from its arguments (pool.cu's geometry_of).
PoolGeometry geometry_of(const Case& c) {
  PoolGeometry g;
  g.h = c.h;
  g.w = c.w;
  g.adaptive = c.kind == PoolKind::AdaptiveAvg;
  g.count_include_pad = c.count_include_pad;
  g.divisor_override = c.divisor_override;
  return g;
}

template <typename T>
TensorView view_of(std::vector<T>& data, int64_t planes, int64_t rows, int64_t cols) {
  TensorView v;
  v.data = data.data();
  v.dtype = dtype_v<T>;
  v.sizes = Dims{planes, 1, rows, cols};
  v.strides = Dims{rows * cols, rows * cols, cols, 1};
  return v;
}

// Equal bits, or both NaN.
template <typename T>
bool same(T a, T b) {
  const auto fa = static_cast<double>(static_cast<compute_t<T>>(a));
  const auto fb = static_cast<double>(static_cast<compute_t<T>>(b));
  if (std::isnan(fa) && std::isnan(fb)) return true;
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Values with ties, infinities and NaNs, so that the max's tie and NaN rules are exercised.
template <typename T>
std::vector<T> sample(std::mt19937& rng, int64_t n, bool specials) {
  const float pool[] = {-2.0f, -1.0f, 0.0f, 0.5f, 1.0f, 1.25f, 3.0f, -0.75f};
  std::uniform_int_distribution<int> pick(0, 7), special(0, 40);
  std::uniform_real_distribution<float> real(-4.0f, 4.0f);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& e : v) {
    float f = pick(rng) < 4 ? pool[pick(rng)] : real(rng);
    const int s = specials ? special(rng) : 99;
    if (s == 0) f = std::numeric_limits<float>::quiet_NaN();
    if (s == 1) f = -std::numeric_limits<float>::infinity();
    if (s == 2) f = std::numeric_limits<float>::infinity();
    e = static_cast<T>(f);
  }
  return v;
}

bool all_windows_touch_the_input(const PoolDim& d) {
  for (int64_t o = 0; o < d.out; ++o) {
    if (brute_max_taps(d, o).empty()) return false;
  }
  return true;
}

template <typename T>
void check_case(const Case& c, std::mt19937& rng) {
  constexpr int64_t kPlanes = 3;
  const PoolGeometry g = geometry_of(c);
  const Pool2dArgs a = args_of(c);
  const int64_t in_plane = c.h.in * c.w.in, out_plane = c.h.out * c.w.out;
  cpu::CpuBackend cpu;

  std::vector<T> x = sample<T>(rng, kPlanes * in_plane, true);
  std::vector<T> y(static_cast<size_t>(kPlanes * out_plane)), y_gpu(y.size());
  std::vector<int64_t> idx(y.size()), idx_gpu(y.size());
  TensorView iv = view_of(idx, kPlanes, c.h.out, c.w.out);
  if (c.kind != PoolKind::Max) iv.data = nullptr;
  cpu.pool2d(view_of(x, kPlanes, c.h.in, c.w.in), view_of(y, kPlanes, c.h.out, c.w.out), iv, a);
  for (int64_t p = 0; p < kPlanes; ++p) {
    for (int64_t oh = 0; oh < c.h.out; ++oh) {
      for (int64_t ow = 0; ow < c.w.out; ++ow) {
        const size_t o = static_cast<size_t>(p * out_plane + oh * c.w.out + ow);
        const T* plane = x.data() + p * in_plane;
        y_gpu[o] = c.kind == PoolKind::Max ? max_pool_at(plane, g, oh, ow, &idx_gpu[o]) : avg_pool_at(plane, g, oh, ow);
        ASSERT_TRUE(same(y[o], y_gpu[o])) << "forward, output " << o;
        if (c.kind == PoolKind::Max) {
          ASSERT_EQ(idx[o], idx_gpu[o]) << "output " << o;
        }
      }
    }
  }

  if (c.kind == PoolKind::Max && !(all_windows_touch_the_input(c.h) && all_windows_touch_the_input(c.w))) return;
  std::vector<T> gy = sample<T>(rng, kPlanes * out_plane, false);
  std::vector<T> gx(static_cast<size_t>(kPlanes * in_plane));
  cpu.pool2d_backward(view_of(gy, kPlanes, c.h.out, c.w.out), iv, view_of(gx, kPlanes, c.h.in, c.w.in), a);
  for (int64_t p = 0; p < kPlanes; ++p) {
    for (int64_t ih = 0; ih < c.h.in; ++ih) {
      for (int64_t iw = 0; iw < c.w.in; ++iw) {
        const size_t i = static_cast<size_t>(p * in_plane + ih * c.w.in + iw);
        const T* grad = gy.data() + p * out_plane;
        const T got = c.kind == PoolKind::Max ? max_pool_grad_at(grad, idx.data() + p * out_plane, g, ih, iw)
                                              : avg_pool_grad_at(grad, g, ih, iw);
        ASSERT_TRUE(same(gx[i], got)) << "backward, input " << i << ": cpu " << static_cast<double>(gx[i])
                                      << ", kernel body " << static_cast<double>(got);
      }
    }
  }
}

std::vector<Case> cases(std::mt19937& rng) {
  std::vector<Case> out;
  const std::vector<PoolDim> dilated = valid_dims(true), plain = valid_dims(false);
  std::uniform_int_distribution<size_t> pick_dilated(0, dilated.size() - 1), pick_plain(0, plain.size() - 1);
  for (int i = 0; i < 400; ++i) out.push_back({PoolKind::Max, dilated[pick_dilated(rng)], dilated[pick_dilated(rng)]});
  for (int i = 0; i < 400; ++i) {
    Case c{PoolKind::Avg, plain[pick_plain(rng)], plain[pick_plain(rng)]};
    c.count_include_pad = i % 2 == 0;
    if (i % 5 == 0) c.divisor_override = 1 + i % 7;
    out.push_back(c);
  }
  for (int64_t ih = 1; ih <= 7; ++ih) {
    for (int64_t oh = 1; oh <= 7; ++oh) {
      out.push_back({PoolKind::AdaptiveAvg, PoolDim{ih, oh, 1, 1, 0, 1}, PoolDim{8 - ih, 8 - oh, 1, 1, 0, 1}});
    }
  }
  return out;
}

template <typename T>
void check_all() {
  std::mt19937 rng(1234);
  for (const Case& c : cases(rng)) {
    SCOPED_TRACE(testing::Message() << "kind " << static_cast<int>(c.kind) << " h {in " << c.h.in << " out " << c.h.out
                                    << " k " << c.h.kernel << " s " << c.h.stride << " p " << c.h.padding << " d "
                                    << c.h.dilation << "} w {in " << c.w.in << " out " << c.w.out << " k " << c.w.kernel
                                    << " s " << c.w.stride << " p " << c.w.padding << " d " << c.w.dilation
                                    << "} include_pad " << c.count_include_pad << " override " << c.divisor_override);
    check_case<T>(c, rng);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(PoolKernelBodies, MatchTheCpuBackendFloat32) { check_all<float>(); }
TEST(PoolKernelBodies, MatchTheCpuBackendFloat64) { check_all<double>(); }
TEST(PoolKernelBodies, MatchTheCpuBackendFloat16) { check_all<Half>(); }
TEST(PoolKernelBodies, MatchTheCpuBackendBFloat16) { check_all<BFloat16>(); }

}  // namespace
}  // namespace ember::kernels
