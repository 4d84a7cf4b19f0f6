// ember::matmul against the BLAS it calls (oneDNN's sgemm) called directly on the same data, so the
// gap is ember's own cost: argument checks, allocating the output, dispatch and view handling.
// Shapes: the quickstart MLP's first layer (batch 64, 784 -> 512) as Linear issues it (x @ w.t())
// and in plain form, a large square product, two tiny ones, and Linear over a sequence batch
// ([32, 35, 256] @ w.t(), w [1024, 256]), which ember folds into one product of 1120 rows.
// The sequence also runs forward and backward, folded (what matmul does) and as the batch of
// products matmul ran before it folded (bmm with the weight expanded), to show what folding saves.
//
// Run with OMP_NUM_THREADS=1 and =2; repeat with --benchmark_repetitions=3. After the usual table
// the program prints ember/BLAS time ratios (medians when repeated).
#include <benchmark/benchmark.h>
#include <dnnl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ratio_reporter.h"

namespace {

struct Shape {
  const char* name;
  int64_t m, k, n;
  bool b_transposed;  // b is stored [n, k] and used through a transposed view, as Linear does
  int64_t batch = 1;  // ember's a is [batch, m / batch, k]; the BLAS multiplies all m rows at once
};

const Shape kShapes[] = {
    {"64x784x512_NT", 64, 784, 512, true},
    {"64x784x512_NN", 64, 784, 512, false},
    {"1024x1024x1024_NN", 1024, 1024, 1024, false},
    // Tiny products, where the per-call cost dominates (ember computes these without the BLAS).
    {"6x6x6_NN", 6, 6, 6, false},
    {"16x16x16_NN", 16, 16, 16, false},
    {"seq32x35x256x1024_NT", 32 * 35, 256, 1024, true, 32},
};

void set_flops(benchmark::State& state, const Shape& s) {
  state.counters["GFLOPS"] =
      benchmark::Counter(2e-9 * static_cast<double>(s.m * s.n * s.k), benchmark::Counter::kIsIterationInvariantRate);
}

void bench_ember(benchmark::State& state, Shape s) {
  ember::manual_seed(0);
  ember::Tensor a = s.batch > 1 ? ember::randn({s.batch, s.m / s.batch, s.k}) : ember::randn({s.m, s.k});
  ember::Tensor stored_b = s.b_transposed ? ember::randn({s.n, s.k}) : ember::randn({s.k, s.n});
  ember::Tensor b = s.b_transposed ? stored_b.t() : stored_b;
  for (auto _ : state) {
    ember::Tensor c = ember::matmul(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, s);
}

void bench_blas(benchmark::State& state, Shape s) {
  ember::manual_seed(0);
  ember::Tensor a = ember::randn({s.m, s.k});
  ember::Tensor b = s.b_transposed ? ember::randn({s.n, s.k}) : ember::randn({s.k, s.n});
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  for (auto _ : state) {
    dnnl_status_t status = dnnl_sgemm('N', s.b_transposed ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data_ptr<float>(), s.k,
                                      b.data_ptr<float>(), s.b_transposed ? s.k : s.n, 0.0f, c.data(), s.n);
    if (status != dnnl_success) {
      state.SkipWithError("dnnl_sgemm failed");
      break;
    }
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_flops(state, s);
}

/// Linear's product over a sequence batch, forward and backward: folded into one product (as
/// matmul runs it) or as a batch of products with the weight expanded (as it ran before).
void bench_sequence_fwd_bwd(benchmark::State& state, bool folded) {
  const Shape& s = kShapes[5];
  ember::manual_seed(0);
  ember::Tensor x = ember::randn({s.batch, s.m / s.batch, s.k}).requires_grad_();
  ember::Tensor w = ember::randn({s.n, s.k}).requires_grad_();
  ember::Tensor g = ember::randn({s.batch, s.m / s.batch, s.n});
  for (auto _ : state) {
    ember::Tensor y = folded ? ember::matmul(x, w.t()) : ember::bmm(x, w.t().expand({s.batch, s.k, s.n}));
    y.backward(g);
    x.set_grad(ember::Tensor());
    w.set_grad(ember::Tensor());
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["GFLOPS"] = benchmark::Counter(3 * 2e-9 * static_cast<double>(s.m * s.n * s.k),
                                                benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Shape& s : kShapes) {
    benchmark::RegisterBenchmark((std::string("ember_matmul/") + s.name).c_str(), bench_ember, s)->UseRealTime();
    benchmark::RegisterBenchmark((std::string("dnnl_sgemm/") + s.name).c_str(), bench_blas, s)->UseRealTime();
  }
  benchmark::RegisterBenchmark("linear_seq_fwd_bwd/folded", bench_sequence_fwd_bwd, true)->UseRealTime();
  benchmark::RegisterBenchmark("linear_seq_fwd_bwd/batched", bench_sequence_fwd_bwd, false)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ember_bench::RatioReporter reporter("ember / BLAS", "ember_matmul", "dnnl_sgemm", "median", 20);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
