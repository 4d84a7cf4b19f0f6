// The NCCL transport's entry point, inside libember_cuda.so (nccl_runtime.h): the runtime object
// that forwards to nccl_transport.cpp, or null in a CUDA backend built without NCCL.
#include "distributed/nccl/nccl_runtime.h"

#if defined(EMBER_HAVE_NCCL)
#include "distributed/nccl/nccl_transport.h"

namespace ember::distributed::detail {
namespace {

namespace nccl = nccl_transport;

class Runtime final : public NcclRuntime {
 public:
  std::string failure() override { return nccl::failure(); }
  std::unique_ptr<Work::State> all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world) override {
    return nccl::all_reduce(tensor, op, world);
  }
  std::unique_ptr<Work::State> broadcast(const Tensor& tensor, int root, const Membership& world) override {
    return nccl::broadcast(tensor, root, world);
  }
  std::unique_ptr<Work::State> all_gather(const Tensor& input, const Tensor& output, const Membership& world) override {
    return nccl::all_gather(input, output, world);
  }
  void finalize() override { nccl::finalize(); }
};

}  // namespace
}  // namespace ember::distributed::detail
#endif

extern "C" __attribute__((visibility("default"))) ember::distributed::detail::NcclRuntime* ember_nccl_runtime(int abi) {
#if defined(EMBER_HAVE_NCCL)
  if (abi != ember::distributed::detail::kNcclRuntimeAbi) return nullptr;
  static ember::distributed::detail::Runtime runtime;
  return &runtime;
#else
  (void)abi;
  return nullptr;
#endif
}
