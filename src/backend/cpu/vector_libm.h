#pragma once
// Vector versions of the float math the CPU kernels call most: exp, expm1, tanh, erf and erfc.
//
// A loop that calls expf once per element runs at the speed of the scalar call (tanhf and erff
// take about 25 ns each here), however simple the rest of the loop is. glibc's libmvec (2.35+,
// x86-64) has 4-, 8- and 16-lane versions of these functions, accurate to a few ulp (measured
// over every 4093rd float bit pattern: exp 2.6, tanh 1.0, erf 1.9, erfc 1.3, expm1 1.7 ulp, against 0.5 to
// 2.1 for the scalar ones; PyTorch's CPU kernels use Sleef's 1-ulp versions). Declaring the
// functions `simd` tells GCC those versions exist, so when it vectorises a loop that calls one it
// calls the vector version (_ZGVbN4v_expf, _ZGVdN8v_tanhf, ...: which one depends on the target
// and its preferred vector width), once per 4 or 8 elements. The call is the same function of the
// same float: the functors in kernels/ stay the one definition of the math for CPU and CUDA.
//
// libm.so links libmvec as needed, so nothing else is required. The declarations must be seen
// where a loop is compiled: include this header in the kernel files whose loops call these
// functions (element-wise ops, softmax). Other compilers, C libraries and architectures keep the
// scalar calls.
#include <cmath>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define EMBER_VECTOR_LIBM 1
extern "C" {
float expf(float) noexcept __attribute__((simd("notinbranch")));
float expm1f(float) noexcept __attribute__((simd("notinbranch")));
float tanhf(float) noexcept __attribute__((simd("notinbranch")));
float erff(float) noexcept __attribute__((simd("notinbranch")));
float erfcf(float) noexcept __attribute__((simd("notinbranch")));
}
#else
#define EMBER_VECTOR_LIBM 0
#endif
