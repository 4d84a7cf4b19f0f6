#pragma once
/// A vector of int64_t with inline room for the common case (tensor sizes and strides),
/// so that creating a tensor of up to six dimensions never touches the heap for its shape.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <array>
#include <span>
#include <vector>

namespace ember {

/// A non-owning list of int64 (sizes, strides, dims): what public functions take. Built from a
/// braced list ({2, 3}), a std::vector, Dims, or a pointer and a length. Like std::span, it must
/// not outlive what it views; a braced list lives until the end of the full expression.
class IntList {
 public:
  constexpr IntList() = default;
  constexpr IntList(const int64_t* data, size_t size) : data_(data), size_(size) {}
// Viewing a braced list is the point of this constructor (as with c10::ArrayRef); GCC's lifetime
// warning assumes the view is stored.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntList(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}  // NOLINT
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  IntList(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  constexpr IntList(std::span<const int64_t> s) : data_(s.data()), size_(s.size()) {}  // NOLINT
  template <size_t N>
  constexpr IntList(const int64_t (&a)[N]) : data_(a), size_(N) {}  // NOLINT
  template <size_t N>
  constexpr IntList(const std::array<int64_t, N>& a) : data_(a.data()), size_(N) {}  // NOLINT

  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  constexpr int64_t front() const { return data_[0]; }
  constexpr int64_t back() const { return data_[size_ - 1]; }
  constexpr IntList first(size_t n) const { return {data_, n}; }
  constexpr IntList last(size_t n) const { return {data_ + size_ - n, n}; }
  constexpr IntList subspan(size_t offset, size_t n) const { return {data_ + offset, n}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

class Dims {
 public:
  static constexpr size_t kInline = 6;

  Dims() = default;
  explicit Dims(size_t n, int64_t value = 0) { resize(n, value); }
  Dims(std::initializer_list<int64_t> init) { assign(init.begin(), init.size()); }
  Dims(IntList s) { assign(s.data(), s.size()); }  // NOLINT: implicit by design
  Dims(const Dims& o) { assign(o.data(), o.size()); }
  Dims(Dims&& o) noexcept { move_from(o); }
  Dims& operator=(const Dims& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  Dims& operator=(Dims&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~Dims() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t back() const { return data()[size_ - 1]; }
  operator IntList() const { return {data(), size_}; }  // NOLINT

  void resize(size_t n, int64_t value = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }
  void push_back(int64_t v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  void insert(size_t pos, int64_t v) {
    reserve(size_ + 1);
    int64_t* d = data();
    std::memmove(d + pos + 1, d + pos, (size_ - pos) * sizeof(int64_t));
    d[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    int64_t* d = data();
    std::memmove(d + pos, d + pos + 1, (size_ - pos - 1) * sizeof(int64_t));
    --size_;
  }
  void clear() { size_ = 0; }

  friend bool operator==(const Dims& a, const Dims& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void reserve(size_t n) {
    if (n <= capacity()) return;
    size_t cap = std::max(n, 2 * capacity());
    auto* p = new int64_t[cap];
    std::memcpy(p, data(), size_ * sizeof(int64_t));
    delete[] heap_;
    heap_ = p;
    heap_cap_ = cap;
  }
  size_t capacity() const { return heap_ ? heap_cap_ : kInline; }
  void assign(const int64_t* p, size_t n) {
    size_ = 0;
    reserve(n);
    // An empty IntList may carry a null pointer, which memcpy must not be given even for 0 bytes.
    if (n != 0) std::memcpy(data(), p, n * sizeof(int64_t));
    size_ = n;
  }
  void move_from(Dims& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      heap_cap_ = o.heap_cap_;
      o.heap_ = nullptr;
    } else {
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }
  void release() {
    delete[] heap_;
    heap_ = nullptr;
  }

  int64_t inline_[kInline];
  int64_t* heap_ = nullptr;
  size_t heap_cap_ = 0;
  size_t size_ = 0;
};

/// Element-wise equality of two size lists.
inline bool same_dims(IntList a, IntList b) { return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin()); }

}  // namespace ember
