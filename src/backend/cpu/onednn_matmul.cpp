#include "backend/cpu/onednn_matmul.h"

#include <omp.h>

#include <array>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backend/cpu/host_allocator.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

using dnnl::memory;

dnnl::engine& engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

struct Primitive {
  dnnl::matmul matmul;
  memory::desc a, b, c, scratchpad;
};

using Key = std::array<int64_t, 7>;  // m, n, k, lda, ldb, ldc, threads

std::shared_ptr<const Primitive> make_primitive(const Key& key) {
  const auto [m, n, k, lda, ldb, ldc, threads] = key;
  using dt = memory::data_type;
  Primitive p;
  p.a = memory::desc({m, k}, dt::f32, memory::dims{lda, 1});
  p.b = memory::desc({k, n}, dt::f32, memory::dims{1, ldb});
  p.c = memory::desc({m, n}, dt::f32, memory::dims{ldc, 1});
  // A scratchpad passed in per call: with the library-managed one of Debian's build, a primitive
  // may only run on the thread that created it.
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), attr, engine());
  p.matmul = dnnl::matmul(pd);
  p.scratchpad = pd.scratchpad_desc();
  return std::make_shared<const Primitive>(std::move(p));
}

/// Creating a primitive costs far more than running one of a training step's products, and a
/// training loop sees the same few geometries every step. Bounded, so that a program sweeping
/// many shapes does not grow it without limit.
std::shared_ptr<const Primitive> cached_primitive(const Key& key) {
  static std::mutex mutex;
  static std::map<Key, std::shared_ptr<const Primitive>> cache;
  constexpr size_t kMaxEntries = 64;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  std::shared_ptr<const Primitive> made = make_primitive(key);
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= kMaxEntries) cache.clear();
  cache.emplace(key, made);
  return made;
}

}  // namespace

void onednn_matmul_b_transposed(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                int64_t m, int64_t n, int64_t k) {
  const Key key{m, n, k, lda, ldb, ldc, omp_get_max_threads()};
  const std::shared_ptr<const Primitive> p = cached_primitive(key);
  dnnl::stream stream(engine());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(p->a, engine(), const_cast<float*>(a))},
                                       {DNNL_ARG_WEIGHTS, memory(p->b, engine(), const_cast<float*>(b))},
                                       {DNNL_ARG_DST, memory(p->c, engine(), c)}};
  // The scratchpad comes from the caching allocator, so a training step reuses the same block.
  struct Scratch {
    size_t bytes;
    void* data;
    explicit Scratch(size_t n) : bytes(n), data(n > 0 ? host_allocator().allocate(n) : nullptr) {}
    ~Scratch() {
      if (data != nullptr) host_allocator().deallocate(data, bytes);
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
  } scratch(p->scratchpad.get_size());
  if (scratch.data != nullptr) args.emplace(DNNL_ARG_SCRATCHPAD, memory(p->scratchpad, engine(), scratch.data));
  try {
    p->matmul.execute(stream, args);
  } catch (const dnnl::error& e) {
    detail::fail("[matmul] oneDNN matmul failed (", e.what(), ") for ", m, "x", k, " @ ", k, "x", n);
  }
}

}  // namespace ember::cpu
