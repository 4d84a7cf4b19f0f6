#pragma once
// The trainer's view of a distributed job (`mpirun -np N ember train ...`): joining and leaving
// it, and the few numbers the ranks agree on. Alone (no MPI launcher), every function here is
// the identity and no collective runs, so single-process training is unchanged.
#include <cstdint>
#include <exception>
#include <vector>

#include "ember/data/dataloader.h"

namespace ember::train {

/// Joins the job for its lifetime when launched by mpirun (and not joined already), and leaves
/// it on a normal exit. After an exception it does not leave: MPI_Finalize waits for every rank,
/// and the others may be stuck; exiting without it makes mpirun stop them instead.
class JobScope {
 public:
  JobScope();
  ~JobScope();
  JobScope(const JobScope&) = delete;
  JobScope& operator=(const JobScope&) = delete;

 private:
  bool joined_ = false;
  int uncaught_ = 0;
};

int job_rank();
int job_size();
/// Rank 0 prints, logs and saves; the others only train.
inline bool is_writer() { return job_rank() == 0; }

/// Element-wise sums of `values` over the ranks (float64).
std::vector<double> sum_over_ranks(std::vector<double> values);
/// Element-wise "true on any rank".
std::vector<bool> any_rank(const std::vector<bool>& flags);

/// Where a loader saved by a job of `saved_ranks` ranks resumes in a job of `ranks` ranks. The
/// ranks of a job together consume an epoch's shuffled order front to back (batch k of every
/// rank covers entries k*B*N .. (k+1)*B*N - 1), so the saved position tells how much of the
/// epoch was done; the new position is the batch holding the first sample not yet trained on
/// (fewer than B*N samples are seen twice when the counts do not divide). An epoch's end stays
/// an epoch's end.
data::DataLoaderState resume_state(data::DataLoaderState saved, int64_t saved_ranks, int64_t ranks,
                                   int64_t saved_batches_per_epoch, int64_t batches_per_epoch);

}  // namespace ember::train
