#pragma once
/// Fractional max pooling (Graham, "Fractional Max-Pooling"): torch.nn.functional's
/// fractional_max_pool2d / fractional_max_pool3d (and their _with_indices forms) and the
/// FractionalMaxPool2d / FractionalMaxPool3d layers, with PyTorch's arguments, messages and
/// window placement. Each (batch, channel) plane draws one number u in [0, 1) per dimension
/// (PyTorch's `_random_samples`, [N, C, 2] or [N, C, 3], in the input's dtype; as ATen reads
/// them, the 2-D samples are (width, height) and the 3-D ones (time, height, width)), and
/// window i of a dimension of size `in` pooled to `out` with kernel k starts at
///   floor((i + u) * a) - floor(u * a),  a = (in - k) / (out - 1),   for i < out - 1,
/// and the last one at in - k, computed in the input's precision as PyTorch does. Without given
/// samples they are drawn with ember::rand from the global generator, as PyTorch's torch.rand.
/// Composed of ember's ops: one gather of every window's elements and one max over each window,
/// whose gradient goes to the first maximum in row-major order, as PyTorch's kernel picks it.
/// Indices are flat positions within each plane (h*W + w, or t*H*W + h*W + w).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/pool3d.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

/// D ratios in (0, 1), given as one value for all of them or as D values (output_ratio).
template <size_t D>
class ExpandingRatio {
 public:
  ExpandingRatio(double all) : values_(D, all), given_(1) {}                  // NOLINT(google-explicit-constructor)
  ExpandingRatio(std::initializer_list<double> list) : given_(list.size()) {  // NOLINT(google-explicit-constructor)
    values_.assign(D, list.size() > 0 ? *list.begin() : 0.0);
    if (list.size() == D) values_.assign(list.begin(), list.end());
  }
  double operator[](size_t i) const { return values_[i]; }
  size_t given() const { return given_; }
  const std::vector<double>& vec() const { return values_; }

 private:
  std::vector<double> values_;
  size_t given_;
};

/// An optional ExpandingRatio for options structs (unset by default, PyTorch's None).
template <size_t D>
class OptionalRatio {
 public:
  OptionalRatio() = default;
  OptionalRatio(std::nullopt_t) {}                                                        // NOLINT
  OptionalRatio(double all) : value_(ExpandingRatio<D>(all)) {}                           // NOLINT
  OptionalRatio(std::initializer_list<double> list) : value_(ExpandingRatio<D>(list)) {}  // NOLINT
  OptionalRatio(ExpandingRatio<D> values) : value_(std::move(values)) {}                  // NOLINT

  bool has_value() const { return value_.has_value(); }
  explicit operator bool() const { return value_.has_value(); }
  const ExpandingRatio<D>& operator*() const { return *value_; }
  const ExpandingRatio<D>* operator->() const { return &*value_; }

 private:
  std::optional<ExpandingRatio<D>> value_;
};

namespace functional {

/// Input [N, C, H, W] or [C, H, W]; kernel_size and output_size one value or [h, w]; exactly one
/// of output_size and output_ratio (output = floor(in * ratio)); random_samples [N', C, 2] with
/// N' >= N (undefined: drawn).
Tensor fractional_max_pool2d(const Tensor& input, IntList kernel_size, IntList output_size = {},
                             const std::vector<double>& output_ratio = {}, const Tensor& random_samples = Tensor());
/// Also the int64 index h*W + w of each maximum within its plane.
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& input, IntList kernel_size,
                                                              IntList output_size = {},
                                                              const std::vector<double>& output_ratio = {},
                                                              const Tensor& random_samples = Tensor());
/// Input [N, C, T, H, W] or [C, T, H, W]; sizes one value or [t, h, w]; random_samples [N', C, 3].
Tensor fractional_max_pool3d(const Tensor& input, IntList kernel_size, IntList output_size = {},
                             const std::vector<double>& output_ratio = {}, const Tensor& random_samples = Tensor());
/// Also the int64 index t*H*W + h*W + w of each maximum within its volume.
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& input, IntList kernel_size,
                                                              IntList output_size = {},
                                                              const std::vector<double>& output_ratio = {},
                                                              const Tensor& random_samples = Tensor());

}  // namespace functional

/// FractionalMaxPool2d's optional arguments: exactly one of output_size and output_ratio.
struct FractionalMaxPool2dOptions {
  detail::DesignatedOnly designated_only = {};
  OptionalSize<2> output_size = {};
  OptionalRatio<2> output_ratio = {};
  bool return_indices = false;
  /// PyTorch's `_random_samples`: fixed samples [N, C, 2], kept as the buffer "_random_samples".
  Tensor random_samples = Tensor();
};

/// torch.nn.FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None,
/// return_indices=False, _random_samples=None). With return_indices, call forward_with_indices.
///   nn::FractionalMaxPool2d(3, {.output_ratio = 0.5});
///   nn::FractionalMaxPool2d(2, {.output_size = {7, 9}, .return_indices = true});
class FractionalMaxPool2d : public Module {
 public:
  explicit FractionalMaxPool2d(ExpandingSize<2> kernel_size, FractionalMaxPool2dOptions options = {});
  std::string name() const override { return "FractionalMaxPool2d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);

  ExpandingSize<2> kernel_size;
  OptionalSize<2> output_size = {};
  OptionalRatio<2> output_ratio = {};
  bool return_indices;
  Tensor random_samples;  // undefined unless given; then the buffer "_random_samples"
};

/// FractionalMaxPool3d's optional arguments: exactly one of output_size and output_ratio.
struct FractionalMaxPool3dOptions {
  detail::DesignatedOnly designated_only = {};
  OptionalSize<3> output_size = {};
  OptionalRatio<3> output_ratio = {};
  bool return_indices = false;
  /// PyTorch's `_random_samples`: fixed samples [N, C, 3], kept as the buffer "_random_samples".
  Tensor random_samples = Tensor();
};

/// torch.nn.FractionalMaxPool3d(kernel_size, output_size=None, output_ratio=None,
/// return_indices=False, _random_samples=None).
class FractionalMaxPool3d : public Module {
 public:
  explicit FractionalMaxPool3d(ExpandingSize<3> kernel_size, FractionalMaxPool3dOptions options = {});
  std::string name() const override { return "FractionalMaxPool3d"; }
  Tensor forward(const Tensor& input) override;
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& input);

  ExpandingSize<3> kernel_size;
  OptionalSize<3> output_size = {};
  OptionalRatio<3> output_ratio = {};
  bool return_indices;
  Tensor random_samples;  // undefined unless given; then the buffer "_random_samples"
};

}  // namespace ember::nn
