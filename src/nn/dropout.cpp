// The channel-wise and alpha dropout layers and their functional forms (include/ember/nn/dropout.h).
// torch.nn.functional's rank rules and warnings come first, then ATen's _dropout_impl: the early
// returns (not training, p = 0, no elements), p = 1 as a product with zero, a Bernoulli(1 - p)
// mask of the input's sizes or, for the feature forms, of [N, C, 1, ...], and the result as the
// input times the scaled mask (plus the alpha forms' constant), so autograd sees one product.
#include "ember/nn/dropout.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/warning.h"

namespace ember::nn {
namespace functional {

namespace {

/// The tensor an in-place call writes into: the caller's own, so that its handle sees the change.
Tensor& written(const Tensor& input) { return const_cast<Tensor&>(input); }

void check_p(double p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ",
              ember::detail::python_float(p));
}

/// ATen's _dropout_impl<feature, alpha, inplace>(input, p, train).
Tensor dropout_impl(const Tensor& input, double p, bool train, bool inplace, bool feature, bool alpha) {
  if (p == 0.0 || !train || input.numel() == 0) return input;
  if (p == 1.0) {
    const Tensor zero = zeros({}, input.options());
    return inplace ? written(input).mul_(zero) : input * zero;
  }
  std::vector<int64_t> noise_sizes = input.sizes().vec();
  if (feature) {
    EMBER_CHECK(input.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
    for (size_t d = 2; d < noise_sizes.size(); ++d) noise_sizes[d] = 1;
  }
  // PyTorch's mask has the input's dtype and is scaled in place, which integer inputs refuse.
  EMBER_CHECK(input.is_floating_point(), "result type Float can't be cast to the desired output type ",
              scalar_type_name(input.dtype()));
  const Dtype dtype = input.dtype();
  const Dtype draw = dtype == kFloat16 || dtype == kBFloat16 ? kFloat32 : dtype;
  Tensor noise = (rand(noise_sizes, TensorOptions().dtype(draw).device(input.device())) < (1.0 - p)).to(dtype);
  if (alpha) {
    constexpr double kAlpha = 1.7580993408473766;  // SELU's alpha * scale: -kAlpha is its saturation
    const double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1.0) * (1.0 - p));
    const Tensor b = (noise - 1.0) * (kAlpha * a) + kAlpha * a * p;
    noise = noise * a;
    return inplace ? written(input).mul_(noise).add_(b) : input * noise + b;
  }
  noise = noise / (1.0 - p);
  return inplace ? written(input).mul_(noise) : input * noise;
}

/// feature dropout of `input` read as unbatched when `batched` is false: through a leading
/// dimension of one, as PyTorch's unsqueeze / squeeze (in place, the input is written through
/// that view and returned).
Tensor channel_dropout(const Tensor& input, double p, bool training, bool inplace, bool batched) {
  if (batched) return dropout_impl(input, p, training, inplace, /*feature=*/true, /*alpha=*/false);
  if (!inplace) return dropout_impl(input.unsqueeze(0), p, training, false, true, false).squeeze(0);
  dropout_impl(input.unsqueeze(0), p, training, true, true, false);
  return input;
}

}  // namespace

Tensor dropout1d(const Tensor& input, double p, bool training, bool inplace) {
  ember::detail::OpContext context("dropout1d", {{"input", &input}});
  ember::detail::check_defined(input, "dropout1d");
  check_p(p);
  const int64_t dim = input.dim();
  EMBER_CHECK(dim == 2 || dim == 3, "dropout1d: Expected 2D or 3D input, but received a ", dim,
              "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
              "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  return channel_dropout(input, p, training, inplace, /*batched=*/dim == 3);
}

Tensor dropout2d(const Tensor& input, double p, bool training, bool inplace) {
  ember::detail::OpContext context("dropout2d", {{"input", &input}});
  ember::detail::check_defined(input, "dropout2d");
  check_p(p);
  const int64_t dim = input.dim();
  if (dim != 3 && dim != 4) {
    warn(ember::detail::concat(
        "dropout2d: Received a ", dim,
        "-D input to dropout2d, which is deprecated and will result in an error in a future release. To retain the "
        "behavior and silence this warning, please use dropout instead. Note that dropout2d exists to provide "
        "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and an optional batch "
        "dimension (i.e. 3D or 4D inputs)."));
  }
  // As PyTorch (its issue 77081): a 3-D input is read as [N, C, L], not as an unbatched [C, H, W].
  if (dim == 3) {
    warn(
        "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is desired - "
        "input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will change in a future "
        "release to interpret the input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
        "channel-wise dropout behavior, please switch to using dropout1d instead.");
  }
  return dropout_impl(input, p, training, inplace, /*feature=*/true, /*alpha=*/false);
}

Tensor dropout3d(const Tensor& input, double p, bool training, bool inplace) {
  ember::detail::OpContext context("dropout3d", {{"input", &input}});
  ember::detail::check_defined(input, "dropout3d");
  check_p(p);
  const int64_t dim = input.dim();
  if (dim != 4 && dim != 5) {
    warn(ember::detail::concat(
        "dropout3d: Received a ", dim,
        "-D input to dropout3d, which is deprecated and will result in an error in a future release. To retain the "
        "behavior and silence this warning, please use dropout instead. Note that dropout3d exists to provide "
        "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and an optional batch "
        "dimension (i.e. 4D or 5D inputs)."));
  }
  return channel_dropout(input, p, training, inplace, /*batched=*/dim == 5);
}

Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  ember::detail::OpContext context("alpha_dropout", {{"input", &input}});
  ember::detail::check_defined(input, "alpha_dropout");
  check_p(p);
  return dropout_impl(input, p, training, inplace, /*feature=*/false, /*alpha=*/true);
}

Tensor feature_alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  ember::detail::OpContext context("feature_alpha_dropout", {{"input", &input}});
  ember::detail::check_defined(input, "feature_alpha_dropout");
  check_p(p);
  return dropout_impl(input, p, training, inplace, /*feature=*/true, /*alpha=*/true);
}

}  // namespace functional

DropoutNd::DropoutNd(double p, bool inplace) : p(p), inplace(inplace) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "dropout probability has to be between 0 and 1, but got ",
              ember::detail::python_float(p));
}

}  // namespace ember::nn
