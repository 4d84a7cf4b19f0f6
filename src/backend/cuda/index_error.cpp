// The per-device records of out-of-range indices (index_error.h): mapped page-locked host memory
// that indexing.cu's kernels write on the first bad index, and the check the host runs after its
// waits for the device (cuda_backend.cpp's blocking copies, cuda_api.cpp's synchronisations).
#include "backend/cuda/index_error.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "backend/cuda/runtime.h"
#include "core/check.h"

namespace ember::cuda_impl {
namespace {

constexpr int kMaxRecordDevices = 64;  // as runtime.cpp's per-device tables

struct RecordSlot {
  std::once_flag once;
  std::atomic<IndexErrorRecord*> host{nullptr};  // set once the record exists
  IndexErrorRecord* device = nullptr;            // its address for kernels (written under `once`)
};

std::array<RecordSlot, kMaxRecordDevices>& slots() {
  static auto* s = new std::array<RecordSlot, kMaxRecordDevices>();  // leaked: used until exit
  return *s;
}

void allocate_record(RecordSlot& slot, int device) {
  void* host = nullptr;
  // Portable as well as mapped: the memory stays valid whichever device is current later.
  cudaError_t err = cudaHostAlloc(&host, sizeof(IndexErrorRecord), cudaHostAllocMapped | cudaHostAllocPortable);
  void* dev = nullptr;
  if (err == cudaSuccess) {
    *static_cast<IndexErrorRecord*>(host) = IndexErrorRecord{};
    err = cudaHostGetDevicePointer(&dev, host, 0);
    if (err != cudaSuccess) {
      (void)cudaFreeHost(host);
      host = nullptr;
    }
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not the kernels' fault: keep it from the next check_launch
    std::fprintf(stderr,
                 "ember: cannot allocate mapped host memory for recording out-of-range indices on cuda:%d (%s); "
                 "index_select, gather and scatter_add there ignore such indices silently unless "
                 "EMBER_CUDA_CHECK_INDICES=1\n",
                 device, cudaGetErrorString(err));
    return;
  }
  slot.device = static_cast<IndexErrorRecord*>(dev);
  slot.host.store(static_cast<IndexErrorRecord*>(host), std::memory_order_release);
}

}  // namespace

IndexErrorRecord* index_error_record(int device) {
  if (device < 0 || device >= kMaxRecordDevices) return nullptr;
  RecordSlot& slot = slots()[static_cast<size_t>(device)];
  std::call_once(slot.once, [&] { allocate_record(slot, device); });
  return slot.device;
}

void raise_pending_index_error(int device) {
  if (device < 0 || device >= kMaxRecordDevices) return;
  IndexErrorRecord* record = slots()[static_cast<size_t>(device)].host.load(std::memory_order_acquire);
  if (record == nullptr) return;  // never allocated (no indexing kernel ran there) or unavailable
  // Orders the reads of the record after the wait that made the device's writes visible.
  std::atomic_thread_fence(std::memory_order_acquire);
  const std::optional<IndexErrorReport> report = take_index_error(record);
  if (report) detail::fail(index_error_message(*report, device));
}

bool check_indices_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("EMBER_CUDA_CHECK_INDICES");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return enabled;
}

}  // namespace ember::cuda_impl
