// Tensor printing that reproduces PyTorch's repr() byte for byte (torch/_tensor_str.py, see
// the PyTorch behaviour spec section 3). libtorch's own operator<< prints a different
// format; ember follows the Python text because that is what users compare against.
//
// The work is split so that everything after "read the elements" is independent of Tensor:
//   1. pick the elements that will be shown (all, or the edges of each summarised dimension),
//   2. build one formatter from exactly those elements (int_mode / sci_mode / width),
//   3. lay them out recursively (line wrapping, separators, "..." markers),
//   4. append the suffixes (device, size, dtype, grad_fn / requires_grad).
// Steps 2-4 also run on plain std::vectors through the ember::detail entry points below, which the
// tests call directly.
#include "ember/print.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "ember/tensor.h"
#include "io/print_internal.h"

namespace ember {

namespace {

std::mutex& options_mutex() {
  static std::mutex mutex;
  return mutex;
}

PrintOptions& options_storage() {
  static PrintOptions options;
  return options;
}

// Printing works on a copy so that a concurrent set_printoptions cannot change the options halfway
// through one tensor.
PrintOptions options_snapshot() {
  std::lock_guard<std::mutex> lock(options_mutex());
  return options_storage();
}

enum class ElementKind { Floating, Integral, Boolean };

/// The elements that appear on screen, in row-major order over `shown_sizes`. A dimension that is
/// summarised keeps its first and last `edgeitems` indices and is marked in `cut`.
struct ShownElements {
  ElementKind kind = ElementKind::Floating;
  std::vector<double> reals;      // Floating
  std::vector<int64_t> integers;  // Integral and Boolean (0 / 1)
  std::vector<int64_t> shown_sizes;
  std::vector<bool> cut;
  int edgeitems = 0;
};

/// For each dimension, the indices that will be displayed. Every dimension is cut on its own: only
/// when summarising and its size exceeds 2 * edgeitems (get_summarized_data).
std::vector<std::vector<int64_t>> kept_indices(IntList sizes, bool summarize, int edgeitems, ShownElements& shown) {
  std::vector<std::vector<int64_t>> kept(sizes.size());
  shown.shown_sizes.assign(sizes.size(), 0);
  shown.cut.assign(sizes.size(), false);
  shown.edgeitems = edgeitems;
  for (size_t d = 0; d < sizes.size(); ++d) {
    const int64_t size = sizes[d];
    const bool cut = summarize && size > 2 * static_cast<int64_t>(edgeitems);
    if (cut) {
      for (int64_t i = 0; i < edgeitems; ++i) kept[d].push_back(i);
      for (int64_t i = size - edgeitems; i < size; ++i) kept[d].push_back(i);
    } else {
      for (int64_t i = 0; i < size; ++i) kept[d].push_back(i);
    }
    shown.cut[d] = cut;
    shown.shown_sizes[d] = static_cast<int64_t>(kept[d].size());
  }
  return kept;
}

/// Calls visit(offset) for each kept multi-index in row-major order; offset = sum(index * stride).
template <typename Visit>
void for_each_kept(const std::vector<std::vector<int64_t>>& kept, IntList strides, Visit&& visit) {
  for (const auto& indices : kept) {
    if (indices.empty()) return;
  }
  const size_t ndim = kept.size();
  std::vector<size_t> position(ndim, 0);
  while (true) {
    int64_t offset = 0;
    for (size_t d = 0; d < ndim; ++d) offset += kept[d][position[d]] * strides[d];
    visit(offset);
    size_t d = ndim;
    while (d > 0) {
      --d;
      if (++position[d] < kept[d].size()) break;
      position[d] = 0;
      if (d == 0) return;
    }
    if (ndim == 0) return;
  }
}

std::vector<int64_t> contiguous_strides(IntList sizes) {
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d > 1; --d) strides[d - 2] = strides[d - 1] * std::max<int64_t>(sizes[d - 1], 1);
  return strides;
}

/// Python's _Formatter: one instance decides the notation and the column width for a whole tensor.
class ElementFormatter {
 public:
  ElementFormatter(const ShownElements& shown, const PrintOptions& options)
      : kind_(shown.kind), precision_(options.precision) {
    if (kind_ == ElementKind::Floating) {
      measure_floating(shown.reals, options);
    } else {
      for (size_t i = 0; i < shown.integers.size(); ++i) max_width_ = std::max(max_width_, raw_text(shown, i).size());
    }
  }

  size_t width() const { return max_width_; }

  std::string format(const ShownElements& shown, size_t i) const {
    std::string text = raw_text(shown, i);
    if (text.size() < max_width_) text.insert(0, max_width_ - text.size(), ' ');
    return text;
  }

 private:
  void measure_floating(const std::vector<double>& values, const PrintOptions& options) {
    // Only finite non-zero values decide anything: zeros, nan and inf never widen the column.
    double amin = std::numeric_limits<double>::infinity();
    double amax = 0.0;
    bool any = false;
    for (double v : values) {
      if (!std::isfinite(v) || v == 0.0) continue;
      any = true;
      if (v != std::ceil(v)) int_mode_ = false;
      amin = std::min(amin, std::fabs(v));
      amax = std::max(amax, std::fabs(v));
    }
    // Like PyTorch, an all-zero / all-nonfinite tensor keeps int style even under sci_mode=True.
    if (!any) return;
    // The forced mode is applied before measuring (newest PyTorch), so the widths match the notation.
    sci_mode_ =
        options.sci_mode.has_value() ? *options.sci_mode : (amax / amin > 1000.0 || amax > 1.0e8 || amin < 1.0e-4);
    for (double v : values) {
      if (!std::isfinite(v) || v == 0.0) continue;
      max_width_ = std::max(max_width_, floating_text(v).size());
    }
  }

  std::string floating_text(double v) const {
    if (sci_mode_) return detail::python_scientific(v, precision_);
    if (int_mode_) {
      std::string text = detail::python_fixed(v, 0);
      // The trailing '.' marks a floating tensor; nan and inf have no digits to mark.
      if (std::isfinite(v)) text += '.';
      return text;
    }
    return detail::python_fixed(v, precision_);
  }

  std::string raw_text(const ShownElements& shown, size_t i) const {
    switch (kind_) {
      case ElementKind::Floating:
        return floating_text(shown.reals[i]);
      case ElementKind::Integral:
        return std::to_string(shown.integers[i]);
      case ElementKind::Boolean:
        return shown.integers[i] != 0 ? "True" : "False";
    }
    return {};
  }

  ElementKind kind_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  size_t max_width_ = 1;
};

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += separator;
    out += parts[i];
  }
  return out;
}

/// _tensor_str_with_formatter / _vector_str over the shown elements.
class Layout {
 public:
  Layout(const ShownElements& shown, const ElementFormatter& formatter, const PrintOptions& options)
      : shown_(shown), formatter_(formatter), linewidth_(options.linewidth) {
    const size_t ndim = shown.shown_sizes.size();
    inner_counts_.assign(ndim, 1);
    for (size_t d = ndim; d > 1; --d) inner_counts_[d - 2] = inner_counts_[d - 1] * shown.shown_sizes[d - 1];
  }

  std::string render(size_t level, int64_t base, int indent) const {
    const size_t ndim = shown_.shown_sizes.size();
    if (ndim == 0) return formatter_.format(shown_, 0);
    if (level + 1 == ndim) return render_vector(level, base, indent);

    std::vector<std::string> parts;
    const int64_t count = shown_.shown_sizes[level];
    for (int64_t i = 0; i <= count; ++i) {
      if (shown_.cut[level] && i == shown_.edgeitems) parts.emplace_back("...");
      if (i < count) parts.push_back(render(level + 1, base + i * inner_counts_[level], indent + 1));
    }
    // One newline per remaining dimension minus one: rows touch, 2-D blocks get a blank line, etc.
    std::string separator = ",";
    separator.append(ndim - level - 1, '\n').append(static_cast<size_t>(indent + 1), ' ');
    return bracketed(join(parts, separator));
  }

 private:
  std::string render_vector(size_t level, int64_t base, int indent) const {
    std::vector<std::string> items;
    const int64_t count = shown_.shown_sizes[level];
    for (int64_t i = 0; i <= count; ++i) {
      if (shown_.cut[level] && i == shown_.edgeitems) items.emplace_back(shown_.edgeitems == 0 ? "..." : " ...");
      if (i < count) items.push_back(formatter_.format(shown_, static_cast<size_t>(base + i)));
    }
    // Only the items are fitted; the closing brackets and suffixes may run past linewidth.
    const int64_t element_length = static_cast<int64_t>(formatter_.width()) + 2;
    const int64_t room = static_cast<int64_t>(linewidth_) - indent;
    const int64_t floor_div = room >= 0 ? room / element_length : -((-room + element_length - 1) / element_length);
    const size_t per_line = static_cast<size_t>(std::max<int64_t>(1, floor_div));

    std::vector<std::string> lines;
    for (size_t start = 0; start < items.size(); start += per_line) {
      const size_t end = std::min(items.size(), start + per_line);
      lines.push_back(join(std::vector<std::string>(items.begin() + static_cast<std::ptrdiff_t>(start),
                                                    items.begin() + static_cast<std::ptrdiff_t>(end)),
                           ", "));
    }
    std::string separator = ",\n";
    separator.append(static_cast<size_t>(indent + 1), ' ');
    return bracketed(join(lines, separator));
  }

  // "[" + s + "]", written out because GCC 12 warns (-Wrestrict) on "[" + std::string&&.
  static std::string bracketed(const std::string& s) {
    std::string out;
    out.reserve(s.size() + 2);
    out.append(1, '[').append(s).append(1, ']');
    return out;
  }

  const ShownElements& shown_;
  const ElementFormatter& formatter_;
  int linewidth_;
  std::vector<int64_t> inner_counts_;
};

/// _tensor_str for a non-empty tensor whose shown elements are already gathered.
std::string render_shown(const ShownElements& shown, const PrintOptions& options, int indent) {
  const ElementFormatter formatter(shown, options);
  return Layout(shown, formatter, options).render(0, 0, indent);
}

int64_t product(IntList sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

template <typename T>
void gather_typed(const Tensor& cpu, const std::vector<std::vector<int64_t>>& kept, ShownElements& shown) {
  const T* data = cpu.data_ptr<T>();
  const IntList strides = cpu.strides();
  if constexpr (std::is_same_v<T, bool>) {
    shown.kind = ElementKind::Boolean;
    for_each_kept(kept, strides, [&](int64_t offset) { shown.integers.push_back(data[offset] ? 1 : 0); });
  } else if constexpr (std::is_integral_v<T>) {
    shown.kind = ElementKind::Integral;
    for_each_kept(kept, strides, [&](int64_t offset) { shown.integers.push_back(static_cast<int64_t>(data[offset])); });
  } else {
    // Half and BFloat16 widen exactly through float; float widens exactly to double.
    shown.kind = ElementKind::Floating;
    for_each_kept(kept, strides, [&](int64_t offset) {
      if constexpr (std::is_same_v<T, double>) {
        shown.reals.push_back(data[offset]);
      } else {
        shown.reals.push_back(static_cast<double>(static_cast<float>(data[offset])));
      }
    });
  }
}

/// Reads only the elements that will be printed, straight from the (CPU) storage through the strides,
/// so printing a huge summarised tensor never copies or converts all of it.
ShownElements gather_from_tensor(const Tensor& cpu, bool summarize, int edgeitems) {
  ShownElements shown;
  const auto kept = kept_indices(cpu.sizes(), summarize, edgeitems, shown);
  switch (cpu.dtype()) {
    case Dtype::Bool:
      gather_typed<bool>(cpu, kept, shown);
      break;
    case Dtype::UInt8:
      gather_typed<uint8_t>(cpu, kept, shown);
      break;
    case Dtype::Int8:
      gather_typed<int8_t>(cpu, kept, shown);
      break;
    case Dtype::Int16:
      gather_typed<int16_t>(cpu, kept, shown);
      break;
    case Dtype::Int32:
      gather_typed<int32_t>(cpu, kept, shown);
      break;
    case Dtype::Int64:
      gather_typed<int64_t>(cpu, kept, shown);
      break;
    case Dtype::Float16:
      gather_typed<Half>(cpu, kept, shown);
      break;
    case Dtype::BFloat16:
      gather_typed<BFloat16>(cpu, kept, shown);
      break;
    case Dtype::Float32:
      gather_typed<float>(cpu, kept, shown);
      break;
    case Dtype::Float64:
      gather_typed<double>(cpu, kept, shown);
      break;
  }
  return shown;
}

/// Python's tuple text: "()", "(2,)", "(0, 3)".
std::string python_tuple(IntList sizes) {
  if (sizes.size() == 1) return "(" + std::to_string(sizes[0]) + ",)";
  std::string out = "(";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + ")";
}

std::string device_suffix(const Device& device) {
  // Tensors always live on an indexed device in PyTorch; an unindexed one is the first device.
  const int index = device.has_index() ? device.index() : 0;
  return "device='" + std::string(device_type_name(device.type())) + ":" + std::to_string(index) + "'";
}

void check_options(const PrintOptions& options) {
  EMBER_CHECK(options.precision >= 0, "set_printoptions: precision must be non-negative, got ", options.precision);
  EMBER_CHECK(options.edgeitems >= 0, "set_printoptions: edgeitems must be non-negative, got ", options.edgeitems);
}

std::string with_format(double value, std::chars_format format, int precision) {
  if (std::isnan(value)) return "nan";  // Python never prints a sign on nan, glibc does
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  // A double has at most 309 integer digits; sign, point and exponent need a few more.
  std::string buffer(static_cast<size_t>(precision) + 330, '\0');
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value, format, precision);
  EMBER_CHECK(result.ec == std::errc(), "tensor printing: could not format a number with precision ", precision);
  buffer.resize(static_cast<size_t>(result.ptr - buffer.data()));
  return buffer;
}

/// _tensor_str over row-major host values (doubles for floating kinds, int64 otherwise).
template <typename Value>
std::string render_flat(const std::vector<Value>& values, IntList sizes, ElementKind kind, const PrintOptions& options,
                        int indent) {
  const int64_t numel = product(sizes);
  EMBER_CHECK(static_cast<int64_t>(values.size()) == numel, "tensor printing: ", values.size(), " values for sizes ",
              detail::shape_str(sizes));
  if (numel == 0) return "[]";
  ShownElements shown;
  shown.kind = kind;
  const auto kept = kept_indices(sizes, numel > options.threshold, options.edgeitems, shown);
  auto& destination = [&]() -> std::vector<Value>& {
    if constexpr (std::is_same_v<Value, double>) {
      return shown.reals;
    } else {
      return shown.integers;
    }
  }();
  for_each_kept(kept, contiguous_strides(sizes),
                [&](int64_t offset) { destination.push_back(values[static_cast<size_t>(offset)]); });
  return render_shown(shown, options, indent);
}

}  // namespace

void set_printoptions(const PrintOptions& options) {
  check_options(options);
  std::lock_guard<std::mutex> lock(options_mutex());
  options_storage() = options;
}

// The reference stays valid and shows later changes; read it from one thread while nobody sets options.
const PrintOptions& get_printoptions() { return options_storage(); }

namespace detail {

// std::to_chars rounds from the exact binary value, ties to even, like Python's format().
std::string python_fixed(double value, int precision) {
  return with_format(value, std::chars_format::fixed, precision);
}

std::string python_scientific(double value, int precision) {
  return with_format(value, std::chars_format::scientific, precision);
}

std::string add_suffixes(const std::string& text, const std::vector<std::string>& suffixes, int indent, int linewidth) {
  std::string out = text;
  // PyTorch counts the characters after the last newline plus 2 (its len(s) - s.rfind('\n') + 1).
  const size_t newline = text.rfind('\n');
  int64_t last_line = static_cast<int64_t>(newline == std::string::npos ? text.size() : text.size() - newline - 1) + 2;
  for (const std::string& suffix : suffixes) {
    const int64_t length = static_cast<int64_t>(suffix.size());
    if (last_line + length + 2 > linewidth) {
      out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + suffix;
      last_line = indent + length;  // no +2 here, exactly as PyTorch does
    } else {
      out += ", " + suffix;
      last_line += length + 2;
    }
  }
  return out + ")";
}

std::vector<std::string> repr_suffixes(const Device& device, Dtype dtype, IntList sizes, const std::string& grad_fn,
                                       bool requires_grad) {
  std::vector<std::string> suffixes;
  // cpu is the default device type, so only accelerator tensors name their device.
  if (!device.is_cpu()) suffixes.push_back(device_suffix(device));
  const std::string dtype_suffix = "dtype=" + std::string(dtype_name(dtype));
  if (product(sizes) == 0) {
    if (sizes.size() != 1) suffixes.push_back("size=" + python_tuple(sizes));
    // Unlike the non-empty case, empty int64 and bool tensors do name their dtype.
    if (dtype != kFloat32) suffixes.push_back(dtype_suffix);
  } else if (dtype != kFloat32 && dtype != kInt64 && dtype != kBool) {
    suffixes.push_back(dtype_suffix);
  }
  if (!grad_fn.empty()) {
    suffixes.push_back("grad_fn=<" + grad_fn + ">");
  } else if (requires_grad) {
    suffixes.push_back("requires_grad=True");
  }
  return suffixes;
}

std::string render_floating(const std::vector<double>& values, IntList sizes, const PrintOptions& options, int indent) {
  return render_flat(values, sizes, ElementKind::Floating, options, indent);
}

std::string render_integral(const std::vector<int64_t>& values, IntList sizes, bool boolean,
                            const PrintOptions& options, int indent) {
  return render_flat(values, sizes, boolean ? ElementKind::Boolean : ElementKind::Integral, options, indent);
}

}  // namespace detail

std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  const PrintOptions options = options_snapshot();
  const std::string prefix = "tensor(";
  const int indent = static_cast<int>(prefix.size());
  std::string body = "[]";
  if (numel() > 0) {
    const Tensor cpu_tensor = is_cpu() ? *this : to(Device(DeviceType::CPU));
    const ShownElements shown = gather_from_tensor(cpu_tensor, numel() > options.threshold, options.edgeitems);
    body = render_shown(shown, options, indent);
  }
  const auto suffixes = detail::repr_suffixes(device(), dtype(), sizes(), grad_fn_name(), requires_grad());
  return detail::add_suffixes(prefix + body, suffixes, indent, options.linewidth);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace ember
