#pragma once
// The device side of deferred out-of-range index reports (index_error.h), for the kernels that
// read indices: indexing.cu's and cross_entropy.cu's.
#include "backend/cuda/index_error.h"

namespace ember::cuda_impl {

struct DeviceCas {
  __device__ uint32_t operator()(uint32_t* word, uint32_t expected, uint32_t desired) const {
    return atomicCAS(word, expected, desired);
  }
};
struct PublishToHost {
  __device__ void operator()() const { __threadfence_system(); }
};

// The rare path, out of line (scalars only, so the callers' parameters stay where they are).
__device__ __noinline__ inline void record_bad_index(IndexErrorRecord* record, IndexOp op, int64_t value, int64_t dim,
                                                     int64_t size) {
  if (record == nullptr) return;  // no mapped memory on this device: ignored silently
  claim_index_error(record, op, value, dim, size, DeviceCas{}, PublishToHost{});
}

}  // namespace ember::cuda_impl
