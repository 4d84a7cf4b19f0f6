// The CUDA backend's shared plumbing: error translation, per-thread current device and stream,
// per-device library handles, scratch memory.
#include "backend/cuda/runtime.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "backend/cuda/caching_allocator.h"
#include "backend/cuda/handle_pool.h"
#include "core/check.h"
#include "ember/error.h"

namespace ember::cuda_impl {
namespace {

thread_local int t_current_device = 0;
// Whether this thread chose a device (cuda::set_device, a StreamGuard): only then does a
// DeviceGuard put the runtime's device back, because making a device current creates a CUDA
// context on it (since CUDA 12), and a thread that never chose one would otherwise end every
// guard by creating a context on device 0, which a process working on cuda:1 never needs.
thread_local bool t_device_chosen = false;
// The device most recently chosen by any thread: where threads that never chose one (a
// DataLoader's pinning thread) do what must run under some device.
std::atomic<int> g_chosen_device{0};
thread_local std::array<cudaStream_t, kMaxDevices> t_streams{};  // nullptr: the legacy default stream

std::atomic<bool> g_allow_tf32{false};

std::string hint_for(cudaError_t err) {
  switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
      return " (this ember was not compiled for this GPU's architecture; rebuild with "
             "-DCMAKE_CUDA_ARCHITECTURES set to its compute capability, e.g. 90 for H100)";
    case cudaErrorInsufficientDriver:
      return " (the NVIDIA driver is older than the CUDA runtime ember was built with; update the driver)";
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
      return " (a kernel faulted; the error may come from an earlier asynchronous op; rerun with "
             "CUDA_LAUNCH_BLOCKING=1 to find it)";
    default:
      return "";
  }
}

void check_device_index(int device) {
  EMBER_CHECK(device >= 0 && device < kMaxDevices, "CUDA error: invalid device ordinal ", device);
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* op, const char* call) {
  std::string message = std::string("[") + op + "] CUDA error: " + cudaGetErrorString(err) + " (" +
                        cudaGetErrorName(err) + " from " + call + ")" + hint_for(err);
  // The runtime also keeps `err` as this thread's last error, which the next check_launch would
  // report again against an unrelated kernel: clear it (a sticky error stays, as it must).
  (void)cudaGetLastError();
  if (err == cudaErrorMemoryAllocation) throw OutOfMemoryError(message);
  throw Error(message);
}

void throw_cublas_error(cublasStatus_t status, const char* op, const char* call) {
  throw Error(std::string("[") + op + "] cuBLAS error: " + cublasGetStatusName(status) + " (" +
              cublasGetStatusString(status) + ", from " + call + ")");
}

void throw_cudnn_error(cudnnStatus_t status, const char* op, const char* call) {
  throw Error(std::string("[") + op + "] cuDNN error: " + cudnnGetErrorString(status) + " (from " + call + ")");
}

void check_launch(const char* op) {
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw_cuda_error(err, op, "kernel launch");
}

cudaEvent_t record_marker(cudaStream_t stream, const char* op) {
  cudaEvent_t event = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), op);
  const cudaError_t err = cudaEventRecord(event, stream);
  if (err != cudaSuccess) {
    (void)cudaEventDestroy(event);
    throw_cuda_error(err, op, "cudaEventRecord(event, stream)");
  }
  return event;
}

bool query_completed(cudaError_t answer, const char* op, const char* call) {
  if (answer == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  if (answer != cudaSuccess) throw_cuda_error(answer, op, call);
  return true;
}

int current_device() { return t_current_device; }

void set_current_device(int device) {
  check_device_index(device);
  EMBER_CUDA_CHECK(cudaSetDevice(device), "set_device");
  t_current_device = device;
  t_device_chosen = true;
  g_chosen_device.store(device, std::memory_order_relaxed);
}

bool device_chosen() { return t_device_chosen; }

void restore_current_device(int device, bool chosen) {
  if (chosen) {
    set_current_device(device);
    return;
  }
  t_current_device = device;  // the runtime's device stays: setting it would create a context
  t_device_chosen = false;
}

int process_device() { return t_device_chosen ? t_current_device : g_chosen_device.load(std::memory_order_relaxed); }

DeviceGuard::DeviceGuard(int device) : previous_(-1) {
  int active = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&active), "device guard");
  if (active != device) {
    EMBER_CUDA_CHECK(cudaSetDevice(device), "device guard");
    if (t_device_chosen) previous_ = active;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

cudaStream_t current_stream(int device) {
  check_device_index(device);
  return t_streams[static_cast<size_t>(device)];
}

void set_current_stream(int device, cudaStream_t stream) {
  check_device_index(device);
  t_streams[static_cast<size_t>(device)] = stream;
}

namespace {

struct StreamPool {
  std::once_flag created;
  std::array<cudaStream_t, kStreamsPerPool> streams{};
  std::atomic<uint32_t> next{0};
};
// [device][high priority]
std::array<std::array<StreamPool, 2>, kMaxDevices>& stream_pools() {
  static auto* pools = new std::array<std::array<StreamPool, 2>, kMaxDevices>();  // leaked: used until exit
  return *pools;
}

}  // namespace

cudaStream_t pooled_stream(int device, bool high_priority) {
  check_device_index(device);
  StreamPool& pool = stream_pools()[static_cast<size_t>(device)][high_priority ? 1 : 0];
  std::call_once(pool.created, [&] {
    DeviceGuard guard(device);
    int least = 0, greatest = 0;  // CUDA's priorities: lower numbers run first
    EMBER_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cuda::Stream::create");
    for (cudaStream_t& stream : pool.streams) {
      EMBER_CUDA_CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, high_priority ? greatest : least),
                       "cuda::Stream::create");
    }
  });
  return pool.streams[pool.next.fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool];
}

namespace {

// One handle per device and thread (handle_pool.h): a handle must not be used by two threads at
// once, and each call binds it to the calling thread's current stream.
HandlePool<cublasHandle_t>& cublas_pool() {
  static auto* pool = new HandlePool<cublasHandle_t>(kMaxDevices, [](int device) {  // leaked: used until exit
    DeviceGuard guard(device);
    cublasHandle_t h = nullptr;
    EMBER_CUBLAS_CHECK(cublasCreate(&h), "cuBLAS initialisation");
    return h;
  });
  return *pool;
}

HandlePool<cudnnHandle_t>& cudnn_pool() {
  static auto* pool = new HandlePool<cudnnHandle_t>(kMaxDevices, [](int device) {  // leaked: used until exit
    DeviceGuard guard(device);
    cudnnHandle_t h = nullptr;
    EMBER_CUDNN_CHECK(cudnnCreate(&h), "cuDNN initialisation");
    return h;
  });
  return *pool;
}

}  // namespace

cublasHandle_t cublas_handle(int device) {
  check_device_index(device);
  const cublasHandle_t h = cublas_pool().get(device);
  EMBER_CUBLAS_CHECK(cublasSetStream(h, current_stream(device)), "cuBLAS stream");
  // TF32 is an opt-in, like PyTorch's torch.backends.cuda.matmul.allow_tf32 (off by default).
  EMBER_CUBLAS_CHECK(cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
                     "cuBLAS math mode");
  return h;
}

cudnnHandle_t cudnn_handle(int device) {
  check_device_index(device);
  const cudnnHandle_t h = cudnn_pool().get(device);
  EMBER_CUDNN_CHECK(cudnnSetStream(h, current_stream(device)), "cuDNN stream");
  return h;
}

Workspace::Workspace(size_t nbytes, int device) : nbytes_(nbytes), device_(device) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  data_ = device_allocator(device).allocate(nbytes, current_stream(device));
}

Workspace::~Workspace() {
  if (data_ != nullptr) device_allocator(device_).free(data_);
}

bool allow_tf32() { return g_allow_tf32.load(std::memory_order_relaxed); }
void set_allow_tf32(bool allow) { g_allow_tf32.store(allow, std::memory_order_relaxed); }

}  // namespace ember::cuda_impl
