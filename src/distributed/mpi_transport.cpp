// The MPI transport: the job's rendezvous (rank, size, ranks per machine) and the collectives on
// CPU tensors, all started non-blocking so that distributed.cpp decides how long to wait.
//
// Beside the communicator for collectives, a second one carries questions between ranks: a rank
// whose collective timed out asks every other rank which collective it is waiting in, and ranks
// answer while they wait (mpi_serve_status). That is how a timeout names the ranks that never
// arrived, without any message on the path of a collective that succeeds.
#if defined(EMBER_HAVE_MPI)
#include <mpi.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <list>
#include <sstream>
#include <thread>

#include "core/check.h"
#include "distributed/transport.h"

namespace ember::distributed::detail {

namespace {

MPI_Comm g_comm = MPI_COMM_NULL;    // collectives
MPI_Comm g_status = MPI_COMM_NULL;  // "where are you?" questions and their answers
bool g_initialised_mpi = false;     // false when the program had initialised MPI itself
int g_rank = 0, g_size = 1;

constexpr int kQuestionTag = 1;
constexpr int kAnswerTag = 2;
uint64_t g_question = 0;  // the receive buffer of the standing receive for questions
MPI_Request g_question_request = MPI_REQUEST_NULL;
struct Answer {
  uint64_t value = 0;
  MPI_Request request = MPI_REQUEST_NULL;
};
std::list<Answer> g_answers;  // answers being sent; their buffers must stay put until then

// A collective splits tensors of more than INT_MAX elements (MPI counts are ints) into pieces.
constexpr int64_t kMaxPiece = int64_t{1} << 30;

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  ember::detail::fail("distributed: ", call, " failed: ", std::string(text, static_cast<size_t>(length)));
}

// The MPI type of an element. Reductions need the arithmetic type; copies (broadcast, gather)
// only the size, so 16-bit floating types travel as 16-bit integers there.
MPI_Datatype mpi_type(Dtype d, bool copy_only = false) {
  if (copy_only && (d == kFloat16 || d == kBFloat16)) return MPI_UINT16_T;
  switch (d) {
    case kBool:
    case kUInt8:
      return MPI_UINT8_T;
    case kInt8:
      return MPI_INT8_T;
    case kInt16:
      return MPI_INT16_T;
    case kInt32:
      return MPI_INT32_T;
    case kInt64:
      return MPI_INT64_T;
    case kFloat32:
      return MPI_FLOAT;
    case kFloat64:
      return MPI_DOUBLE;
    default:
      break;
  }
  ember::detail::fail("distributed: MPI cannot carry ", dtype_name(d),
                      " tensors directly (internal error: widen them first)");
}

// Bool tensors hold 0 or 1 in a byte; PyTorch reduces them with max for sum and min for product.
MPI_Op mpi_op(ReduceOp op, Dtype d) {
  if (d == kBool) return op == ReduceOp::Sum || op == ReduceOp::Max ? MPI_MAX : MPI_MIN;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return MPI_SUM;
    case ReduceOp::Product:
      return MPI_PROD;
    case ReduceOp::Min:
      return MPI_MIN;
    case ReduceOp::Max:
      return MPI_MAX;
  }
  return MPI_SUM;
}

struct MpiWork final : Work::State {
  std::vector<MPI_Request> requests;
  std::vector<int> counts, displacements;  // Iallgatherv reads these until it completes

  bool poll() override {
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    return done != 0;
  }
  // A started collective cannot be cancelled in MPI; the group is unusable from here on.
};

void post_question_receive() {
  check(MPI_Irecv(&g_question, 1, MPI_UINT64_T, MPI_ANY_SOURCE, kQuestionTag, g_status, &g_question_request),
        "MPI_Irecv");
}

void forget_sent_answers() {
  for (auto it = g_answers.begin(); it != g_answers.end();) {
    int done = 0;
    MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
    it = done ? g_answers.erase(it) : std::next(it);
  }
}

template <typename Start>
std::unique_ptr<Work::State> in_pieces(const Tensor& tensor, Start&& start_piece) {
  auto work = std::make_unique<MpiWork>();
  work->keep_alive.push_back(tensor);
  const int64_t n = tensor.numel();
  auto* base = static_cast<char*>(tensor.data_ptr());
  const size_t element = element_size(tensor.dtype());
  // At least one piece, so that an empty tensor still takes part in the collective.
  int64_t first = 0;
  do {
    const int count = static_cast<int>(std::min(kMaxPiece, n - first));
    work->requests.push_back(MPI_REQUEST_NULL);
    start_piece(base + static_cast<size_t>(first) * element, count, &work->requests.back());
    first += kMaxPiece;
  } while (first < n);
  return work;
}

// Open MPI's non-blocking all-reduce (coll/libnbc) picks recursive doubling or a binomial tree
// on its own; on 2 ranks that measured 2.4x slower than its ring for 1 and 64 MiB buffers, while
// the ring matched blocking MPI_Allreduce (bench/bench_allreduce.cpp, docs/DISTRIBUTED.md). The
// ring's latency grows with the ranks, so larger jobs get Rabenseifner's algorithm, which is
// bandwidth-optimal too. Read by MPI_Init, so only when ember initialises MPI, and never over the
// user's own choice. Other MPI libraries ignore the variable.
void choose_nonblocking_allreduce() {
  const char* ranks = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (ranks == nullptr) return;
  ::setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", std::atoi(ranks) <= 8 ? "1" : "3", /*overwrite=*/0);
}

}  // namespace

bool mpi_built() { return true; }

Membership mpi_init() {
  int already = 0;
  check(MPI_Initialized(&already), "MPI_Initialized");
  if (!already) {
    choose_nonblocking_allreduce();
    // Collectives may be started from any one thread at a time (the trainer's, a test's).
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    g_initialised_mpi = true;
  }
  // Private communicators, so ember's messages never meet the program's own MPI traffic, and
  // errors that come back as codes rather than aborting the job.
  check(MPI_Comm_dup(MPI_COMM_WORLD, &g_comm), "MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &g_status), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(g_status, MPI_ERRORS_RETURN);
  Membership m;
  check(MPI_Comm_rank(g_comm, &m.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(g_comm, &m.size), "MPI_Comm_size");
  MPI_Comm local = MPI_COMM_NULL;
  check(MPI_Comm_split_type(g_comm, MPI_COMM_TYPE_SHARED, m.rank, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  MPI_Comm_rank(local, &m.local_rank);
  MPI_Comm_size(local, &m.local_size);
  MPI_Comm_free(&local);
  g_rank = m.rank;
  g_size = m.size;
  post_question_receive();
  return m;
}

void mpi_finalize() {
  if (g_question_request != MPI_REQUEST_NULL) {
    MPI_Cancel(&g_question_request);
    MPI_Wait(&g_question_request, MPI_STATUS_IGNORE);
  }
  for (Answer& a : g_answers) MPI_Wait(&a.request, MPI_STATUS_IGNORE);
  g_answers.clear();
  if (g_status != MPI_COMM_NULL) MPI_Comm_free(&g_status);
  if (g_comm != MPI_COMM_NULL) MPI_Comm_free(&g_comm);
  if (g_initialised_mpi) MPI_Finalize();
  g_initialised_mpi = false;
}

std::unique_ptr<Work::State> mpi_all_reduce(const Tensor& tensor, ReduceOp op) {
  const MPI_Datatype type = mpi_type(tensor.dtype());
  const MPI_Op mop = mpi_op(op, tensor.dtype());
  return in_pieces(tensor, [&](void* data, int count, MPI_Request* request) {
    check(MPI_Iallreduce(MPI_IN_PLACE, data, count, type, mop, g_comm, request), "MPI_Iallreduce");
  });
}

std::unique_ptr<Work::State> mpi_broadcast(const Tensor& tensor, int root) {
  const MPI_Datatype type = mpi_type(tensor.dtype(), /*copy_only=*/true);
  return in_pieces(tensor, [&](void* data, int count, MPI_Request* request) {
    check(MPI_Ibcast(data, count, type, root, g_comm, request), "MPI_Ibcast");
  });
}

std::unique_ptr<Work::State> mpi_all_gather(const Tensor& input, const Tensor& output,
                                            const std::vector<int64_t>& counts) {
  auto work = std::make_unique<MpiWork>();
  work->keep_alive = {input, output};
  int64_t total = 0;
  for (int64_t c : counts) {
    work->counts.push_back(static_cast<int>(c));
    work->displacements.push_back(static_cast<int>(total));
    total += c;
  }
  EMBER_CHECK(total <= INT_MAX, "distributed.all_gather: gathering ", total,
              " elements in all is more than MPI's count limit of ", INT_MAX, "; gather in parts");
  const MPI_Datatype type = mpi_type(input.dtype(), /*copy_only=*/true);
  work->requests.push_back(MPI_REQUEST_NULL);
  check(MPI_Iallgatherv(input.data_ptr(), static_cast<int>(input.numel()), type, output.data_ptr(), work->counts.data(),
                        work->displacements.data(), type, g_comm, &work->requests.back()),
        "MPI_Iallgatherv");
  return work;
}

std::unique_ptr<Work::State> mpi_barrier() {
  auto work = std::make_unique<MpiWork>();
  work->requests.push_back(MPI_REQUEST_NULL);
  check(MPI_Ibarrier(g_comm, &work->requests.back()), "MPI_Ibarrier");
  return work;
}

void mpi_serve_status(uint64_t seq) {
  if (g_question_request == MPI_REQUEST_NULL) return;
  for (;;) {
    int asked = 0;
    MPI_Status status;
    if (MPI_Test(&g_question_request, &asked, &status) != MPI_SUCCESS || !asked) break;
    Answer& answer = g_answers.emplace_back();
    answer.value = seq;
    MPI_Isend(&answer.value, 1, MPI_UINT64_T, status.MPI_SOURCE, kAnswerTag, g_status, &answer.request);
    post_question_receive();
  }
  if (!g_answers.empty()) forget_sent_answers();
}

std::string mpi_who_is_missing(uint64_t seq, std::chrono::milliseconds grace) {
  const auto deadline = std::chrono::steady_clock::now() + grace;
  std::vector<uint64_t> questions(static_cast<size_t>(g_size), seq), answers(static_cast<size_t>(g_size), 0);
  std::vector<MPI_Request> sent(static_cast<size_t>(g_size), MPI_REQUEST_NULL);
  std::vector<MPI_Request> received(static_cast<size_t>(g_size), MPI_REQUEST_NULL);
  std::vector<bool> answered(static_cast<size_t>(g_size), false);
  for (int r = 0; r < g_size; ++r) {
    if (r == g_rank) continue;
    const auto i = static_cast<size_t>(r);
    MPI_Isend(&questions[i], 1, MPI_UINT64_T, r, kQuestionTag, g_status, &sent[i]);
    MPI_Irecv(&answers[i], 1, MPI_UINT64_T, r, kAnswerTag, g_status, &received[i]);
  }
  int waiting = g_size - 1;
  while (waiting > 0 && std::chrono::steady_clock::now() < deadline) {
    mpi_serve_status(seq);  // the others may be asking too
    for (int r = 0; r < g_size; ++r) {
      const auto i = static_cast<size_t>(r);
      if (r == g_rank || answered[i]) continue;
      int done = 0;
      MPI_Test(&received[i], &done, MPI_STATUS_IGNORE);
      if (done) {
        answered[i] = true;
        --waiting;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::ostringstream behind, silent;
  int n_behind = 0, n_silent = 0;
  for (int r = 0; r < g_size; ++r) {
    const auto i = static_cast<size_t>(r);
    if (r == g_rank) continue;
    if (!answered[i]) {
      MPI_Cancel(&received[i]);
      MPI_Request_free(&received[i]);
      silent << (n_silent++ ? ", " : "") << r;
    } else if (answers[i] < seq) {
      behind << (n_behind++ ? ", " : "") << r << " (waiting in collective #" << answers[i] << ")";
    }
    if (sent[i] != MPI_REQUEST_NULL) MPI_Request_free(&sent[i]);
  }
  std::ostringstream out;
  if (n_silent + n_behind == 0) {
    out << "every other rank has reached it, so the transport itself is stuck";
    return out.str();
  }
  out << (n_silent + n_behind == 1 ? "rank " : "ranks ");
  if (n_silent) out << silent.str();
  if (n_silent && n_behind) out << " and ";
  if (n_behind) out << behind.str();
  out << " did not arrive";
  if (n_silent) {
    out << " (" << (n_silent == 1 ? "rank " : "ranks ") << silent.str() << " did not answer within "
        << static_cast<double>(grace.count()) / 1000.0
        << " s: busy outside any collective, stuck, or no longer running)";
  }
  return out.str();
}

}  // namespace ember::distributed::detail
#endif  // EMBER_HAVE_MPI
