#pragma once
// The pieces of tensor printing (src/io/print.cpp), exposed for its tests.
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/print.h"
#include "ember/small_vector.h"

namespace ember::detail {

/// Python's format(value, ".{precision}f") and ".{precision}e" (nan unsigned, -0 signed).
std::string python_fixed(double value, int precision);
std::string python_scientific(double value, int precision);
/// PyTorch's _add_suffixes: appends ", suffix" or wraps onto a new line at `indent`, then ")".
std::string add_suffixes(const std::string& text, const std::vector<std::string>& suffixes, int indent, int linewidth);
/// The suffixes of repr, in PyTorch's order: device, size, dtype, grad_fn / requires_grad.
std::vector<std::string> repr_suffixes(const Device& device, Dtype dtype, IntList sizes, const std::string& grad_fn,
                                       bool requires_grad);
/// The body of repr for row-major floating or integral values of the given sizes.
std::string render_floating(const std::vector<double>& values, IntList sizes, const PrintOptions& options, int indent);
std::string render_integral(const std::vector<int64_t>& values, IntList sizes, bool boolean,
                            const PrintOptions& options, int indent);

}  // namespace ember::detail
