// The NCCL transport in a build without it (no CUDA, no NCCL, or no MPI to exchange NCCL's
// unique id): collectives on CUDA tensors are refused by distributed.cpp before they get here.
#if !defined(EMBER_HAVE_NCCL)
#include "core/check.h"
#include "distributed/transport.h"

namespace ember::distributed::detail {

namespace {
[[noreturn]] void unavailable() {
  ember::detail::fail("distributed: this build of ember has no NCCL, so collectives on cuda tensors are not available");
}
}  // namespace

bool nccl_built() { return false; }
std::string nccl_failure() { return {}; }
std::unique_ptr<Work::State> nccl_all_reduce(const Tensor&, ReduceOp, const Membership&) { unavailable(); }
std::unique_ptr<Work::State> nccl_broadcast(const Tensor&, int, const Membership&) { unavailable(); }
std::unique_ptr<Work::State> nccl_all_gather(const Tensor&, const Tensor&, const Membership&) { unavailable(); }
void nccl_finalize() {}

}  // namespace ember::distributed::detail
#endif  // !EMBER_HAVE_NCCL
