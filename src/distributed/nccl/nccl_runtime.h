#pragma once
// The seam between libember.so's distributed layer and the NCCL transport, which is compiled into
// the CUDA backend's library (libember_cuda.so) because it runs on CUDA streams and links NCCL.
// libember finds it through a second entry point of that library (cuda_plugin_symbol in
// backend/cuda_runtime.h), so the backend's own seam, CudaRuntime, knows nothing of collectives.
// distributed/transport.h documents each call under its detail::nccl_* name.
#include <memory>
#include <string>

#include "distributed/transport.h"

namespace ember::distributed::detail {

/// Bumped whenever this interface changes; libember refuses a transport built against another.
inline constexpr int kNcclRuntimeAbi = 1;
/// The entry point: `NcclRuntime* ember_nccl_runtime(int abi)`, null on a mismatch or in a
/// CUDA backend built without NCCL.
inline constexpr const char* kNcclRuntimeEntry = "ember_nccl_runtime";

class NcclRuntime {
 public:
  virtual ~NcclRuntime() = default;
  virtual std::string failure() = 0;
  virtual std::unique_ptr<Work::State> all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world) = 0;
  virtual std::unique_ptr<Work::State> broadcast(const Tensor& tensor, int root, const Membership& world) = 0;
  virtual std::unique_ptr<Work::State> all_gather(const Tensor& input, const Tensor& output,
                                                  const Membership& world) = 0;
  virtual void finalize() = 0;
};

}  // namespace ember::distributed::detail
