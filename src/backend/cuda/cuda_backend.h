#pragma once
// The CUDA backend. Its kernels are implemented one op family per file in this folder, named as
// in entry_points.def and as the CPU backend's files (tools/check-backend-files.py):
//   cuda_backend.cpp  memory, host and peer copies         copy.cu        copy, fill
//   unary.cu          unary ops, clamp                     binary.cu      binary ops, add_scaled, where
//   reduce.cu         reductions (CUB block reductions)    softmax.cu     softmax, log_softmax
//   cross_entropy.cu  log_softmax + nll_loss fused, both ways
//   matmul.cpp        matrix products (cuBLAS)             indexing.cu    index_select, gather, scatter_add
//   conv.cpp          2-D convolution (cuDNN)              pool.cu        2-D max/average pooling
//   random.cu         the Philox generator, randperm (CUB radix sort)
//   optim.cu          fused optimizer updates (SGD, Adam/AdamW, Adadelta, RMSprop), one parameter or many
//                     per launch (multi_tensor_plan.h)
//   finite.cu         all_finite (the trainer's per-step check, finite_plan.h)
//   rnn.cu            the LSTM and GRU cells' updates, forward and backward
// Shared plumbing: runtime.h (checked calls, devices, streams, library handles), launch.h (grid
// arithmetic, host-tested), caching_allocator.h (the memory pool, host-tested).
//
// Every entry point runs on the device that holds its operands (TensorView::device_index) and
// queues its work on that device's current stream; none waits for the GPU except the copies to
// the host, which must. A copy between two devices runs on the source's current stream, ordered
// with the destination's by events (copy_between_devices).
#include "backend/backend.h"

namespace ember::cuda_impl {

class CudaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const noexcept override;
  void* allocate(size_t nbytes, int device_index) override;
  void deallocate(void* ptr, size_t nbytes, int device_index) noexcept override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override;

  // The op families' kernels (entry_points.def), one family per file in this folder.
#define EMBER_BACKEND_ENTRY(family, name, params, args) void name params override;
#include "backend/entry_points.def"
#undef EMBER_BACKEND_ENTRY

  void* allocate_pinned(size_t nbytes) override;
  void free_pinned(void* ptr) noexcept override;
  void manual_seed(uint64_t seed) override;
  uint64_t initial_seed(int device_index) override;
  std::vector<uint8_t> rng_state(int device_index) override;
  void set_rng_state(int device_index, std::span<const uint8_t> state) override;
};

/// The process-wide CUDA backend (registered in src/backend/registry.cpp when CUDA is built).
CudaBackend& cuda_backend();

}  // namespace ember::cuda_impl
