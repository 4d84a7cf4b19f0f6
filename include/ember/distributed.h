#pragma once
/// ember::distributed: collectives across the processes of a job started by mpirun, as
/// torch.distributed. CPU tensors travel through MPI, CUDA tensors through NCCL (when the build
/// has it); MPI also launches the processes and tells each its rank.
///
///   // mpirun -np 2 ./my_training
///   distributed::init();                       // rank and world size from mpirun
///   Tensor g = ...;
///   distributed::all_reduce(g, distributed::ReduceOp::Avg);   // the same g on every rank
///   distributed::finalize();
///
/// Every rank must call the same collectives, in the same order, with tensors of the same dtype
/// and (except all_gather's first dimension) the same shape. A collective that waits longer
/// than the timeout for the other ranks fails with an ember::Error naming the collective and
/// the ranks that did not arrive, instead of hanging; after that the process group is unusable
/// and the process should exit (mpirun then stops the others).
///
/// A process not started by an MPI launcher gets a world of one rank from init(): collectives
/// return their input unchanged, so the same program runs alone or under mpirun.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::distributed {

/// How all_reduce combines the ranks' tensors. Avg needs a floating-point tensor. On bool
/// tensors Sum is a logical or and Product a logical and, as in PyTorch.
enum class ReduceOp { Sum, Avg, Product, Min, Max };

struct InitOptions {
  /// How long a collective waits for the other ranks before failing. Zero: the
  /// EMBER_DIST_TIMEOUT environment variable (seconds), else 30 minutes, PyTorch's default.
  std::chrono::milliseconds timeout{0};
};

/// Whether this build of ember has MPI (and so can run under mpirun).
bool is_available();
/// Whether this process was started by an MPI launcher (mpirun/mpiexec of Open MPI, MPICH or
/// Intel MPI, or srun with PMI), judged from the environment the launcher sets.
bool launched_by_mpi();

/// Joins the job: initialises MPI when launched by mpirun (a world of one otherwise). Calling it
/// twice is an error, as is calling it under mpirun in a build without MPI.
void init(const InitOptions& options = {});
bool is_initialized();
/// Leaves the job (MPI_Finalize); every rank must call it. Collectives fail after it. Does
/// nothing when not initialised.
void finalize();

/// This process's rank in [0, world_size()), and the number of processes.
int rank();
int world_size();
/// This process's rank among those on its machine, and their number.
int local_rank();
int local_world_size();
/// The device this rank should train on: cuda:<local_rank mod device count> when CUDA is
/// usable, else the CPU.
Device default_device();

/// The current timeout of collectives, and a new one for later collectives.
std::chrono::milliseconds timeout();
void set_timeout(std::chrono::milliseconds timeout);

/// A collective in flight (async_op=True in PyTorch). Its tensor must be left alone until
/// wait() returns. Destroying a Work that has not completed waits for it.
class Work {
 public:
  Work();
  ~Work();
  Work(Work&&) noexcept;
  Work& operator=(Work&&) noexcept;

  /// Makes progress and says whether the collective has finished, without waiting.
  bool is_completed();
  /// Waits until it has finished; throws ember::Error after the timeout, naming the ranks that
  /// did not arrive. For CUDA tensors, returns once the work is queued on the current stream.
  void wait();

  struct State;
  explicit Work(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

/// Combines `tensor` across ranks, in place: afterwards every rank holds the result.
/// The tensor must be contiguous and not require grad.
void all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);
Work all_reduce_async(const Tensor& tensor, ReduceOp op = ReduceOp::Sum);

/// Copies rank `root`'s tensor into `tensor` on every other rank.
void broadcast(const Tensor& tensor, int root);

/// Every rank's `tensor`, in rank order. The tensors may differ in their first dimension
/// (uneven shards); everything else must match.
std::vector<Tensor> all_gather(const Tensor& tensor);

/// Returns on each rank once every rank has called it.
void barrier();

/// This process's place in the job, for messages: "rank 1 of 2 (1 of 2 on this machine)".
std::string describe();

}  // namespace ember::distributed
