#pragma once
// The NCCL transport (nccl_transport.cpp): collectives on CUDA tensors. libember reaches these
// through NcclRuntime (nccl_runtime.h, nccl_runtime_impl.cpp); distributed/transport.h
// documents each one under its detail::nccl_* name.
#include <memory>
#include <string>

#include "distributed/transport.h"

namespace ember::distributed::detail::nccl_transport {

std::string failure();
std::unique_ptr<Work::State> all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world);
std::unique_ptr<Work::State> broadcast(const Tensor& tensor, int root, const Membership& world);
std::unique_ptr<Work::State> all_gather(const Tensor& input, const Tensor& output, const Membership& world);
void finalize();

}  // namespace ember::distributed::detail::nccl_transport
