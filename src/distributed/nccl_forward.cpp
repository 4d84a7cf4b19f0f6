// The NCCL transport's entry points (distributed/transport.h): collectives on CUDA tensors are
// carried by the CUDA backend (src/backend/cuda/nccl_transport.cpp, inside libember_cuda.so),
// reached through its runtime interface. A build or a machine without it has no NCCL, and
// distributed.cpp refuses collectives on CUDA tensors before they get here.
#include "backend/cuda_runtime.h"
#include "core/check.h"
#include "distributed/transport.h"

namespace ember::distributed::detail {

namespace {
CudaRuntime& nccl_runtime() {
  CudaRuntime* rt = cuda_runtime();
  if (rt == nullptr || !rt->nccl_built()) {
    ember::detail::fail(
        "distributed: this build of ember has no NCCL, so collectives on cuda tensors are not available");
  }
  return *rt;
}
}  // namespace

bool nccl_built() {
  CudaRuntime* rt = cuda_runtime();
  return rt != nullptr && rt->nccl_built();
}

std::string nccl_failure() { return nccl_built() ? cuda_runtime()->nccl_failure() : std::string(); }

std::unique_ptr<Work::State> nccl_all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world) {
  return nccl_runtime().nccl_all_reduce(tensor, op, world);
}

std::unique_ptr<Work::State> nccl_broadcast(const Tensor& tensor, int root, const Membership& world) {
  return nccl_runtime().nccl_broadcast(tensor, root, world);
}

std::unique_ptr<Work::State> nccl_all_gather(const Tensor& input, const Tensor& output, const Membership& world) {
  return nccl_runtime().nccl_all_gather(input, output, world);
}

void nccl_finalize() {
  if (nccl_built()) cuda_runtime()->nccl_finalize();
}

}  // namespace ember::distributed::detail
