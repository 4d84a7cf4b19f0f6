#include "backend/cpu/onednn_matmul.h"

#include <omp.h>

#include <array>

#include "backend/cpu/onednn_primitives.h"
#include "core/check.h"

namespace ember::cpu {
namespace {

using dnnl::memory;

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
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), user_scratchpad(), onednn_engine());
  p.matmul = dnnl::matmul(pd);
  p.scratchpad = pd.scratchpad_desc();
  return std::make_shared<const Primitive>(std::move(p));
}

}  // namespace

void onednn_matmul_b_transposed(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                int64_t m, int64_t n, int64_t k) {
  static PrimitiveCache<Key, Primitive> cache;
  const Key key{m, n, k, lda, ldb, ldc, omp_get_max_threads()};
  const std::shared_ptr<const Primitive> p = cache.get(key, [&] { return make_primitive(key); });
  dnnl::stream stream(onednn_engine());
  try {
    execute(p->matmul, p->scratchpad, stream,
            {{DNNL_ARG_SRC, memory(p->a, onednn_engine(), const_cast<float*>(a))},
             {DNNL_ARG_WEIGHTS, memory(p->b, onednn_engine(), const_cast<float*>(b))},
             {DNNL_ARG_DST, memory(p->c, onednn_engine(), c)}});
  } catch (const dnnl::error& e) {
    detail::fail("[matmul] oneDNN matmul failed (", e.what(), ") for ", m, "x", k, " @ ", k, "x", n);
  }
}

}  // namespace ember::cpu
