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

// dtype, m, n, k, a's strides, b's strides, ldc, threads
using Key = std::array<int64_t, 10>;

std::shared_ptr<const Primitive> make_primitive(const Key& key) {
  const auto [type, m, n, k, a_rs, a_cs, b_rs, b_cs, ldc, threads] = key;
  const auto dt = static_cast<memory::data_type>(type);
  Primitive p;
  p.a = memory::desc({m, k}, dt, memory::dims{a_rs, a_cs});
  p.b = memory::desc({k, n}, dt, memory::dims{b_rs, b_cs});
  p.c = memory::desc({m, n}, dt, memory::dims{ldc, 1});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), user_scratchpad(), onednn_engine());
  p.matmul = dnnl::matmul(pd);
  p.scratchpad = pd.scratchpad_desc();
  return std::make_shared<const Primitive>(std::move(p));
}

void run(memory::data_type dt, const void* a, int64_t a_rs, int64_t a_cs, const void* b, int64_t b_rs, int64_t b_cs,
         void* c, int64_t ldc, int64_t m, int64_t n, int64_t k) {
  static PrimitiveCache<Key, Primitive> cache;
  const Key key{static_cast<int64_t>(dt), m, n, k, a_rs, a_cs, b_rs, b_cs, ldc, omp_get_max_threads()};
  const std::shared_ptr<const Primitive> p = cache.get(key, [&] { return make_primitive(key); });
  dnnl::stream stream(onednn_engine());
  try {
    execute(p->matmul, p->scratchpad, stream,
            {{DNNL_ARG_SRC, memory(p->a, onednn_engine(), const_cast<void*>(a))},
             {DNNL_ARG_WEIGHTS, memory(p->b, onednn_engine(), const_cast<void*>(b))},
             {DNNL_ARG_DST, memory(p->c, onednn_engine(), c)}});
  } catch (const dnnl::error& e) {
    detail::fail("[matmul] oneDNN matmul failed (", e.what(), ") for ", m, "x", k, " @ ", k, "x", n);
  }
}

}  // namespace

void onednn_matmul_b_transposed(const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                                int64_t m, int64_t n, int64_t k) {
  run(memory::data_type::f32, a, lda, 1, b, 1, ldb, c, ldc, m, n, k);
}

bool onednn_native_bfloat16() {
  // The ISA values are bit sets, each containing the ones below it (AMX contains AVX512-BF16).
  static const bool native = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    return (isa & bf16) == bf16;
  }();
  return native;
}

void onednn_matmul_bf16(const BFloat16* a, int64_t a_row_stride, int64_t a_col_stride, const BFloat16* b,
                        int64_t b_row_stride, int64_t b_col_stride, BFloat16* c, int64_t ldc, int64_t m, int64_t n,
                        int64_t k) {
  run(memory::data_type::bf16, a, a_row_stride, a_col_stride, b, b_row_stride, b_col_stride, c, ldc, m, n, k);
}

}  // namespace ember::cpu
