#pragma once
/// Sizes as layer constructors and options structs take them, like libtorch's ExpandingArray:
/// one number for every dimension (`3`) or one per dimension (`{3, 5}`), so that
/// `nn::MaxPool2d(3, 2, 1)` and `nn::MaxPool2d({3, 3}, {2, 2}, {1, 1})` say the same thing.
/// They own their values (an options struct outlives the braced list it was built from).
/// detail::DesignatedOnly, the first member of every options struct, lives here too.
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ember/small_vector.h"

namespace ember::nn {

namespace detail {
/// Throws ember::Error "<what>: <name> must either be a single int, or a tuple of <d> ints".
[[noreturn]] void throw_size_count(const char* what, const char* name, size_t d);

/// The first member of every layer's options struct. A plain braced list cannot initialise it,
/// so `{2, 2}` never converts to the options (it stays a size for the positional constructor,
/// as in `nn::MaxPool2d({3, 3}, {2, 2})`), while designated initializers skip it. Options are
/// therefore written with designators only: `{.stride = 2, .padding = 1}`.
struct DesignatedOnly {
  constexpr DesignatedOnly() = default;
};
}  // namespace detail

/// D sizes, given as one value for all of them or as D values. A list of another length is
/// kept as given (`given()` says how many) and refused by `check`, which names the argument as
/// PyTorch's message does, so a wrong length is an ember::Error at construction, not a crash.
template <size_t D>
class ExpandingSize {
 public:
  ExpandingSize(int64_t all) : given_(1) { values_.fill(all); }  // NOLINT(google-explicit-constructor)
  ExpandingSize(std::initializer_list<int64_t> list) { assign(list.begin(), list.size()); }    // NOLINT
  ExpandingSize(const std::vector<int64_t>& values) { assign(values.data(), values.size()); }  // NOLINT
  ExpandingSize(IntList values) { assign(values.data(), values.size()); }                      // NOLINT

  int64_t operator[](size_t i) const { return values_[i]; }
  /// How many values were given: 1 (expanded to all D) or D when valid.
  size_t given() const { return given_; }
  bool valid() const { return given_ == 1 || given_ == D; }
  /// Throws "<what>: <name> must either be a single int, or a tuple of D ints" unless valid.
  const ExpandingSize& check(const char* what, const char* name) const {
    if (!valid()) detail::throw_size_count(what, name, D);
    return *this;
  }
  IntList list() const { return {values_.data(), D}; }
  operator IntList() const { return list(); }  // NOLINT(google-explicit-constructor)
  std::vector<int64_t> vec() const { return {values_.begin(), values_.end()}; }
  const int64_t* begin() const { return values_.data(); }
  const int64_t* end() const { return values_.data() + D; }
  friend bool operator==(const ExpandingSize& a, const ExpandingSize& b) { return a.values_ == b.values_; }

 private:
  void assign(const int64_t* data, size_t n) {
    given_ = n;
    values_.fill(n > 0 ? data[0] : 0);
    if (n == D)
      for (size_t i = 0; i < D; ++i) values_[i] = data[i];
  }

  std::array<int64_t, D> values_{};
  size_t given_ = 0;
};

/// A list of sizes of any length, given as one number (a list of one) or a braced list: what
/// LayerNorm's normalized_shape, Unflatten's sizes and Upsample's size take.
class SizeList {
 public:
  SizeList() = default;
  SizeList(int64_t one) : values_{one} {}                                // NOLINT
  SizeList(std::initializer_list<int64_t> list) : values_(list) {}       // NOLINT
  SizeList(std::vector<int64_t> values) : values_(std::move(values)) {}  // NOLINT
  SizeList(IntList values) : values_(values.begin(), values.end()) {}    // NOLINT

  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  int64_t operator[](size_t i) const { return values_[i]; }
  IntList list() const { return {values_.data(), values_.size()}; }
  operator IntList() const { return list(); }  // NOLINT(google-explicit-constructor)
  const std::vector<int64_t>& vec() const { return values_; }
  auto begin() const { return values_.begin(); }
  auto end() const { return values_.end(); }
  friend bool operator==(const SizeList& a, const SizeList& b) { return a.values_ == b.values_; }

 private:
  std::vector<int64_t> values_;
};

}  // namespace ember::nn
