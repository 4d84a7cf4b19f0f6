#include "core/check.h"

#include <charconv>
#include <cmath>

#include "ember/tensor.h"

namespace ember::detail {

namespace {
thread_local const OpContext* g_current_op = nullptr;
}  // namespace

OpContext::OpContext(const char* op, std::initializer_list<Input> inputs) : op_(op) {
  if (g_current_op != nullptr) return;  // an op called by another op: the outer one is named
  for (const Input& input : inputs) {
    if (count_ < kMaxInputs) inputs_[count_++] = input;
  }
  g_current_op = this;
  outermost_ = true;
}

OpContext::~OpContext() {
  if (outermost_) g_current_op = nullptr;
}

std::string OpContext::describe_current() {
  const OpContext* c = g_current_op;
  if (c == nullptr) return "";
  std::string text = std::string("\n  in ") + c->op_ + "(";
  for (size_t i = 0; i < c->count_; ++i) {
    const auto& [name, tensor] = c->inputs_[i];
    if (i) text += ", ";
    text += std::string(name) + ": ";
    if (tensor == nullptr || !tensor->defined()) {
      text += "undefined";
      continue;
    }
    std::string_view dtype = dtype_name(tensor->dtype());
    if (dtype.starts_with("torch.")) dtype.remove_prefix(6);
    text += std::string(dtype) + " " + shape_str(tensor->sizes()) + " on " + tensor->device().str();
  }
  return text + ")";
}

std::string shape_str(IntList sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(sizes[i]);
  }
  return s + "]";
}

std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Python's repr: the shortest round-trip digits, scientific below 1e-4 and from 1e16 on.
  char buf[64];
  double magnitude = std::fabs(value);
  bool scientific = magnitude != 0 && (magnitude < 1e-4 || magnitude >= 1e16);
  auto result = std::to_chars(buf, buf + sizeof buf, value,
                              scientific ? std::chars_format::scientific : std::chars_format::fixed);
  std::string text(buf, result.ptr);
  if (!scientific && text.find('.') == std::string::npos) text += ".0";
  return text;
}

}  // namespace ember::detail
