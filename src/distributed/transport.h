#pragma once
// What src/distributed/distributed.cpp (the public API: checks, sequence numbers, waiting,
// timeouts) asks of a transport. MPI carries CPU tensors and is the job's rendezvous
// (mpi_transport.cpp; mpi_none.cpp in builds without MPI); NCCL carries CUDA tensors
// (nccl/nccl_transport.cpp, compiled into the CUDA backend's library and reached through
// nccl_forward.cpp, which refuses where there is none).
//
// Every collective is started without waiting and returns a Work::State that the caller polls:
// a transport never blocks, so the caller alone decides how long to wait and what a timeout says.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ember/distributed.h"

namespace ember::distributed {

/// One collective in flight.
struct Work::State {
  virtual ~State() = default;
  /// Makes progress; true once the collective has finished (for CUDA: once it is queued after
  /// everything it waits for, so the current stream may use its result).
  virtual bool poll() = 0;
  /// After a timeout: gives up on the collective as far as the transport can.
  virtual void abandon() {}

  std::string what;  // "all_reduce #7 of float32 [1000] (sum)"
  uint64_t seq = 0;  // the job-wide number of this collective, the same on every rank
  bool finished = false;
  std::function<void()> then;      // runs once on the waiting thread after poll() returns true
  std::vector<Tensor> keep_alive;  // tensors the transport reads or writes until it finishes
};

namespace detail {

struct Membership {
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
};

// ---- how collectives' messages write things (shared by the transports) ----
/// "float32" rather than PyTorch's repr "torch.float32", as ember's op-context lines write it.
std::string_view short_dtype_name(Dtype d);
/// "sum", "avg", "product", "min", "max".
const char* reduce_op_name(ReduceOp op);
/// "2.5 s".
std::string seconds_text(std::chrono::milliseconds d);

// ---- MPI: the job, and CPU tensors ----
bool mpi_built();
Membership mpi_init();
void mpi_finalize();
/// `tensor`: contiguous, on the CPU; for all_reduce not float16/bfloat16 (MPI cannot add them:
/// the caller widens those), and Avg arrives as Sum.
std::unique_ptr<Work::State> mpi_all_reduce(const Tensor& tensor, ReduceOp op);
std::unique_ptr<Work::State> mpi_broadcast(const Tensor& tensor, int root);
/// Gathers `input` from every rank into `output`, rank r's `counts[r]` elements after those of
/// the ranks before it.
std::unique_ptr<Work::State> mpi_all_gather(const Tensor& input, const Tensor& output,
                                            const std::vector<int64_t>& counts);
std::unique_ptr<Work::State> mpi_barrier();
/// Answers other ranks' questions about where this rank is (see mpi_who_is_missing); called
/// while waiting. `seq` is the collective this rank is waiting for.
void mpi_serve_status(uint64_t seq);
/// After collective `seq` timed out here: asks every other rank which collective it is in,
/// waiting at most `grace` for answers, and describes those that have not reached `seq`.
std::string mpi_who_is_missing(uint64_t seq, std::chrono::milliseconds grace);

// ---- NCCL: CUDA tensors ----
bool nccl_built();
/// Why the NCCL transport's watchdog gave up on a collective ("" while all is well). NCCL
/// collectives are waited for by the GPU, not the host, so a hang or an asynchronous NCCL error
/// is found by a watchdog thread after the call that queued it has returned; every later
/// collective, on any device, reports it.
std::string nccl_failure();
/// The same as the mpi_ functions, for contiguous CUDA tensors, queued on the current stream.
std::unique_ptr<Work::State> nccl_all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world);
std::unique_ptr<Work::State> nccl_broadcast(const Tensor& tensor, int root, const Membership& world);
/// `output` holds size * input.numel() elements: every rank's input, padded to the same size.
std::unique_ptr<Work::State> nccl_all_gather(const Tensor& input, const Tensor& output, const Membership& world);
void nccl_finalize();

}  // namespace detail
}  // namespace ember::distributed
