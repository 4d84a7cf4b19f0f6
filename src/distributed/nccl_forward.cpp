// The NCCL transport's entry points (distributed/transport.h): collectives on CUDA tensors are
// carried by the NCCL transport (src/distributed/nccl/, compiled into libember_cuda.so), reached
// through its runtime interface (nccl/nccl_runtime.h). A build or a machine without it has no
// NCCL, and distributed.cpp refuses collectives on CUDA tensors before they get here.
#include "backend/cuda_runtime.h"
#include "core/check.h"
#include "distributed/nccl/nccl_runtime.h"
#include "distributed/transport.h"

namespace ember::distributed::detail {

namespace {
/// The transport in the loaded CUDA backend, or nullptr: no backend, or one built without NCCL.
NcclRuntime* find_nccl_runtime() noexcept {
  static NcclRuntime* const runtime = [] {
    using Entry = NcclRuntime* (*)(int);
    auto entry = reinterpret_cast<Entry>(cuda_plugin_symbol(kNcclRuntimeEntry));
    return entry != nullptr ? entry(kNcclRuntimeAbi) : nullptr;
  }();
  return runtime;
}

NcclRuntime& nccl_runtime() {
  NcclRuntime* rt = find_nccl_runtime();
  if (rt == nullptr) {
    ember::detail::fail(
        "distributed: this build of ember has no NCCL, so collectives on cuda tensors are not available");
  }
  return *rt;
}
}  // namespace

bool nccl_built() { return find_nccl_runtime() != nullptr; }

std::string nccl_failure() { return nccl_built() ? find_nccl_runtime()->failure() : std::string(); }

std::unique_ptr<Work::State> nccl_all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world) {
  return nccl_runtime().all_reduce(tensor, op, world);
}

std::unique_ptr<Work::State> nccl_broadcast(const Tensor& tensor, int root, const Membership& world) {
  return nccl_runtime().broadcast(tensor, root, world);
}

std::unique_ptr<Work::State> nccl_all_gather(const Tensor& input, const Tensor& output, const Membership& world) {
  return nccl_runtime().all_gather(input, output, world);
}

void nccl_finalize() {
  if (NcclRuntime* rt = find_nccl_runtime()) rt->finalize();
}

}  // namespace ember::distributed::detail
