// All-reduce bandwidth on CPU tensors, run under mpirun:
//   mpirun -np 2 build/bench/bench_allreduce [repetitions]
// For each buffer size it times ember's distributed::all_reduce (float32 sum) against MPI's own
// MPI_Allreduce and MPI_Iallreduce + MPI_Wait on the same buffer, and prints, on rank 0, the
// median time and the bus bandwidth (2 (n-1)/n bytes per rank per reduction, the figure NCCL's
// tests report, comparable across rank counts).
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "ember/ember.h"

namespace {

double median_seconds(int repetitions, const std::function<void()>& reduce) {
  reduce();  // warm-up: first-touch pages, MPI's connection set-up
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    reduce();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // The slowest rank decides when a reduction is done.
  std::vector<double> slowest(times.size());
  MPI_Allreduce(times.data(), slowest.data(), static_cast<int>(times.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  std::sort(slowest.begin(), slowest.end());
  return slowest[slowest.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  ember::distributed::init();
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 20;
  const int rank = ember::distributed::rank(), ranks = ember::distributed::world_size();
  if (rank == 0) {
    std::printf("all_reduce of float32 (sum), %d ranks, median of %d; busbw = 2(n-1)/n * bytes / time\n", ranks,
                repetitions);
    std::printf("%-10s %-22s %12s %12s\n", "bytes", "method", "time (ms)", "busbw (GB/s)");
  }
  for (const int64_t bytes : {int64_t{1} << 20, int64_t{64} << 20}) {
    const int64_t n = bytes / 4;
    ember::Tensor t = ember::ones({n});
    auto* data = t.data_ptr<float>();
    const int count = static_cast<int>(n);
    const std::vector<std::pair<const char*, std::function<void()>>> methods = {
        {"ember all_reduce", [&] { ember::distributed::all_reduce(t); }},
        {"MPI_Allreduce", [&] { MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); }},
        {"MPI_Iallreduce+Wait",
         [&] {
           MPI_Request request;
           MPI_Iallreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
           MPI_Wait(&request, MPI_STATUS_IGNORE);
         }},
    };
    for (const auto& [name, reduce] : methods) {
      t.fill_(1.0);
      const double seconds = median_seconds(repetitions, reduce);
      const double busbw = 2.0 * (ranks - 1) / ranks * static_cast<double>(bytes) / seconds / 1e9;
      if (rank == 0)
        std::printf("%-10lld %-22s %12.3f %12.2f\n", static_cast<long long>(bytes), name, seconds * 1e3, busbw);
    }
  }
  ember::distributed::finalize();
  return 0;
}
