#include "train/job.h"

#include "ember/distributed.h"
#include "ember/factories.h"

namespace ember::train {

JobScope::JobScope() : uncaught_(std::uncaught_exceptions()) {
  if (distributed::launched_by_mpi() && !distributed::is_initialized()) {
    distributed::init();
    joined_ = true;
  }
}

JobScope::~JobScope() {
  if (joined_ && std::uncaught_exceptions() == uncaught_) distributed::finalize();
}

int job_rank() { return distributed::is_initialized() ? distributed::rank() : 0; }
int job_size() { return distributed::is_initialized() ? distributed::world_size() : 1; }

std::vector<double> sum_over_ranks(std::vector<double> values) {
  if (job_size() == 1 || values.empty()) return values;
  const Tensor t = tensor(values, TensorOptions().dtype(kFloat64));
  distributed::all_reduce(t, distributed::ReduceOp::Sum);
  for (size_t i = 0; i < values.size(); ++i) values[i] = t.data_ptr<double>()[i];
  return values;
}

std::vector<bool> any_rank(const std::vector<bool>& flags) {
  if (job_size() == 1 || flags.empty()) return flags;
  std::vector<int64_t> ints(flags.begin(), flags.end());
  const Tensor t = tensor(ints);
  distributed::all_reduce(t, distributed::ReduceOp::Max);
  std::vector<bool> out;
  for (size_t i = 0; i < flags.size(); ++i) out.push_back(t.data_ptr<int64_t>()[i] != 0);
  return out;
}

data::DataLoaderState resume_state(data::DataLoaderState saved, int64_t saved_ranks, int64_t ranks,
                                   int64_t saved_batches_per_epoch, int64_t batches_per_epoch) {
  if (saved_ranks == ranks) return saved;
  if (saved.position >= saved_batches_per_epoch) return {saved.epoch, batches_per_epoch};
  // Both jobs use the same batch size per rank, so positions scale with the rank counts.
  return {saved.epoch, std::min(batches_per_epoch, saved.position * saved_ranks / ranks)};
}

}  // namespace ember::train
