// Chooses ember's CPU BLAS by measurement: float32 GEMM called directly in OpenBLAS (cblas_sgemm)
// and in oneDNN (dnnl_sgemm, and the matmul primitive created once per shape, as a cache would),
// on the shapes an MNIST MLP (784-512-512-10, batch 64) trains with, plus a large square product.
// Each shape carries the transposes PyTorch's Linear produces (y = x W^T, dW = dY^T x, dX = dY W),
// so the libraries' transposed paths are timed, not only the plain one.
//
// Run: bench_blas_choice --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
// The GFLOPS column is 2*M*N*K per wall-clock second (the BLAS runs on OpenMP worker threads,
// which per-thread CPU time would not see).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

struct GemmShape {
  const char* name;
  int64_t m, n, k;
  bool trans_a, trans_b;  // A is stored K x M / B is stored N x K (row-major)
};

// fwd: Linear forward; wgrad: weight gradient; igrad: input gradient (layer 1 needs none).
const GemmShape kShapes[] = {
    {"fwd1_64x784x512_NT", 64, 512, 784, false, true},   {"fwd1_64x784x512_NN", 64, 512, 784, false, false},
    {"fwd2_64x512x512_NT", 64, 512, 512, false, true},   {"fwd3_64x512x10_NT", 64, 10, 512, false, true},
    {"wgrad1_512x64x784_TN", 512, 784, 64, true, false}, {"wgrad2_512x64x512_TN", 512, 512, 64, true, false},
    {"wgrad3_10x64x512_TN", 10, 512, 64, true, false},   {"igrad2_64x512x512_NN", 64, 512, 512, false, false},
    {"igrad3_64x10x512_NN", 64, 512, 10, false, false},  {"square_1024_NN", 1024, 1024, 1024, false, false},
};

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

Buffer random_buffer(int64_t count, uint32_t seed) {
  size_t bytes = (static_cast<size_t>(count) * sizeof(float) + 63) / 64 * 64;
  Buffer buf(static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes)));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < count; ++i) buf[i] = dist(gen);
  return buf;
}

struct Operands {
  Buffer a, b, c;
  int64_t lda, ldb, ldc;
  explicit Operands(const GemmShape& s)
      : a(random_buffer(s.m * s.k, 1)),
        b(random_buffer(s.k * s.n, 2)),
        c(random_buffer(s.m * s.n, 3)),
        lda(s.trans_a ? s.m : s.k),
        ldb(s.trans_b ? s.k : s.n),
        ldc(s.n) {}
};

void use_threads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

void set_counters(benchmark::State& state, const GemmShape& s, int threads) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * static_cast<double>(s.m * s.n * s.k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.counters["threads"] = threads;
}

void bench_openblas(benchmark::State& state, GemmShape s, int threads) {
  use_threads(threads);
  Operands op(s);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans, s.trans_b ? CblasTrans : CblasNoTrans,
                static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), 1.0f, op.a.get(),
                static_cast<int>(op.lda), op.b.get(), static_cast<int>(op.ldb), 0.0f, op.c.get(),
                static_cast<int>(op.ldc));
    benchmark::DoNotOptimize(op.c.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, s, threads);
}

void bench_dnnl_sgemm(benchmark::State& state, GemmShape s, int threads) {
  use_threads(threads);
  Operands op(s);
  for (auto _ : state) {
    dnnl_status_t st = dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1.0f, op.a.get(), op.lda,
                                  op.b.get(), op.ldb, 0.0f, op.c.get(), op.ldc);
    if (st != dnnl_success) {
      state.SkipWithError("dnnl_sgemm failed");
      break;
    }
    benchmark::DoNotOptimize(op.c.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, s, threads);
}

// The matmul primitive with plain (strided) layouts, created before timing: what a primitive
// cache keyed on shape/strides would hand back on every call after the first.
void bench_dnnl_matmul(benchmark::State& state, GemmShape s, int threads) {
  use_threads(threads);
  Operands op(s);
  using dt = dnnl::memory::data_type;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  dnnl::memory::desc a_md({s.m, s.k}, dt::f32, s.trans_a ? dnnl::memory::dims{1, s.m} : dnnl::memory::dims{s.k, 1});
  dnnl::memory::desc b_md({s.k, s.n}, dt::f32, s.trans_b ? dnnl::memory::dims{1, s.k} : dnnl::memory::dims{s.n, 1});
  dnnl::memory::desc c_md({s.m, s.n}, dt::f32, dnnl::memory::dims{s.n, 1});
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  dnnl::matmul prim(pd);
  dnnl::memory a_mem(a_md, engine, op.a.get()), b_mem(b_md, engine, op.b.get()), c_mem(c_md, engine, op.c.get());
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}};
  for (auto _ : state) {
    prim.execute(stream, args);
    stream.wait();
    benchmark::DoNotOptimize(op.c.get());
    benchmark::ClobberMemory();
  }
  set_counters(state, s, threads);
  state.SetLabel(pd.impl_info_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("OpenBLAS: %s\n", openblas_get_config());
  const dnnl_version_t* v = dnnl_version();
  std::printf("oneDNN: %d.%d.%d (%s)\n", v->major, v->minor, v->patch, v->hash);
  for (int threads : {1, 2}) {
    for (const GemmShape& s : kShapes) {
      std::string suffix = std::string(s.name) + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("openblas_sgemm/" + suffix).c_str(), bench_openblas, s, threads)->UseRealTime();
      benchmark::RegisterBenchmark(("dnnl_sgemm/" + suffix).c_str(), bench_dnnl_sgemm, s, threads)->UseRealTime();
      benchmark::RegisterBenchmark(("dnnl_matmul/" + suffix).c_str(), bench_dnnl_matmul, s, threads)->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
