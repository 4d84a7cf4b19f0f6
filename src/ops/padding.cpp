// torch.nn.functional.pad, composed of differentiable ops rather than a kernel of its own:
// "constant" crops with narrow and joins blocks of the fill value with cat; "reflect",
// "replicate" and "circular" are one index_select per padded dimension, with an int64 index made
// on the input's device (each output position names the input position it copies), so the
// gradient is index_select's scatter-add, which accumulates where one input element feeds several
// outputs. The checks and their messages are PyTorch's (ATen's PadNd.cpp and Padding.h), in its
// order.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/pad.h"

namespace ember {

namespace {

enum class PadMode { Constant, Reflect, Replicate, Circular };

const char* mode_name(PadMode mode) {
  switch (mode) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "?";
}

PadMode parse_mode(std::string_view mode) {
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "constant") return PadMode::Constant;
  if (mode == "replicate") return PadMode::Replicate;
  if (mode == "circular") return PadMode::Circular;
  detail::fail("Unrecognised padding mode ", mode);
}

// fill_'s check that the value fits the tensor's type (c10::overflows): integers take neither
// NaN nor infinity, floating types take both; bool takes anything.
void check_fill_value(double value, Dtype dtype) {
  struct Range {
    const char* name;  // as c10 names the type
    double lowest, highest;
    bool floating;
  };
  Range r{};
  switch (dtype) {
    case Dtype::Bool:
    case Dtype::Float64:
      return;
    case Dtype::UInt8:
      r = {"uint8_t", 0, 255, false};
      break;
    case Dtype::Int8:
      r = {"int8_t", -128, 127, false};
      break;
    case Dtype::Int16:
      r = {"int16_t", -32768, 32767, false};
      break;
    case Dtype::Int32:
      r = {"int", std::numeric_limits<int32_t>::lowest(), std::numeric_limits<int32_t>::max(), false};
      break;
    case Dtype::Int64:
      r = {"int64_t", static_cast<double>(std::numeric_limits<int64_t>::lowest()),
           static_cast<double>(std::numeric_limits<int64_t>::max()), false};
      break;
    case Dtype::Float16:
      r = {"c10::Half", -65504.0, 65504.0, true};
      break;
    case Dtype::BFloat16:
      r = {"c10::BFloat16", -3.38953139e38, 3.38953139e38, true};
      break;
    case Dtype::Float32:
      r = {"float", std::numeric_limits<float>::lowest(), std::numeric_limits<float>::max(), true};
      break;
  }
  const bool special = std::isnan(value) || std::isinf(value);
  const bool fits = special ? r.floating : !(value < r.lowest || value > r.highest);
  EMBER_CHECK(fits, "value cannot be converted to type ", r.name, " without overflow");
}

// at::constant_pad_nd: crop the negative pads (narrow), then surround with the value.
Tensor constant_pad(const Tensor& input, IntList pad, double value) {
  const int64_t ndim = input.dim();
  const int64_t padded = static_cast<int64_t>(pad.size() / 2);
  Tensor cropped = input;
  bool all_non_positive = true;
  for (int64_t d = ndim - padded; d < ndim; ++d) {
    const int64_t before = pad[2 * (ndim - d - 1)], after = pad[2 * (ndim - d - 1) + 1];
    if (before < 0) {
      EMBER_CHECK(cropped.size(d) + before >= 0, "narrow(): length must be non-negative.");
      cropped = cropped.narrow(d, -before, cropped.size(d) + before);
    } else if (before != 0) {
      all_non_positive = false;
    }
    if (after < 0) {
      EMBER_CHECK(cropped.size(d) + after >= 0, "narrow(): length must be non-negative.");
      cropped = cropped.narrow(d, 0, cropped.size(d) + after);
    } else if (after != 0) {
      all_non_positive = false;
    }
  }
  // PyTorch returns a copy, never the input or a view of it.
  if (all_non_positive) return cropped.clone();
  check_fill_value(value, input.dtype());
  const TensorOptions options = TensorOptions().dtype(input.dtype()).device(input.device());
  Tensor out = cropped;
  for (int64_t d = ndim - padded; d < ndim; ++d) {
    const int64_t before = std::max<int64_t>(pad[2 * (ndim - d - 1)], 0);
    const int64_t after = std::max<int64_t>(pad[2 * (ndim - d - 1) + 1], 0);
    if (before == 0 && after == 0) continue;
    std::vector<Tensor> parts;
    std::vector<int64_t> block = out.sizes().vec();
    if (before > 0) {
      block[static_cast<size_t>(d)] = before;
      parts.push_back(full(block, value, options));
    }
    parts.push_back(out);
    if (after > 0) {
      block[static_cast<size_t>(d)] = after;
      parts.push_back(full(block, value, options));
    }
    out = cat(parts, d);
  }
  return out;
}

// Padding.h's pad_shape_check for reflection_pad{k}d and replication_pad{k}d.
void check_reflect_replicate(const Tensor& input, IntList pad, int64_t k, bool reflect) {
  const int64_t ndim = input.dim();
  const bool batch_mode = ndim == k + 2;
  bool valid = batch_mode || ndim == k + 1;
  for (int64_t d = batch_mode ? 1 : 0; d < ndim; ++d) valid = valid && input.size(d) != 0;
  EMBER_CHECK(valid, "Expected ", k + 1, "D or ", k + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
              detail::shape_str(input.sizes()));
  if (reflect) {
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = ndim - 1 - i;
      EMBER_CHECK(pad[2 * i] < input.size(d) && pad[2 * i + 1] < input.size(d), "Argument #", 4 + 2 * i,
                  ": Padding size should be less than the corresponding input dimension, but got: padding (",
                  pad[2 * i], ", ", pad[2 * i + 1], ") at dimension ", d, " of input ",
                  detail::shape_str(input.sizes()));
    }
  }
  std::vector<int64_t> in(static_cast<size_t>(k)), out(static_cast<size_t>(k));  // D, H, W order
  bool valid_output = true;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = ndim - 1 - i;
    const auto slot = static_cast<size_t>(k - 1 - i);
    in[slot] = input.size(d);
    out[slot] = input.size(d) + pad[2 * i] + pad[2 * i + 1];
    valid_output = valid_output && out[slot] >= 1;
  }
  if (k == 1) {
    EMBER_CHECK(valid_output, "input (W: ", in[0], ") is too small. Calculated output W: ", out[0]);
  } else if (k == 2) {
    EMBER_CHECK(valid_output, "Calculated output H: ", out[0], " W: ", out[1],
                " must be >= 1 in every dimension (input H: ", in[0], ", W: ", in[1], ")");
  } else {
    EMBER_CHECK(valid_output, "Calculated output D: ", out[0], " H: ", out[1], " W: ", out[2],
                " must be >= 1 in every dimension (input D: ", in[0], ", H: ", in[1], ", W: ", in[2], ")");
  }
  EMBER_CHECK(input.dtype() != kBool, "\"", reflect ? "reflection" : "replication", "_pad", k,
              "d\" not implemented for '", scalar_type_name(input.dtype()), "'");
}

// _pad_circular's checks. PyTorch crops the negative pads and then copies the wrapped parts from
// within its output; where a positive pad exceeds what is left after cropping, the source and
// destination of that copy overlap, which PyTorch refuses (when both are contiguous; otherwise
// it reads memory it has not written yet). ember refuses it always.
void check_circular(const Tensor& input, IntList pad, int64_t k) {
  const int64_t ndim = input.dim();
  for (int64_t i = 0; i < k; ++i) {
    const int64_t before = pad[2 * (k - i - 1)], after = pad[2 * (k - i - 1) + 1];
    const int64_t size = input.size(ndim - k + i);
    EMBER_CHECK(before <= size && after <= size, "Padding value causes wrapping around more than once.");
    EMBER_CHECK(size + before + after >= 0, "Negative padding value is resulting in an empty dimension");
  }
  for (int64_t i = 0; i < k; ++i) {
    const int64_t before = pad[2 * i], after = pad[2 * i + 1];
    const int64_t kept = input.size(ndim - 1 - i) - std::max<int64_t>(-before, 0) - std::max<int64_t>(-after, 0);
    EMBER_CHECK(before <= kept && after <= kept,
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                "single memory location. Please clone() the tensor before performing the operation.");
  }
}

// Reflect, replicate or circular: each padded dimension's output position j copies input
// position source(j), one index_select per dimension.
Tensor index_pad(const Tensor& input, IntList pad, PadMode mode) {
  const int64_t ndim = input.dim();
  const auto k = static_cast<int64_t>(pad.size() / 2);
  Tensor out = input;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t d = ndim - 1 - i;
    const int64_t before = pad[2 * i], after = pad[2 * i + 1];
    if (before == 0 && after == 0) continue;
    const int64_t n = input.size(d);
    std::vector<int64_t> index(static_cast<size_t>(std::max<int64_t>(n + before + after, 0)));
    // Circular: the positions left after cropping, [first, first + kept), wrapped around.
    const int64_t first = std::max<int64_t>(-before, 0);
    const int64_t kept = n - first - std::max<int64_t>(-after, 0);
    const int64_t lead = std::max<int64_t>(before, 0);
    for (size_t j = 0; j < index.size(); ++j) {
      const int64_t at = static_cast<int64_t>(j) - before;  // position in the unpadded input
      switch (mode) {
        case PadMode::Reflect:
          index[j] = at < 0 ? -at : (at > n - 1 ? 2 * (n - 1) - at : at);
          break;
        case PadMode::Replicate:
          index[j] = std::clamp<int64_t>(at, 0, n - 1);
          break;
        default: {
          const int64_t r = (static_cast<int64_t>(j) - lead) % kept;
          index[j] = first + (r < 0 ? r + kept : r);
          break;
        }
      }
    }
    out = index_select(out, d, tensor(index, TensorOptions().dtype(kInt64).device(input.device())));
  }
  // No padding at all: PyTorch's kernels still write a new tensor.
  return out.is_same(input) ? input.clone() : out;
}

}  // namespace

Tensor pad(const Tensor& input, IntList pad, std::string_view mode, std::optional<double> value) {
  detail::OpContext context("pad", {{"input", &input}});
  detail::check_defined(input, "pad");
  const PadMode m = parse_mode(mode);
  const int64_t ndim = input.dim();
  const auto length = static_cast<int64_t>(pad.size());
  EMBER_CHECK(length % 2 == 0, "Padding length must be divisible by 2");
  EMBER_CHECK(length <= ndim * 2,
              "Padding length should be less than or equal to two times the input dimension but got padding length ",
              length, " and input of dimension ", ndim);
  if (m == PadMode::Constant) return constant_pad(input, pad, value.value_or(0.0));
  EMBER_CHECK(!value.has_value() || *value == 0, "Padding mode \"", mode_name(m), "\" doesn't take in value argument");
  const int64_t k = length / 2;
  const bool supported = (k == 1 || k == 2 || k == 3) && (ndim == k + 1 || ndim == k + 2);
  EMBER_CHECK(supported, "Padding size ", length, " is not supported for ", ndim,
              "D input tensor.\nSupported combinations for non-constant padding:\n"
              "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
              "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
              "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)");
  if (m == PadMode::Circular) {
    check_circular(input, pad, k);
  } else {
    check_reflect_replicate(input, pad, k, m == PadMode::Reflect);
  }
  return index_pad(input, pad, m);
}

}  // namespace ember
