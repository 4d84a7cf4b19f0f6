#pragma once
// CUDA plumbing shared by the backend's files: checked calls that become ember::Error naming the
// op, the current device and stream per thread, the cuBLAS/cuDNN handles (per device and thread)
// and scratch memory from the caching allocator. Internal: public headers never include CUDA
// headers.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>

namespace ember::cuda_impl {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* op, const char* call);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* op, const char* call);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* op, const char* call);

/// Turns the error state after a kernel launch (no kernel image for this GPU, a bad launch
/// configuration, an earlier asynchronous fault) into an ember::Error naming `op`.
void check_launch(const char* op);

}  // namespace ember::cuda_impl

/// EMBER_CUDA_CHECK(cudaMemcpyAsync(...), "copy"): throws ember::Error naming the op, the call
/// and CUDA's own description when the call fails; out-of-memory becomes OutOfMemoryError.
#define EMBER_CUDA_CHECK(call, op)                                                              \
  do {                                                                                          \
    const cudaError_t ember_err_ = (call);                                                      \
    if (ember_err_ != cudaSuccess) ::ember::cuda_impl::throw_cuda_error(ember_err_, op, #call); \
  } while (0)
#define EMBER_CUBLAS_CHECK(call, op)                                                                      \
  do {                                                                                                    \
    const cublasStatus_t ember_st_ = (call);                                                              \
    if (ember_st_ != CUBLAS_STATUS_SUCCESS) ::ember::cuda_impl::throw_cublas_error(ember_st_, op, #call); \
  } while (0)
#define EMBER_CUDNN_CHECK(call, op)                                                                     \
  do {                                                                                                  \
    const cudnnStatus_t ember_st_ = (call);                                                             \
    if (ember_st_ != CUDNN_STATUS_SUCCESS) ::ember::cuda_impl::throw_cudnn_error(ember_st_, op, #call); \
  } while (0)

namespace ember::cuda_impl {

/// Devices ember keeps per-device state for; cuda:N beyond this is rejected by the front end's
/// device-count check long before (no machine has 64 GPUs behind one process).
inline constexpr int kMaxDevices = 64;

/// A new event without timing, recorded on `stream` after the work queued there so far: a marker
/// for another stream or the host to wait for. Call on the stream's device; throws ember::Error
/// naming `op` (destroying the event) when it cannot be created or recorded.
cudaEvent_t record_marker(cudaStream_t stream, const char* op);
/// The answer of cudaEventQuery / cudaStreamQuery (`call`): whether the work has finished. "Not
/// ready" is an answer, not an error, and is cleared from CUDA's error state; any other error
/// throws ember::Error naming `op`.
bool query_completed(cudaError_t answer, const char* op, const char* call);

/// This thread's current device (0 until cuda::set_device is called).
int current_device();
void set_current_device(int device);

/// Whether this thread has chosen a device with set_current_device.
bool device_chosen();
/// Puts back the choice a StreamGuard found: `device` through set_current_device if the thread
/// had chosen it, else only as ember's current device, leaving the runtime's device alone.
void restore_current_device(int device, bool chosen);

/// The device this thread chose, else the one another thread chose last (0 if none did): where
/// work that needs some device, such as pinning host memory, runs without creating a context.
int process_device();

/// Makes `device` the CUDA runtime's device for this scope and restores the previous one if this
/// thread chose it; a thread that never chose a device stays on `device` (see runtime.cpp).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_;
};

/// The stream this thread queues work on for `device`: the legacy default stream (nullptr)
/// unless cuda::set_stream or a cuda::StreamGuard chose another.
cudaStream_t current_stream(int device);
void set_current_stream(int device, cudaStream_t stream);

/// Streams per device and priority in the pool cuda::Stream::create draws from.
inline constexpr int kStreamsPerPool = 32;
/// The next stream of `device`'s pool of normal or high priority, in turn. The pool's streams
/// are created on first use, do not synchronise with the legacy default stream, and are never
/// destroyed: the caching allocator keys its caches by stream, so a handle must never come back
/// as a different stream.
cudaStream_t pooled_stream(int device, bool high_priority);

/// This thread's cuBLAS / cuDNN handle for `device` (handle_pool.h: each thread has its own, so
/// threads driving one device on their own streams never share one), bound to the current
/// stream on every call. Call inside a DeviceGuard for that device.
cublasHandle_t cublas_handle(int device);
cudnnHandle_t cudnn_handle(int device);

/// Device scratch memory from the caching allocator (cuDNN and cuBLAS workspaces, temporary
/// buffers of CUB), returned to the cache when the scope ends. Safe without a synchronisation
/// because the memory is reused only by work queued later on the same stream.
class Workspace {
 public:
  Workspace(size_t nbytes, int device);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void* data() const { return data_; }
  size_t size() const { return nbytes_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  int device_ = 0;
};

/// Deferred reporting of out-of-range indices (index_error.h): the device address of `device`'s
/// error record for the indexing kernels, allocated on first use as mapped page-locked host
/// memory; nullptr where that memory cannot be had (said once on stderr), and the kernels then
/// ignore bad indices silently. Call inside a DeviceGuard for that device.
struct IndexErrorRecord;
IndexErrorRecord* index_error_record(int device);

/// Call after the host has waited for `device` (or the stream that ran the work): throws
/// ember::Error with the CPU's message when a kernel recorded an out-of-range index, leaving the
/// record empty. A plain read of host memory when nothing was recorded.
void raise_pending_index_error(int device);

/// Whether EMBER_CUDA_CHECK_INDICES=1: ops that read indices check them at the op, waiting for
/// the device, instead of reporting at the next wait.
bool check_indices_enabled();

/// Whether float32 matrix products may use TF32 tensor cores (convolutions: backends::cudnn)
/// (ember::cuda::set_allow_tf32; off by default, like PyTorch's matmul setting).
bool allow_tf32();
void set_allow_tf32(bool allow);

}  // namespace ember::cuda_impl
