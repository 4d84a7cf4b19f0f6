#pragma once
/// Switches that trade speed for reproducibility or precision, with PyTorch's names and defaults:
/// torch.use_deterministic_algorithms and torch.backends.cudnn.{deterministic, benchmark,
/// allow_tf32}. They are process-wide plain settings that exist in every build (with or without
/// CUDA), like their PyTorch counterparts, and are read by the backends at each call.
///
///   ember::use_deterministic_algorithms(true);     // same inputs, same bits, run after run
///   ember::backends::cudnn::set_benchmark(true);   // time cuDNN's algorithms once per shape
///
/// The matrix-product TF32 switch (torch.backends.cuda.matmul.allow_tf32, off by default) is
/// ember::cuda::set_allow_tf32 in ember/cuda.h; the convolution one below is on by default, as in
/// PyTorch.
#include <optional>

namespace ember {

/// Whether operations must use deterministic algorithms: algorithms that, given the same input on
/// the same software and hardware, always give the same output (torch.use_deterministic_algorithms).
/// When on, an operation with a deterministic implementation uses it (CUDA convolutions pick only
/// deterministic cuDNN algorithms; CUDA scatter_add, and so the backward of gather and
/// index_select, adds in a fixed order) and one without raises ember::Error naming it; with
/// `warn_only`, it warns instead and runs its non-deterministic implementation. CPU operations
/// are deterministic either way. Off by default.
void use_deterministic_algorithms(bool mode, bool warn_only = false);
bool are_deterministic_algorithms_enabled();
/// Whether use_deterministic_algorithms(true, warn_only = true) is in effect.
bool is_deterministic_algorithms_warn_only_enabled();

/// Sets use_deterministic_algorithms for a scope and restores the previous setting (mode and
/// warn_only) when it ends.
class DeterministicAlgorithmsGuard {
 public:
  explicit DeterministicAlgorithmsGuard(bool mode, bool warn_only = false);
  ~DeterministicAlgorithmsGuard();
  DeterministicAlgorithmsGuard(const DeterministicAlgorithmsGuard&) = delete;
  DeterministicAlgorithmsGuard& operator=(const DeterministicAlgorithmsGuard&) = delete;

 private:
  bool previous_mode_, previous_warn_only_;
};

namespace backends::cudnn {

/// torch.backends.cudnn.deterministic: CUDA convolutions use only algorithms cuDNN rates
/// deterministic, and fail, naming the convolution, when cuDNN has none for it. Off by default.
/// use_deterministic_algorithms(true) implies it for convolutions.
void set_deterministic(bool deterministic);
bool deterministic();

/// torch.backends.cudnn.benchmark: the first CUDA convolution of each shape times cuDNN's
/// algorithms on the real data and keeps the fastest for that shape, instead of taking the first
/// that cuDNN's heuristics rank. Faster for fixed shapes; the choice can differ between runs
/// (set deterministic too for reproducible results). Off by default.
void set_benchmark(bool benchmark);
bool benchmark();

/// torch.backends.cudnn.allow_tf32: whether float32 convolutions may use TF32 tensor cores
/// (Ampere and later; about 10 bits of mantissa in the products, float32 accumulation). On by
/// default, as in PyTorch; turn it off for float32 results to float32 rounding.
void set_allow_tf32(bool allow);
bool allow_tf32();

/// The values a FlagsGuard sets; a field left empty keeps its current value. (The explicit
/// initialisers let callers name only some fields under -Wextra.)
struct Flags {
  std::optional<bool> deterministic = std::nullopt;
  std::optional<bool> benchmark = std::nullopt;
  std::optional<bool> allow_tf32 = std::nullopt;
};

/// Sets cuDNN's switches for a scope and restores all three when it ends, as
/// `with torch.backends.cudnn.flags(...)`:
///   { ember::backends::cudnn::FlagsGuard exact({.allow_tf32 = false}); ... }
class FlagsGuard {
 public:
  explicit FlagsGuard(const Flags& flags);
  ~FlagsGuard();
  FlagsGuard(const FlagsGuard&) = delete;
  FlagsGuard& operator=(const FlagsGuard&) = delete;

 private:
  bool previous_deterministic_, previous_benchmark_, previous_allow_tf32_;
};

}  // namespace backends::cudnn
}  // namespace ember
