#pragma once
// What the CPU backend's oneDNN primitives share (convolution in conv_onednn.cpp, the transposed-operand
// matmul in onednn_matmul.cpp): one engine, a scratchpad supplied by the caller, per-thread
// staging memory, and a bounded cache of primitives by geometry.
#include <cstddef>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace ember::cpu {

dnnl::engine& onednn_engine();

/// Attributes asking for a scratchpad passed in at execution. With the library-managed one of
/// Debian's oneDNN build, a primitive may only run on the thread that created it; cached
/// primitives run on whichever thread calls the op.
dnnl::primitive_attr user_scratchpad();

/// Memory of at least `bytes`, per thread and slot, kept between calls: fresh buffers would cost
/// a page fault per 4 KiB on every call, as much as a small layer's work itself. Slots 0-2 are
/// the callers' (conv_onednn.cpp stages two inputs and an output there); execute() uses slot 3.
void* staging(int slot, size_t bytes);

/// Runs `prim` with its scratchpad (described by `scratchpad`) in the calling thread's staging
/// memory.
void execute(const dnnl::primitive& prim, const dnnl::memory::desc& scratchpad, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args);

/// Primitives by geometry. Creating one costs far more than running one of a training step's
/// products or convolutions, and a training loop sees the same few geometries every step.
/// Bounded, so that a program sweeping many shapes does not grow it without limit.
template <typename Key, typename Entry>
class PrimitiveCache {
 public:
  template <typename Make>
  std::shared_ptr<const Entry> get(const Key& key, const Make& make) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = entries_.find(key); it != entries_.end()) return it->second;
    }
    std::shared_ptr<const Entry> made = make();
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.clear();
    entries_.emplace(key, made);
    return made;
  }

 private:
  static constexpr size_t kMaxEntries = 64;
  std::mutex mutex_;
  std::map<Key, std::shared_ptr<const Entry>> entries_;
};

}  // namespace ember::cpu
