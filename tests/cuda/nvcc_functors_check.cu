// Compiled by nvcc whenever the CUDA toolkit is present: instantiates every element-wise functor
// and reduction combiner from src/kernels in device code, for every element type each accepts.
// If the CPU's math stopped being usable in CUDA kernels, this file would stop compiling, and
// the build would fail before any GPU is involved.
#include "kernels/elementwise_ops.h"
#include "kernels/op_list.h"
#include "kernels/reduce_ops.h"

namespace ek = ember::kernels;

namespace {

template <typename Op, typename C>
__global__ void unary_kernel(const C* x, decltype(Op{}(C{}))* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Op{}(x[i]);
}

template <typename Op, typename C>
__global__ void binary_kernel(const C* a, const C* b, decltype(Op{}(C{}, C{}))* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Op{}(a[i], b[i]);
}

template <typename C>
__global__ void reduce_kernel(const C* x, C* sum, C* prod, int n) {
  C s = ek::SumOp<C>::identity(), p = ek::ProdOp<C>::identity();
  for (int i = 0; i < n; ++i) {
    s = ek::SumOp<C>::combine(s, x[i]);
    p = ek::ProdOp<C>::combine(p, x[i]);
  }
  *sum = s;
  *prod = p;
}

// Taking the address of a kernel template instantiates it; nothing is launched.
template <typename Op, typename C>
constexpr void instantiate_unary() {
  if constexpr (ek::accepts_v<Op, C>) (void)&unary_kernel<Op, C>;
}
template <typename Op, typename C>
constexpr void instantiate_binary() {
  if constexpr (ek::accepts_v<Op, C>) (void)&binary_kernel<Op, C>;
}

template <typename C>
void instantiate_all() {
#define EMBER_UNARY(name, str) instantiate_unary<ek::name, C>();
#define EMBER_BINARY(name, str) instantiate_binary<ek::name, C>();
  EMBER_UNARY_OPS(EMBER_UNARY)
  EMBER_BINARY_OPS(EMBER_BINARY)
#undef EMBER_UNARY
#undef EMBER_BINARY
  (void)&reduce_kernel<C>;
}

}  // namespace

// Referenced from nowhere: it exists to be compiled.
void ember_nvcc_functors_check() {
  instantiate_all<float>();
  instantiate_all<double>();
  instantiate_all<int64_t>();
  instantiate_all<int32_t>();
  instantiate_all<bool>();
}
