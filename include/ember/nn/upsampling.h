#pragma once
/// Upsampling layers: torch.nn's Upsample, UpsamplingNearest2d and UpsamplingBilinear2d, and
/// torch.nn.functional's interpolate and the deprecated upsample, upsample_nearest and
/// upsample_bilinear, which they call (the op is ember::interpolate, ember/interpolate.h, which
/// says what each mode computes).
///
/// `size` and `scale_factor` hold one value per spatial dimension or one value for all of them
/// (a Python int or float); exactly one of them must be given (empty means None).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/nn/modules.h"
#include "ember/nn/sizes.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// torch.nn.functional.interpolate: see ember::interpolate.
Tensor interpolate(const Tensor& input, IntList size = {}, const std::vector<double>& scale_factor = {},
                   std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt, bool antialias = false);
/// Deprecated in PyTorch (each warns once, with PyTorch's message): interpolate with these
/// arguments; upsample_nearest is mode "nearest", upsample_bilinear is mode "bilinear" with
/// align_corners = true.
Tensor upsample(const Tensor& input, IntList size = {}, const std::vector<double>& scale_factor = {},
                std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt);
Tensor upsample_nearest(const Tensor& input, IntList size = {}, const std::vector<double>& scale_factor = {});
Tensor upsample_bilinear(const Tensor& input, IntList size = {}, const std::vector<double>& scale_factor = {});

}  // namespace functional

/// The options of nn.Upsample, PyTorch's names and defaults; give size or scale_factor.
struct UpsampleOptions {
  detail::DesignatedOnly designated_only = {};
  SizeList size = {};                     // one value for every spatial dimension, or one each
  std::vector<double> scale_factor = {};  // likewise: {2.0} or {2.0, 1.5}
  std::string mode = "nearest";
  std::optional<bool> align_corners = std::nullopt;
  std::optional<bool> recompute_scale_factor = std::nullopt;
};

/// torch.nn.Upsample: functional::interpolate with the layer's arguments, checked when it runs.
/// A scale factor of one value 0 counts as none, as PyTorch's `float(s) if s else None`.
///   nn::Upsample({}, {2.0}, "bilinear");         nn::Upsample({.scale_factor = {2}, .mode = "bilinear"});
class Upsample : public Module {
 public:
  explicit Upsample(UpsampleOptions options)
      : Upsample(options.size.vec(), std::move(options.scale_factor), std::move(options.mode), options.align_corners,
                 options.recompute_scale_factor) {}
  /// PyTorch's positional order. (A template only so that a call GCC 12 reads as either form,
  /// `{.size = 4}`, picks the options.)
  template <int = 0>
  explicit Upsample(std::vector<int64_t> size = {}, std::vector<double> scale_factor = {}, std::string mode = "nearest",
                    std::optional<bool> align_corners = std::nullopt,
                    std::optional<bool> recompute_scale_factor = std::nullopt)
      : size(std::move(size)),
        scale_factor(std::move(scale_factor)),
        mode(std::move(mode)),
        align_corners(align_corners),
        recompute_scale_factor(recompute_scale_factor) {
    if (this->scale_factor.size() == 1 && this->scale_factor[0] == 0.0) this->scale_factor.clear();
  }
  std::string name() const override { return "Upsample"; }
  Tensor forward(const Tensor& input) override;
  /// PyTorch's extra_repr: "scale_factor=2.0, mode='nearest'" or "size=(5, 7), mode='bilinear'".
  std::string extra_repr() const;

  std::vector<int64_t> size;
  std::vector<double> scale_factor;
  std::string mode;
  std::optional<bool> align_corners;
  std::optional<bool> recompute_scale_factor;
};

/// The options of nn.UpsamplingNearest2d and nn.UpsamplingBilinear2d; give size or scale_factor.
struct UpsamplingNearest2dOptions {
  detail::DesignatedOnly designated_only = {};
  SizeList size = {};
  std::vector<double> scale_factor = {};
};
using UpsamplingBilinear2dOptions = UpsamplingNearest2dOptions;

/// Upsample with mode "nearest" (for 4-D inputs).
///   nn::UpsamplingNearest2d({}, {2.0});          nn::UpsamplingNearest2d({.scale_factor = {2.0}});
class UpsamplingNearest2d : public Upsample {
 public:
  /// (A template only so that GCC 12 does not also read `{.size = 4}` as a size.)
  template <int = 0>
  explicit UpsamplingNearest2d(std::vector<int64_t> size = {}, std::vector<double> scale_factor = {})
      : Upsample(std::move(size), std::move(scale_factor), "nearest") {}
  explicit UpsamplingNearest2d(UpsamplingNearest2dOptions options)
      : UpsamplingNearest2d(options.size.vec(), std::move(options.scale_factor)) {}
  std::string name() const override { return "UpsamplingNearest2d"; }
};

/// Upsample with mode "bilinear" and align_corners = true (for 4-D inputs).
class UpsamplingBilinear2d : public Upsample {
 public:
  /// (A template only so that GCC 12 does not also read `{.size = 4}` as a size.)
  template <int = 0>
  explicit UpsamplingBilinear2d(std::vector<int64_t> size = {}, std::vector<double> scale_factor = {})
      : Upsample(std::move(size), std::move(scale_factor), "bilinear", true) {}
  explicit UpsamplingBilinear2d(UpsamplingBilinear2dOptions options)
      : UpsamplingBilinear2d(options.size.vec(), std::move(options.scale_factor)) {}
  std::string name() const override { return "UpsamplingBilinear2d"; }
};

}  // namespace ember::nn
