#pragma once
// What the fuzz targets share. Each target is a plain function that takes one input, lets an
// ember::Error from the reader through as the expected answer to bad input, and checks what the
// reader accepted. Anything else leaving the function is a finding: a CheckFailed (an accepted
// input whose result is wrong), another exception, or a crash or sanitizer report. libFuzzer
// calls the function through the entry point EMBER_FUZZ_ENTRY defines; the replay test in
// tests/fuzz/ calls it directly on every committed input.
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::fuzz {

/// An input the reader accepted produced a wrong result. Not an ember::Error, so it escapes.
class CheckFailed : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

inline void expect(bool ok, const std::string& what) {
  if (!ok) throw CheckFailed("fuzz check failed: " + what);
}

/// Runs `checks` on an accepted input: an ember::Error there is a finding too, so it becomes a
/// CheckFailed.
template <typename Checks>
void accepted(const char* what, Checks&& checks) {
  try {
    checks();
  } catch (const Error& e) {
    throw CheckFailed(std::string("fuzz check failed: ") + what + " threw ember::Error: " + e.what());
  }
}

/// Reads every byte of a tensor a reader produced and checks that it is a well-formed,
/// contiguous CPU tensor; returns a checksum so the reads cannot be optimised away.
inline uint64_t touch(const Tensor& t) {
  expect(t.defined(), "a reader returned an undefined tensor");
  expect(t.is_cpu() && t.is_contiguous(), "a reader returned a non-contiguous or non-CPU tensor");
  int64_t numel = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    expect(t.size(d) >= 0, "a negative size");
    expect(!__builtin_mul_overflow(numel, t.size(d), &numel), "the sizes overflow int64_t");
  }
  expect(numel == t.numel(), "numel() is not the product of the sizes");
  const auto* p = static_cast<const unsigned char*>(t.data_ptr());
  uint64_t sum = 0;
  for (size_t i = 0; i < t.nbytes(); ++i) sum = sum * 31 + p[i];
  return sum;
}

/// True when two tensors have the same dtype, sizes and bytes.
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.dim() != b.dim()) return false;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (a.size(d) != b.size(d)) return false;
  return a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

// The targets (fuzz/fuzz_<name>.cpp).
void safetensors_one_input(std::span<const uint8_t> bytes);
void checkpoint_one_input(std::span<const uint8_t> bytes);
void idx_one_input(std::span<const uint8_t> bytes);
void device_one_input(std::span<const uint8_t> bytes);
void npy_one_input(std::span<const uint8_t> bytes);
void torch_load_one_input(std::span<const uint8_t> bytes);

}  // namespace ember::fuzz

#ifdef EMBER_LIBFUZZER
#define EMBER_FUZZ_ENTRY(function)                                          \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    function(std::span<const uint8_t>(data, size));                         \
    return 0;                                                               \
  }
#else
#define EMBER_FUZZ_ENTRY(function)
#endif
