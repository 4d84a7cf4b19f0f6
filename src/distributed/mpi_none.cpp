// The MPI transport in a build without MPI: a job of one process. distributed::init() refuses to
// run under an MPI launcher here (it checks mpi_built() first), so only mpi_built() and the
// finalisation are ever reached.
#if !defined(EMBER_HAVE_MPI)
#include "core/check.h"
#include "distributed/transport.h"

namespace ember::distributed::detail {

namespace {
[[noreturn]] void unavailable() {
  ember::detail::fail(
      "distributed: this build of ember has no MPI. Install Open MPI (Debian: apt-get install libopenmpi-dev "
      "openmpi-bin) and rebuild ember.");
}
}  // namespace

bool mpi_built() { return false; }
Membership mpi_init() { unavailable(); }
void mpi_finalize() {}
std::unique_ptr<Work::State> mpi_all_reduce(const Tensor&, ReduceOp) { unavailable(); }
std::unique_ptr<Work::State> mpi_broadcast(const Tensor&, int) { unavailable(); }
std::unique_ptr<Work::State> mpi_all_gather(const Tensor&, const Tensor&, const std::vector<int64_t>&) {
  unavailable();
}
std::unique_ptr<Work::State> mpi_barrier() { unavailable(); }
void mpi_serve_status(uint64_t) {}
std::string mpi_who_is_missing(uint64_t, std::chrono::milliseconds) { return {}; }

}  // namespace ember::distributed::detail
#endif  // !EMBER_HAVE_MPI
