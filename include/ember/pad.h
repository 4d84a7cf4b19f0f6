#pragma once
/// Padding: torch.nn.functional.pad (src/ops/padding.cpp). nn::functional::pad and the padding
/// layers (ember/nn/padding.h) call it.
#include <optional>
#include <string_view>

#include "ember/tensor.h"

namespace ember {

/// As torch.nn.functional.pad: `pad` holds (left, right) pairs starting from the LAST dimension,
/// so {1, 2} pads the last dimension with 1 before and 2 after, {1, 2, 3, 4} also the one before
/// it with 3 and 4. Modes:
///  - "constant": fills with `value` (0 by default), for any number of dimensions up to all of
///    them; a negative pad crops instead;
///  - "reflect": mirrors the input without repeating the edge (each pad must be smaller than the
///    dimension it pads);
///  - "replicate": repeats the edge element;
///  - "circular": wraps around (each pad at most the dimension's size; a negative pad crops
///    first and the rest wraps around what is left).
/// The last three pad the last 1, 2 or 3 dimensions of a tensor with one or two more
/// dimensions (batch and channels, or channels only) and take no `value` (0 is accepted).
/// Negative reflect/replicate pads cut the window of the padded signal short, as PyTorch's kernels
/// do. The result is a new tensor (never a view), differentiable with respect to `input`.
Tensor pad(const Tensor& input, IntList pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);

}  // namespace ember
