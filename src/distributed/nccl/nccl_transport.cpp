// The NCCL transport: collectives on CUDA tensors, queued on ember's current stream of the
// tensor's device like any other kernel, so that the host never waits for the GPU.
//
// Because the host does not wait, a collective that never completes (a rank died, or the ranks
// called different collectives) hangs the GPU stream where distributed.cpp's timeout cannot see
// it. So, as in PyTorch's ProcessGroupNCCL, every collective leaves a CUDA event behind, and a
// watchdog thread checks those events against their deadlines and the communicator's
// asynchronous error. On a failure it aborts the communicator, which stops the NCCL kernels so
// that the stream drains, and records a message that the next collective throws.
//
// Communicators, one per device, are made on the first collective on that device: rank 0's NCCL
// unique id reaches the other ranks through an MPI broadcast of the public API.
#if defined(EMBER_HAVE_NCCL)
#include "distributed/nccl/nccl_transport.h"

#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "backend/cuda/runtime.h"
#include "core/check.h"
#include "distributed/transport.h"
#include "ember/factories.h"

// Inside libember_cuda.so, reached through NcclRuntime (nccl_runtime.h): libember's
// distributed/nccl_forward.cpp holds the detail::nccl_* entry points of transport.h.
namespace ember::distributed::detail::nccl_transport {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kWatchdogPeriod{100};
// How long the watchdog lets the user's thread sit inside an NCCL call before aborting the
// communicator under it. Aborting frees the communicator, so a call that is merely slow to
// return must not see it go; but a launch blocks for good once the stream's queue is full behind
// a hung collective, and only the abort lets it return.
constexpr std::chrono::seconds kStuckCall{5};

// A collective queued on the GPU that has not yet been seen to finish.
struct Pending {
  cudaEvent_t event = nullptr;
  // Its buffers. The caching allocator reuses freed memory only on the same stream, after the
  // collective, but a tensor allocated on another stream than the current one would be reused
  // there while NCCL still writes it.
  std::vector<Tensor> tensors;
  Clock::time_point deadline;
  milliseconds timeout{0};
  std::string what;  // ours, not Work::State::what, which the caller sets after we return
};

struct Communicator {
  ncclComm_t comm = nullptr;  // nullptr once aborted: ncclCommAbort frees it
  bool aborted = false;
  bool in_call = false;  // the user's thread is inside an NCCL call on comm
  Clock::time_point call_started;
  std::list<Pending> pending;  // in the order they were queued
};

struct Transport {
  std::mutex mutex;  // guards everything below except `watchdog`, which only the user's thread touches
  std::condition_variable wake;
  std::map<int, Communicator> comms;  // by device index; std::map so that entries never move
  // Buffers of finished collectives, freed by the user's thread: freeing calls into the caching
  // allocator, which the watchdog must not do.
  std::vector<std::vector<Tensor>> done;
  std::string failure;  // the watchdog's message, thrown by every later call
  bool stop = false;
  std::thread watchdog;
};

// Never destroyed: a program that exits without distributed::finalize() still has the watchdog
// running, and destroying its std::thread would call std::terminate.
Transport& transport() {
  static Transport* const t = new Transport;
  return *t;
}

struct NcclWork final : Work::State {
  // Later work on the same stream is ordered after the collective, so the caller may go on at
  // once; the watchdog alone watches the GPU finish it.
  bool poll() override { return true; }
};

std::string nccl_error_text(ncclResult_t rc, ncclComm_t comm) {
  std::string text = ncclGetErrorString(rc);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(": ") + last;
  return text;
}

// A failed NCCL call after an abort by the watchdog is a consequence of it; the watchdog's
// message says what went wrong.
[[noreturn]] void fail_nccl(ncclResult_t rc, const char* call, ncclComm_t comm) {
  std::string failure;
  {
    Transport& t = transport();
    std::lock_guard lock(t.mutex);
    failure = t.failure;
  }
  if (!failure.empty()) ember::detail::fail(failure);
  ember::detail::fail("distributed: ", call, " failed: ", nccl_error_text(rc, comm));
}

void check_nccl(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr) {
  if (rc != ncclSuccess) fail_nccl(rc, call, comm);
}

// Frees the buffers of collectives the watchdog saw finish, and throws its failure.
void settle() {
  Transport& t = transport();
  std::vector<std::vector<Tensor>> done;
  std::string failure;
  {
    std::lock_guard lock(t.mutex);
    done.swap(t.done);
    failure = t.failure;
  }
  done.clear();
  if (!failure.empty()) ember::detail::fail(failure);
}

// What the watchdog does once `c` has failed: marks it, records why, and hands back the
// communicator to abort outside the lock (an abort waits for NCCL's threads).
ncclComm_t give_up(Transport& t, Communicator& c, const std::string& message) {
  if (t.failure.empty()) t.failure = message;
  c.aborted = true;
  return std::exchange(c.comm, nullptr);
}

std::string timeout_message(const Pending& p, int device, const std::string& nccl_text) {
  return "distributed: " + p.what + " on cuda:" + std::to_string(device) + " did not finish within " +
         seconds_text(p.timeout) + " (NCCL: " + nccl_text +
         "); a rank stopped or is much slower, or ranks called different collectives. The NCCL communicator was "
         "aborted.";
}

// One look at a communicator, under the lock. Only CUDA and NCCL calls: no ember ops, and no
// tensor is freed here.
ncclComm_t inspect(Transport& t, int device, Communicator& c, Clock::time_point now) {
  if (c.pending.empty() && c.aborted) return nullptr;
  // Without a device of its own this thread would create a context on device 0.
  if (cudaSetDevice(device) != cudaSuccess) return nullptr;
  std::string gpu_failure;
  const Pending* late = nullptr;
  for (auto it = c.pending.begin(); it != c.pending.end();) {
    const cudaError_t status = cudaEventQuery(it->event);
    if (status == cudaErrorNotReady) {
      if (late == nullptr && now >= it->deadline) late = &*it;
      ++it;
      continue;
    }
    if (status != cudaSuccess && gpu_failure.empty()) {
      gpu_failure = "distributed: " + it->what + " on cuda:" + std::to_string(device) +
                    " failed on the GPU: " + cudaGetErrorString(status) + ". The NCCL communicator was aborted.";
    }
    cudaEventDestroy(it->event);
    t.done.push_back(std::move(it->tensors));
    it = c.pending.erase(it);
  }
  if (c.aborted) return nullptr;

  ncclResult_t async = ncclSuccess;
  const ncclResult_t rc = ncclCommGetAsyncError(c.comm, &async);
  if (rc != ncclSuccess) async = rc;
  const bool nccl_failed = async != ncclSuccess && async != ncclInProgress;
  if (late == nullptr && !nccl_failed && gpu_failure.empty()) return nullptr;
  if (c.in_call && now - c.call_started < kStuckCall) return nullptr;  // the next round decides

  const std::string nccl_text = nccl_failed ? nccl_error_text(async, c.comm) : "no error reported";
  if (late != nullptr) return give_up(t, c, timeout_message(*late, device, nccl_text));
  if (!gpu_failure.empty()) return give_up(t, c, gpu_failure);
  const std::string what = c.pending.empty() ? std::string("a collective") : c.pending.front().what;
  return give_up(t, c,
                 "distributed: " + what + " on cuda:" + std::to_string(device) + " failed (NCCL: " + nccl_text +
                     "); a rank stopped or is much slower, or ranks called different collectives. The NCCL "
                     "communicator was aborted.");
}

void watch() {
  Transport& t = transport();
  std::unique_lock lock(t.mutex);
  while (!t.wake.wait_for(lock, kWatchdogPeriod, [&] { return t.stop; })) {
    const Clock::time_point now = Clock::now();
    std::vector<ncclComm_t> to_abort;
    for (auto& [device, c] : t.comms) {
      if (ncclComm_t comm = inspect(t, device, c, now)) to_abort.push_back(comm);
    }
    if (to_abort.empty()) continue;
    lock.unlock();
    // Nowhere to report a failed abort: the failure that caused it is already recorded.
    for (ncclComm_t comm : to_abort) ncclCommAbort(comm);
    lock.lock();
  }
}

// The communicator for `device`, made on first use. Every rank reaches this on the same
// collective, since they call the same collectives in the same order.
Communicator& communicator(int device, const Membership& world) {
  Transport& t = transport();
  {
    std::lock_guard lock(t.mutex);
    auto it = t.comms.find(device);
    if (it != t.comms.end()) return it->second;
  }
  ncclUniqueId id{};
  if (world.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  Tensor wire = empty({static_cast<int64_t>(sizeof id)}, TensorOptions().dtype(kUInt8));
  std::memcpy(wire.data_ptr(), &id, sizeof id);
  ember::distributed::broadcast(wire, 0);
  std::memcpy(&id, wire.data_ptr(), sizeof id);

  ncclComm_t comm = nullptr;
  {
    cuda_impl::DeviceGuard guard(device);
    check_nccl(ncclCommInitRank(&comm, world.size, id, world.rank), "ncclCommInitRank");
  }
  std::lock_guard lock(t.mutex);
  Communicator& c = t.comms[device];
  c.comm = comm;
  if (!t.watchdog.joinable()) {
    t.stop = false;
    t.watchdog = std::thread(watch);
  }
  return c;
}

int device_of(const Tensor& t) {
  const Device d = t.device();
  return d.has_index() ? d.index() : cuda_impl::current_device();
}

std::string describe(const char* collective, const Tensor& t, const std::string& extra = {}) {
  std::ostringstream s;
  s << collective << " of " << short_dtype_name(t.dtype()) << " " << ember::detail::shape_str(t.sizes());
  if (!extra.empty()) s << " (" << extra << ")";
  return s.str();
}

// NCCL's type for `d`. Copies need only the element size, so types NCCL cannot add travel as
// another type of that size.
ncclDataType_t nccl_type(Dtype d, bool copy_only) {
  switch (d) {
    case Dtype::Bool:
    case Dtype::UInt8:
      return ncclUint8;
    case Dtype::Int8:
      return ncclInt8;
    case Dtype::Int16:
      if (copy_only) return ncclFloat16;
      break;
    case Dtype::Int32:
      return ncclInt32;
    case Dtype::Int64:
      return ncclInt64;
    case Dtype::Float16:
      return ncclFloat16;
    case Dtype::BFloat16:
      return ncclBfloat16;
    case Dtype::Float32:
      return ncclFloat32;
    case Dtype::Float64:
      return ncclFloat64;
  }
  ember::detail::fail("distributed: NCCL cannot reduce ", dtype_name(d), " tensors (internal error: widen them first)");
}

// Bool tensors hold 0 or 1 in a byte; PyTorch reduces them with max for sum and min for product.
ncclRedOp_t nccl_op(ReduceOp op, Dtype d) {
  if (d == kBool) return op == ReduceOp::Sum || op == ReduceOp::Max ? ncclMax : ncclMin;
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Product:
      return ncclProd;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Max:
      return ncclMax;
  }
  return ncclSum;
}

// Queues `launch(comm, stream)`, one NCCL call, on the current stream of `device`, then an event
// for the watchdog; `tensors` stay alive until the event has fired.
template <typename Launch>
std::unique_ptr<Work::State> enqueue(const char* call, int device, const Membership& world, std::string what,
                                     std::vector<Tensor> tensors, Launch&& launch) {
  Transport& t = transport();
  Communicator& c = communicator(device, world);
  cuda_impl::DeviceGuard guard(device);
  const cudaStream_t stream = cuda_impl::current_stream(device);
  // Made before the collective is queued, so that failing here leaves nothing on the GPU.
  cudaEvent_t event = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "distributed");

  ncclComm_t comm = nullptr;
  {
    std::lock_guard lock(t.mutex);
    if (!c.aborted) {
      c.in_call = true;
      c.call_started = Clock::now();
      comm = c.comm;
    }
  }
  if (comm == nullptr) {
    cudaEventDestroy(event);
    settle();  // throws the failure that aborted it
    ember::detail::fail("distributed: the NCCL communicator of cuda:", device, " was aborted");
  }
  const ncclResult_t rc = launch(comm, stream);
  const cudaError_t recorded = rc == ncclSuccess ? cudaEventRecord(event, stream) : cudaSuccess;
  const milliseconds limit = ember::distributed::timeout();

  auto state = std::make_unique<NcclWork>();
  state->keep_alive = tensors;
  {
    std::lock_guard lock(t.mutex);
    c.in_call = false;
    if (rc == ncclSuccess && recorded == cudaSuccess) {
      c.pending.push_back(Pending{event, std::move(tensors), Clock::now() + limit, limit, std::move(what)});
    }
  }
  if (rc != ncclSuccess) {
    cudaEventDestroy(event);
    fail_nccl(rc, call, comm);
  }
  if (recorded != cudaSuccess) {
    cudaEventDestroy(event);
    cuda_impl::throw_cuda_error(recorded, "distributed", "cudaEventRecord");
  }
  return state;
}

}  // namespace

std::string failure() {
  Transport& t = transport();
  std::lock_guard lock(t.mutex);
  return t.failure;
}

std::unique_ptr<Work::State> all_reduce(const Tensor& tensor, ReduceOp op, const Membership& world) {
  settle();
  const Dtype dtype = tensor.dtype();
  EMBER_CHECK(op != ReduceOp::Avg || is_floating_point(dtype), "distributed: NCCL's average of ", dtype_name(dtype),
              " tensors is refused (internal error: the caller checks it)");
  // Every rank holds the same shape, so all of them skip an empty tensor.
  if (tensor.numel() == 0) return std::make_unique<NcclWork>();
  // NCCL has no 16-bit integer type: int16 is reduced in int32 and narrowed back afterwards,
  // which wraps as int16 arithmetic would.
  const Tensor wire = dtype == kInt16 ? tensor.to(kInt32) : tensor;
  const ncclDataType_t type = nccl_type(wire.dtype(), false);
  const ncclRedOp_t reduction = nccl_op(op, dtype);
  const size_t count = static_cast<size_t>(wire.numel());
  void* data = wire.data_ptr();
  auto state = enqueue("ncclAllReduce", device_of(tensor), world, describe("all_reduce", tensor, reduce_op_name(op)),
                       {tensor, wire}, [&](ncclComm_t comm, cudaStream_t stream) {
                         return ncclAllReduce(data, data, count, type, reduction, comm, stream);
                       });
  if (!wire.is_same(tensor)) {
    state->then = [target = Tensor(tensor), wide = wire]() mutable { target.copy_(wide); };
  }
  return state;
}

std::unique_ptr<Work::State> broadcast(const Tensor& tensor, int root, const Membership& world) {
  settle();
  if (tensor.numel() == 0) return std::make_unique<NcclWork>();
  const ncclDataType_t type = nccl_type(tensor.dtype(), true);
  const size_t count = static_cast<size_t>(tensor.numel());
  void* data = tensor.data_ptr();
  return enqueue(
      "ncclBroadcast", device_of(tensor), world, describe("broadcast", tensor, "from rank " + std::to_string(root)),
      {tensor},
      [&](ncclComm_t comm, cudaStream_t stream) { return ncclBroadcast(data, data, count, type, root, comm, stream); });
}

std::unique_ptr<Work::State> all_gather(const Tensor& input, const Tensor& output, const Membership& world) {
  settle();
  EMBER_CHECK(output.numel() == input.numel() * world.size && output.dtype() == input.dtype() &&
                  output.device() == input.device(),
              "distributed: NCCL's all_gather of ", dtype_name(input.dtype()), " ",
              ember::detail::shape_str(input.sizes()), " into ", dtype_name(output.dtype()), " ",
              ember::detail::shape_str(output.sizes()), " (internal error: the output holds every rank's input)");
  // The caller pads every rank's input to the same size, so all ranks skip an empty one.
  if (input.numel() == 0) return std::make_unique<NcclWork>();
  const ncclDataType_t type = nccl_type(input.dtype(), true);
  const size_t count = static_cast<size_t>(input.numel());
  const void* send = input.data_ptr();
  void* receive = output.data_ptr();
  return enqueue(
      "ncclAllGather", device_of(input), world, describe("all_gather", input), {input, output},
      [&](ncclComm_t comm, cudaStream_t stream) { return ncclAllGather(send, receive, count, type, comm, stream); });
}

void finalize() {
  Transport& t = transport();
  {
    std::lock_guard lock(t.mutex);
    t.stop = true;
  }
  t.wake.notify_all();
  if (t.watchdog.joinable()) t.watchdog.join();

  // Only this thread touches the state from here on. Everything is torn down before the first
  // error is thrown, so that a later init() starts afresh.
  std::string error;
  auto note = [&](std::string text) {
    if (error.empty()) error = std::move(text);
  };
  for (auto& [device, c] : t.comms) {
    for (Pending& p : c.pending) {
      // A collective still hung here would block cudaEventSynchronize forever; past its deadline
      // the communicator is aborted, as the watchdog would have done, so that the stream drains.
      cudaError_t status;
      while ((status = cudaEventQuery(p.event)) == cudaErrorNotReady) {
        // "Not ready" lands in this thread's CUDA error state: cleared, so that the next
        // check_launch does not report it against an unrelated kernel (as query_completed does).
        (void)cudaGetLastError();
        if (!c.aborted && Clock::now() >= p.deadline) {
          note(timeout_message(p, device, "no error reported"));
          c.aborted = true;
          ncclCommAbort(std::exchange(c.comm, nullptr));
        }
        std::this_thread::sleep_for(milliseconds(1));
      }
      if (status != cudaSuccess) {
        note("distributed: " + p.what + " on cuda:" + std::to_string(device) +
             " failed on the GPU: " + cudaGetErrorString(status));
      }
      cudaEventDestroy(p.event);
    }
    c.pending.clear();
    if (c.comm != nullptr) {
      const ncclResult_t rc = ncclCommDestroy(c.comm);
      if (rc != ncclSuccess) note("distributed: ncclCommDestroy failed: " + nccl_error_text(rc, nullptr));
      c.comm = nullptr;
    }
  }
  t.comms.clear();
  t.done.clear();
  t.failure.clear();
  t.stop = false;
  if (!error.empty()) ember::detail::fail(error);
}

}  // namespace ember::distributed::detail::nccl_transport
#endif  // EMBER_HAVE_NCCL
