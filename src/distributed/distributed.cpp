// ember::distributed's public API: the job's state, argument checks, job-wide sequence numbers,
// and the one wait loop every collective goes through, which turns a hang into an error.
// The transports (transport.h) only start collectives and report progress.
#include "ember/distributed.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "distributed/transport.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/threads.h"

namespace ember::distributed {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kDefaultTimeout{30 * 60 * 1000};  // torch.distributed's default_pg_timeout
// After a timeout, how long the other ranks get to say where they are.
constexpr milliseconds kStatusGrace{3000};

struct World {
  bool initialized = false;
  bool uses_mpi = false;
  detail::Membership members;
  milliseconds timeout = kDefaultTimeout;
  uint64_t next_seq = 0;  // collectives started so far, the same count on every rank
  std::string broken;     // set by a timed-out collective: why the group is unusable
};

World g_world;

milliseconds timeout_from_environment() {
  const char* text = std::getenv("EMBER_DIST_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  EMBER_CHECK(end != text && *end == '\0' && seconds > 0, "EMBER_DIST_TIMEOUT='", text,
              "' is not a positive number of seconds");
  return milliseconds(static_cast<int64_t>(seconds * 1000));
}

void require_usable(const char* collective) {
  EMBER_CHECK(g_world.initialized, "distributed.", collective,
              ": the process group is not initialised; call ember::distributed::init() first");
  if (g_world.broken.empty()) g_world.broken = detail::nccl_failure();
  EMBER_CHECK(g_world.broken.empty(), "distributed.", collective,
              ": the process group can no longer be used: ", g_world.broken);
}

void check_tensor(const char* collective, const Tensor& t) {
  ember::detail::check_defined(t, collective);
  EMBER_CHECK(t.is_contiguous(), "distributed.", collective, ": Tensors must be contiguous (got ",
              detail::short_dtype_name(t.dtype()), " ", ember::detail::shape_str(t.sizes()), " with strides ",
              ember::detail::shape_str(t.strides()), "); pass tensor.contiguous() and copy the result back");
  EMBER_CHECK(!(t.requires_grad() && GradMode::is_enabled()), "distributed.", collective,
              ": a tensor that requires grad cannot be changed in place; call it under NoGradGuard or on "
              "tensor.detach()");
  EMBER_CHECK(t.device().is_cpu() || t.device().is_cuda(), "distributed.", collective, ": tensors on ", t.device(),
              " are not supported (cpu through MPI, cuda through NCCL)");
}

std::string describe_tensor(const Tensor& t) {
  std::ostringstream s;
  s << detail::short_dtype_name(t.dtype()) << " " << ember::detail::shape_str(t.sizes()) << " on " << t.device();
  return s.str();
}

// The first polls spin (a shared-memory collective of a few KiB finishes in microseconds);
// after that the waiting rank yields and then sleeps, so that it does not take a core from
// another rank of the same job on an oversubscribed machine.
void back_off(int round) {
  if (round < 64) return;
  if (round < 1024) {
    sched_yield();
    return;
  }
  std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 50 * (round / 1024))));
}

// Ranks on one machine that each start a thread per CPU oversubscribe it (mpirun binds ranks to
// cores only up to two ranks; past that, or with --oversubscribe, every rank sees every CPU).
// As torchrun does, a rank then takes its share, unless OMP_NUM_THREADS says otherwise.
void share_cpus(int local_ranks) {
  if (local_ranks <= 1 || std::getenv("OMP_NUM_THREADS") != nullptr) return;
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int share = std::max(1, cpus / local_ranks);
  if (get_num_threads() > share) set_num_threads(share);
}

[[noreturn]] void fail_timeout(Work::State& state) {
  state.abandon();
  std::string missing;
  if (g_world.uses_mpi) missing = detail::mpi_who_is_missing(state.seq, std::min(kStatusGrace, g_world.timeout));
  std::ostringstream message;
  message << "distributed: " << state.what << " timed out after " << detail::seconds_text(g_world.timeout)
          << " on rank " << g_world.members.rank << " of " << g_world.members.size;
  if (!missing.empty()) message << ": " << missing;
  message << ". Every rank must call the same collectives in the same order; a rank that stopped or is much "
             "slower shows up here. Raise the limit with EMBER_DIST_TIMEOUT=<seconds> or "
             "distributed::set_timeout() if the work between collectives is that long.";
  g_world.broken = state.what + " timed out on this rank";
  ember::detail::fail(message.str());
}

void wait_for(Work::State& state) {
  if (state.finished) return;
  const Clock::time_point deadline = Clock::now() + g_world.timeout;
  for (int round = 0; !state.poll(); ++round) {
    if (g_world.uses_mpi) detail::mpi_serve_status(state.seq);
    if ((round & 63) == 0 && Clock::now() >= deadline) fail_timeout(state);
    back_off(round);
  }
  state.finished = true;
  state.keep_alive.clear();
  if (state.then) {
    NoGradGuard no_grad;
    auto then = std::move(state.then);
    then();
  }
}

// A Work dropped (destroyed or assigned over) before it finished: its buffers must outlive the
// transport's use of them, so it is waited for. Neither place can throw: a timeout here is
// reported by the next collective, as the group is then marked broken.
void finish_quietly(Work::State* state) noexcept {
  if (state == nullptr || state->finished || !g_world.broken.empty()) return;
  try {
    wait_for(*state);
  } catch (...) {
  }
}

// A collective that needed no transport (a world of one): already finished.
struct DoneState final : Work::State {
  bool poll() override { return true; }
};

std::unique_ptr<Work::State> done() { return std::make_unique<DoneState>(); }

// A collective's name and its number in the job; every rank numbers its collectives alike.
struct Label {
  std::string what;
  uint64_t seq = 0;
};

Label label(const char* collective, const Tensor& t, const char* extra = nullptr) {
  Label l;
  l.seq = g_world.next_seq++;
  std::ostringstream s;
  s << collective << " #" << l.seq << " of " << describe_tensor(t);
  if (extra != nullptr) s << " (" << extra << ")";
  l.what = s.str();
  return l;
}

Work start(std::unique_ptr<Work::State> state, Label label) {
  state->what = std::move(label.what);
  state->seq = label.seq;
  return Work(std::move(state));
}

bool is_half(Dtype d) { return d == kFloat16 || d == kBFloat16; }

}  // namespace

namespace detail {

std::string_view short_dtype_name(Dtype d) { return dtype_name(d).substr(dtype_name(d).find('.') + 1); }

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Product:
      return "product";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

std::string seconds_text(milliseconds d) {
  std::ostringstream s;
  s << static_cast<double>(d.count()) / 1000.0 << " s";
  return s.str();
}

}  // namespace detail

// ---- Work ----

Work::Work() = default;
Work::Work(std::unique_ptr<State> state) : state_(std::move(state)) {}
Work::Work(Work&&) noexcept = default;
Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    finish_quietly(state_.get());
    state_ = std::move(other.state_);
  }
  return *this;
}
Work::~Work() { finish_quietly(state_.get()); }

bool Work::is_completed() {
  EMBER_CHECK(state_ != nullptr, "distributed::Work: this Work holds no collective");
  if (state_->finished) return true;
  if (!state_->poll()) return false;
  wait_for(*state_);  // runs its finishing step
  return true;
}

void Work::wait() {
  EMBER_CHECK(state_ != nullptr, "distributed::Work: this Work holds no collective");
  EMBER_CHECK(state_->finished || g_world.broken.empty(), "distributed: ", state_->what,
              " cannot finish: the process group can no longer be used: ", g_world.broken);
  wait_for(*state_);
}

// ---- the job ----

bool is_available() { return detail::mpi_built(); }

bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

void init(const InitOptions& options) {
  EMBER_CHECK(!g_world.initialized, "distributed.init: the process group is already initialised");
  const milliseconds timeout = options.timeout.count() > 0 ? options.timeout : timeout_from_environment();
  World world;
  world.timeout = timeout;
  if (launched_by_mpi()) {
    EMBER_CHECK(detail::mpi_built(),
                "distributed.init: this process was started by an MPI launcher, but this build of ember has no MPI. "
                "Install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin) and rebuild ember.");
    world.members = detail::mpi_init();
    world.uses_mpi = true;
    share_cpus(world.members.local_size);
  }
  world.initialized = true;
  g_world = world;
}

bool is_initialized() { return g_world.initialized; }

void finalize() {
  if (!g_world.initialized) return;
  const bool uses_mpi = g_world.uses_mpi;
  g_world = World{};
  if (!uses_mpi) return;
  // MPI is finalised even when tearing NCCL down fails: the job waits for every rank there.
  std::exception_ptr nccl_error;
  try {
    detail::nccl_finalize();
  } catch (...) {
    nccl_error = std::current_exception();
  }
  detail::mpi_finalize();
  if (nccl_error) std::rethrow_exception(nccl_error);
}

int rank() { return g_world.members.rank; }
int world_size() { return g_world.members.size; }
int local_rank() { return g_world.members.local_rank; }
int local_world_size() { return g_world.members.local_size; }

Device default_device() {
  if (!cuda::is_available()) return Device(kCPU);
  return Device(kCUDA, g_world.members.local_rank % cuda::device_count());
}

milliseconds timeout() { return g_world.timeout; }
void set_timeout(milliseconds timeout) {
  EMBER_CHECK(timeout.count() > 0, "distributed.set_timeout: the timeout must be positive, got ", timeout.count(),
              " ms");
  g_world.timeout = timeout;
}

std::string describe() {
  std::ostringstream s;
  s << "rank " << rank() << " of " << world_size() << " (" << local_rank() << " of " << local_world_size()
    << " on this machine)";
  return s.str();
}

// ---- collectives ----

Work all_reduce_async(const Tensor& tensor, ReduceOp op) {
  require_usable("all_reduce");
  check_tensor("all_reduce", tensor);
  const Dtype dtype = tensor.dtype();
  EMBER_CHECK(op != ReduceOp::Avg || is_floating_point(dtype), "distributed.all_reduce: ReduceOp::Avg needs a ",
              "floating-point tensor, got ", detail::short_dtype_name(dtype), "; reduce with Sum and divide");
  Label what = label("all_reduce", tensor, detail::reduce_op_name(op));
  const int size = g_world.members.size;
  if (size == 1) return start(done(), what);

  if (tensor.device().is_cuda()) {
    EMBER_CHECK(detail::nccl_built(),
                "distributed.all_reduce: cuda tensors need NCCL, which this build lacks; "
                "rebuild with the CUDA toolkit's NCCL, or move the tensor to the CPU");
    return start(detail::nccl_all_reduce(tensor, op, g_world.members), what);
  }
  // MPI has no 16-bit floating types: they are reduced in float32, which also rounds once
  // instead of once per rank.
  const Tensor wire = is_half(dtype) ? tensor.to(kFloat32) : tensor;
  std::unique_ptr<Work::State> state = detail::mpi_all_reduce(wire, op == ReduceOp::Avg ? ReduceOp::Sum : op);
  state->keep_alive.push_back(wire);
  if (op == ReduceOp::Avg || is_half(dtype)) {
    state->then = [target = Tensor(tensor), sum = Tensor(wire), op, size]() mutable {
      if (op == ReduceOp::Avg) sum.div_(scalar_tensor(static_cast<double>(size), TensorOptions().dtype(sum.dtype())));
      if (!sum.is_same(target)) target.copy_(sum);
    };
  }
  return start(std::move(state), what);
}

void all_reduce(const Tensor& tensor, ReduceOp op) { all_reduce_async(tensor, op).wait(); }

void broadcast(const Tensor& tensor, int root) {
  require_usable("broadcast");
  check_tensor("broadcast", tensor);
  const int size = g_world.members.size;
  EMBER_CHECK(root >= 0 && root < size, "distributed.broadcast: root rank ", root, " is not in [0, ", size - 1, "]");
  const std::string extra = "from rank " + std::to_string(root);
  Label what = label("broadcast", tensor, extra.c_str());
  if (size == 1) return;
  if (tensor.device().is_cuda()) {
    EMBER_CHECK(detail::nccl_built(), "distributed.broadcast: cuda tensors need NCCL, which this build lacks");
    start(detail::nccl_broadcast(tensor, root, g_world.members), what).wait();
    return;
  }
  start(detail::mpi_broadcast(tensor, root), what).wait();
}

std::vector<Tensor> all_gather(const Tensor& tensor) {
  require_usable("all_gather");
  ember::detail::check_defined(tensor, "all_gather");
  EMBER_CHECK(tensor.dim() >= 1, "distributed.all_gather: the tensor needs at least one dimension (ranks may ",
              "differ in the first), got a 0-dim tensor; use tensor.reshape({1})");
  const Tensor input = tensor.detach().contiguous();
  check_tensor("all_gather", input);
  const int size = g_world.members.size;
  if (size == 1) {
    ++g_world.next_seq;
    return {input.clone()};
  }

  // First every rank's shape, so that uneven first dimensions and mismatched rest are known.
  const int64_t dim = input.dim();
  Tensor shape = empty({dim + 1}, TensorOptions().dtype(kInt64));
  shape.data_ptr<int64_t>()[0] = dim;
  for (int64_t d = 0; d < dim; ++d) shape.data_ptr<int64_t>()[d + 1] = input.size(d);
  const Tensor shapes = empty({size * (dim + 1)}, TensorOptions().dtype(kInt64));
  {
    Label what = label("all_gather", shape, "shapes");
    start(detail::mpi_all_gather(shape, shapes, std::vector<int64_t>(static_cast<size_t>(size), dim + 1)), what).wait();
  }
  const int64_t* all = shapes.data_ptr<int64_t>();
  std::vector<int64_t> rows(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const int64_t* s = all + r * (dim + 1);
    bool same = s[0] == dim;
    for (int64_t d = 1; same && d < dim; ++d) same = s[d + 1] == input.size(d);
    EMBER_CHECK(same, "distributed.all_gather: rank ", r, "'s tensor has a different shape from rank ", rank(), "'s ",
                ember::detail::shape_str(input.sizes()), "; ranks may differ in the first dimension only");
    rows[static_cast<size_t>(r)] = s[1];
  }
  int64_t row_elems = 1;
  for (int64_t d = 1; d < dim; ++d) row_elems *= input.size(d);

  Dims out_sizes(input.sizes());
  const int64_t total_rows = [&] {
    int64_t n = 0;
    for (int64_t r : rows) n += r;
    return n;
  }();
  std::vector<Tensor> result;
  if (input.device().is_cuda()) {
    EMBER_CHECK(detail::nccl_built(), "distributed.all_gather: cuda tensors need NCCL, which this build lacks");
    // NCCL gathers equal sizes: every rank sends its rows padded to the longest.
    const int64_t longest = *std::max_element(rows.begin(), rows.end());
    out_sizes[0] = longest;
    Tensor padded = zeros(out_sizes, TensorOptions().dtype(input.dtype()).device(input.device()));
    if (input.size(0) > 0) padded.narrow(0, 0, input.size(0)).copy_(input);
    out_sizes[0] = longest * size;
    const Tensor gathered = empty(out_sizes, TensorOptions().dtype(input.dtype()).device(input.device()));
    Label what = label("all_gather", input);
    start(detail::nccl_all_gather(padded, gathered, g_world.members), what).wait();
    for (int r = 0; r < size; ++r) result.push_back(gathered.narrow(0, r * longest, rows[static_cast<size_t>(r)]));
    return result;
  }
  out_sizes[0] = total_rows;
  const Tensor gathered = empty(out_sizes, TensorOptions().dtype(input.dtype()));
  std::vector<int64_t> counts;
  for (int64_t r : rows) counts.push_back(r * row_elems);
  Label what = label("all_gather", input);
  start(detail::mpi_all_gather(input, gathered, counts), what).wait();
  int64_t first = 0;
  for (int64_t r : rows) {
    result.push_back(gathered.narrow(0, first, r));
    first += r;
  }
  return result;
}

void barrier() {
  require_usable("barrier");
  const Label what{"barrier #" + std::to_string(g_world.next_seq), g_world.next_seq};
  ++g_world.next_seq;
  if (g_world.members.size == 1) return;
  start(detail::mpi_barrier(), what).wait();
}

}  // namespace ember::distributed
