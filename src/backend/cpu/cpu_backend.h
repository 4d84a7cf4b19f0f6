#pragma once
// The CPU backend. Its kernels are implemented one op family per file in this folder, named as
// in entry_points.def and as the CUDA backend's files (tools/check-backend-files.py):
//   cpu_backend.cpp  memory, host copies         copy.cpp           copy (any strides/dtypes), fill
//   unary.cpp        unary ops, clamp            binary.cpp         binary ops, add_scaled, where
//                    (both loop with elementwise_loop.h)
//   reduce.cpp       reductions                  softmax.cpp        softmax, log_softmax
//   cross_entropy.cpp  log_softmax + nll_loss fused (row statistics shared: softmax_rows.h)
//   matmul.cpp       matrix products (BLAS)      indexing.cpp       index_select, gather, scatter_add
//   conv.cpp         2-D convolution             pool.cpp           2-D max/average pooling
//   random.cpp       the default generator       optim.cpp          fused optimizer updates
//   finite.cpp       all_finite (the trainer's per-step check)
//   rnn.cpp          the LSTM and GRU cells' updates, forward and backward
#include "backend/backend.h"

namespace ember::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const noexcept override { return 1; }

  void* allocate(size_t nbytes, int device_index) override;
  void deallocate(void* ptr, size_t nbytes, int device_index) noexcept override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override;

  // The op families' kernels (entry_points.def), one family per file in this folder.
#define EMBER_BACKEND_ENTRY(family, name, params, args) void name params override;
#include "backend/entry_points.def"
#undef EMBER_BACKEND_ENTRY

  void manual_seed(uint64_t seed) override;
  /// The seed the CPU generator was last seeded with (random at start-up, as in PyTorch).
  uint64_t initial_seed(int device_index) override;
  std::vector<uint8_t> rng_state(int device_index) override;
  void set_rng_state(int device_index, std::span<const uint8_t> state) override;
};

/// The process-wide CPU backend.
CpuBackend& cpu_backend();

}  // namespace ember::cpu
