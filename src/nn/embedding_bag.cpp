// EmbeddingBag and functional::embedding_bag (include/ember/nn/embedding_bag.h): PyTorch's
// checks in its order (torch.nn.functional's, then ATen's), max_norm's renormalisation, and the
// input laid out as int64 indices with B + 1 bag boundaries for the reduction's kernels
// (src/ops/embedding_bag.cpp; the indices' range is checked there).
#include "ember/nn/embedding_bag.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/nn/init.h"
#include "ember/ops.h"
#include "ops/embedding_bag.h"

namespace ember::nn {

namespace functional {

namespace {

/// torch.Size([2, 3]), as Python prints a shape.
std::string torch_size(IntList sizes) {
  std::ostringstream os;
  os << "torch.Size([";
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? ", " : "") << sizes[d];
  os << "])";
  return os.str();
}

/// ATen's legacy type name in checkScalarTypes' messages: torch.FloatTensor, torch.cuda.LongTensor.
std::string legacy_type(Dtype dtype, const Device& device) {
  return ember::detail::concat("torch.", device.is_cpu() ? "" : "cuda.", scalar_type_name(dtype), "Tensor");
}

std::vector<int64_t> host_values(const Tensor& t) {
  const Tensor h = t.to(Device(DeviceType::CPU)).to(kInt64).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

/// torch.embedding_renorm_ under no_grad: each distinct row named by `indices` whose norm exceeds
/// max_norm is scaled by max_norm / (norm + 1e-7).
void renorm(const Tensor& weight, const std::vector<int64_t>& indices, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  const std::set<int64_t> rows(indices.begin(), indices.end());
  const int64_t num = weight.size(0);
  for (int64_t r : rows) {
    EMBER_CHECK(r >= -num && r < num, "index ", r, " is out of bounds for dimension 0 with size ", num);
    Tensor row = weight.select(0, r);
    const Tensor a = ember::abs(row.to(kFloat64));
    double norm;
    if (norm_type == std::numeric_limits<double>::infinity()) {
      norm = ember::amax(a).item<double>();
    } else if (norm_type == -std::numeric_limits<double>::infinity()) {
      norm = ember::amin(a).item<double>();
    } else if (norm_type == 0) {
      norm = ember::sum(ember::ne(a, zeros_like(a)).to(kFloat64)).item<double>();
    } else if (norm_type == 2) {
      norm = std::sqrt(ember::sum(a * a).item<double>());
    } else {
      norm = std::pow(ember::sum(ember::pow(a, Scalar(norm_type))).item<double>(), 1.0 / norm_type);
    }
    if (norm > max_norm) row.mul_(Scalar(max_norm / (norm + 1e-7)));
  }
}

}  // namespace

namespace detail {
void embedding_renorm_(const Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  renorm(weight, host_values(indices), max_norm, norm_type);
}
}  // namespace detail

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets, std::optional<double> max_norm,
                     double norm_type, bool scale_grad_by_freq, const std::string& mode, bool sparse,
                     const Tensor& per_sample_weights, bool include_last_offset, std::optional<int64_t> padding_idx) {
  ember::detail::OpContext context(
      "embedding_bag",
      {{"input", &input}, {"weight", &weight}, {"offsets", &offsets}, {"per_sample_weights", &per_sample_weights}});
  ember::detail::check_defined(input, "embedding_bag");
  ember::detail::check_defined(weight, "embedding_bag");
  const bool weighted = per_sample_weights.defined();
  // torch.nn.functional.embedding_bag's checks.
  EMBER_CHECK(!weighted || input.sizes().vec() == per_sample_weights.sizes().vec(),
              "embedding_bag: If per_sample_weights (", torch_size(per_sample_weights.sizes()),
              ") is not None, then it must have the same shape as the input (", torch_size(input.sizes()), ")");
  EMBER_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  bool last_offset = include_last_offset;
  if (input.dim() == 2) {
    EMBER_CHECK(!offsets.defined(),
                "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length "
                "sequences. However, found offsets of type <class 'torch.Tensor'>");
    EMBER_CHECK(input.size(1) != 0, "step must be nonzero");
    last_offset = false;
  } else if (input.dim() == 1) {
    EMBER_CHECK(offsets.defined(), "offsets has to be a 1D Tensor but got None");
    EMBER_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor");
  } else {
    ember::detail::fail("input has to be 1D or 2D Tensor, but got Tensor of dimension ", input.dim());
  }
  enum class Mode { Sum, Mean, Max };
  Mode how = Mode::Mean;
  if (mode == "sum") {
    how = Mode::Sum;
  } else if (mode == "mean") {
    how = Mode::Mean;
  } else if (mode == "max") {
    how = Mode::Max;
    EMBER_CHECK(!scale_grad_by_freq, "max mode does not support scaling the gradient by the frequency");
    EMBER_CHECK(!sparse, "max mode does not support sparse weights");
  } else {
    ember::detail::fail("mode has to be one of sum, mean or max");
  }
  // ATen's checks of the indices (promoted with the offsets to one type, as ATen does).
  const Dtype index_type = offsets.defined() ? promote_types(input.dtype(), offsets.dtype()) : input.dtype();
  EMBER_CHECK(
      index_type == kInt64 || index_type == kInt32,
      "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got ",
      legacy_type(index_type, input.device()), " instead (while checking arguments for embedding_bag)");
  if (max_norm) renorm(weight, host_values(input), *max_norm, norm_type);
  EMBER_CHECK(!weighted || how == Mode::Sum,
              "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' "
              "(got mode='",
              mode, "'). Please open a feature request on GitHub.");
  EMBER_CHECK(!sparse, "embedding_bag: sparse=True is not supported: ember has no sparse gradients");
  const int64_t num_embeddings = weight.size(0);
  int64_t pad = -1;
  if (padding_idx) {
    pad = *padding_idx;
    EMBER_CHECK(pad >= -num_embeddings && pad < num_embeddings,
                "padding_idx must be within the number of embeddings, -", num_embeddings, " through ",
                num_embeddings - 1, ", but got ", pad);
    if (pad < 0) pad += num_embeddings;
  }
  EMBER_CHECK(is_floating_point(weight.dtype()),
              "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, "
              "Float, Double; but got ",
              legacy_type(weight.dtype(), weight.device()), " instead (while checking arguments for embedding_bag)");
  const int64_t length = input.numel();
  const Device device = weight.device();
  const TensorOptions long_options = TensorOptions().dtype(kInt64).device(device);
  // The B + 1 bag boundaries the kernels take. The offsets' values are checked where they can be
  // read without waiting for a device (PyTorch's CPU kernel checks them; its CUDA kernels do
  // not); a device's kernels clamp them instead.
  const bool offsets_on_host = input.dim() == 1 && offsets.device().is_cpu();
  std::vector<int64_t> starts = offsets_on_host ? host_values(offsets) : std::vector<int64_t>();
  if (!starts.empty()) {
    EMBER_CHECK(starts.front() == 0,
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. "
                "However, got ",
                starts.front());
    EMBER_CHECK(starts.back() <= length, "offsets[-1] can not be greater than input's length ", length,
                " but got offsets[-1] of ", starts.back());
  }
  if (weighted) {
    EMBER_CHECK(per_sample_weights.dtype() == weight.dtype(),
                "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 "
                "'per_sample_weights'; but type ",
                legacy_type(weight.dtype(), weight.device()), " does not equal ",
                legacy_type(per_sample_weights.dtype(), per_sample_weights.device()),
                " (while checking arguments for embedding_bag)");
  }
  EMBER_CHECK(!last_offset || offsets.numel() > 0, "include_last_offset: number of offset should be at least 1");
  if (last_offset && !starts.empty()) starts.pop_back();
  for (size_t b = 1; b < starts.size(); ++b) {
    EMBER_CHECK(starts[b] >= starts[b - 1], "embedding_bag: offsets must be non-decreasing, but offsets[", b,
                "] = ", starts[b], " is less than offsets[", b - 1, "] = ", starts[b - 1]);
  }
  Tensor bounds;
  if (input.dim() == 2) {
    bounds = arange(0, input.size(0) * input.size(1) + 1, input.size(1), long_options);
  } else {
    // The last bag runs to the end of the input, include_last_offset's last offset not read, as
    // PyTorch's CUDA kernels and its CPU kernels but for float32 (FBGEMM, which stops at it) do.
    const Tensor starts_of_bags = last_offset ? offsets.narrow(0, 0, offsets.size(0) - 1) : offsets;
    bounds = cat({starts_of_bags.to(device, kInt64), full({1}, Scalar(length), long_options)});
  }
  ember::detail::BagOptions options;
  options.reduction = how == Mode::Sum    ? ember::detail::BagReduction::Sum
                      : how == Mode::Mean ? ember::detail::BagReduction::Mean
                                          : ember::detail::BagReduction::Max;
  options.padding_idx = pad;
  options.scale_grad_by_freq = scale_grad_by_freq;
  return ember::detail::embedding_bag_reduce(weight, input.reshape({-1}).to(device, kInt64), bounds,
                                             weighted ? per_sample_weights.reshape({-1}) : Tensor(), options);
}

}  // namespace functional

EmbeddingBag::EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, std::optional<double> max_norm,
                           double norm_type, bool scale_grad_by_freq, std::string mode, bool sparse,
                           bool include_last_offset, std::optional<int64_t> padding_idx)
    : num_embeddings(num_embeddings),
      embedding_dim(embedding_dim),
      max_norm(max_norm),
      norm_type(norm_type),
      scale_grad_by_freq(scale_grad_by_freq),
      mode(std::move(mode)),
      sparse(sparse),
      include_last_offset(include_last_offset),
      padding_idx(padding_idx) {
  if (padding_idx) {
    EMBER_CHECK(*padding_idx < num_embeddings && *padding_idx >= -num_embeddings,
                "padding_idx must be within num_embeddings");
    if (*padding_idx < 0) this->padding_idx = num_embeddings + *padding_idx;
  }
  EMBER_CHECK(!sparse, "EmbeddingBag: sparse=True is not supported: ember has no sparse gradients");
  weight = register_parameter("weight", empty({num_embeddings, embedding_dim}));
  reset_parameters();
}

void EmbeddingBag::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor EmbeddingBag::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                                   per_sample_weights, include_last_offset, padding_idx);
}

}  // namespace ember::nn
