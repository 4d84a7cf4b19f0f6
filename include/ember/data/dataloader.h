#pragma once
/// ember::data::DataLoader: batches of a Dataset in a seeded order, loaded ahead on a worker thread.
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "ember/data/dataset.h"

namespace ember::data {

struct DataLoaderOptions {
  /// Samples per batch; the last batch of an epoch may be smaller unless drop_last is set.
  int64_t batch_size = 1;
  /// Visit the samples in a new random order every epoch.
  bool shuffle = false;
  /// With shuffle, epoch e visits the samples in the order shuffled_order(size, seed, e): it
  /// depends on nothing else (not on ember::manual_seed), so a run can be replayed or resumed.
  uint64_t seed = 0;
  /// Leave out the last batch of an epoch when it would be smaller than batch_size.
  bool drop_last = false;
  /// Data-parallel sharding, as torch.utils.data.distributed.DistributedSampler with drop_last=False:
  /// the loader hands out only replica `rank`'s share of each epoch's order, replica_order(order,
  /// num_replicas, rank), so each of the num_replicas processes of a job trains on its own
  /// ceil(size / num_replicas) samples per epoch. batch_size and drop_last then apply to that share.
  int64_t num_replicas = 1;
  int64_t rank = 0;
  /// Batches a worker thread loads ahead of the consumer. 0 loads each batch in next(), on the
  /// calling thread.
  int64_t prefetch = 2;
  /// Hand out batches in pinned host memory (Tensor::pin_memory(), on the worker thread when
  /// prefetching), so that `batch.data.to(cuda, /*non_blocking=*/true)` does not wait for the
  /// GPU. As PyTorch's DataLoader: without a usable GPU the batches stay in pageable memory.
  bool pin_memory = false;
};

/// Where a loader stands: the epoch it is in and how many of that epoch's batches it has
/// handed out. Saved with a checkpoint, it lets a run resume on the very next batch.
struct DataLoaderState {
  int64_t epoch = 0;
  int64_t position = 0;
  bool operator==(const DataLoaderState&) const = default;
};

/// The order in which epoch `epoch` visits the `n` samples when shuffling: a permutation of
/// 0..n-1 that depends only on (n, seed, epoch) and is the same on every platform.
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

/// Replica `rank`'s samples of an epoch whose order is `epoch_order` (shuffled_order(), or
/// 0..n-1 without shuffling), split as DistributedSampler splits them: the order is padded to a
/// multiple of num_replicas by repeating its own first entries (wrapping around as often as
/// needed), and the replica takes entries rank, rank + num_replicas, rank + 2 * num_replicas, ...
/// Every replica gets ceil(n / num_replicas) samples, and k batches of B on each replica consume
/// exactly the first k * B * num_replicas entries of the padded order. An empty order gives an
/// empty share.
std::vector<int64_t> replica_order(const std::vector<int64_t>& epoch_order, int64_t num_replicas, int64_t rank);

/// How many samples each of `num_replicas` replicas gets per epoch of `n`: ceil(n / num_replicas).
inline int64_t replica_size(int64_t n, int64_t num_replicas) { return (n + num_replicas - 1) / num_replicas; }

/// Hands out the batches of a data set, one epoch after another.
///
///   data::DataLoader loader(train_set, {.batch_size = 64, .shuffle = true, .seed = 1});
///   for (int epoch = 0; epoch < 5; ++epoch)
///     for (data::Batch& batch : loader) train_step(batch.data, batch.target);
///
/// The loader is a cursor, not a container: each loop (or each run of next() calls up to the
/// std::nullopt that ends an epoch) continues where the previous one stopped, so stopping early
/// and starting again resumes the same epoch, and a loop begun after an epoch's end covers the
/// next epoch. state() and set_state() save and restore that cursor exactly.
///
/// With prefetch > 0 a worker thread loads the next batches while the consumer computes; it
/// waits when `prefetch` batches are ready, stops when the loader is destroyed (even mid-epoch)
/// or set_state() moves the cursor, and an exception it meets is rethrown by next() in place of
/// the batch it was loading. A loader is used from one thread at a time.
class DataLoader {
 public:
  DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  /// The next batch of the current epoch, or std::nullopt when the epoch has no batch left; the
  /// call that returns std::nullopt moves the cursor to the start of the next epoch.
  std::optional<Batch> next();

  /// Batches per epoch of this replica: ceil(samples / batch_size), or floor with drop_last (len()
  /// in PyTorch), where samples is ceil(size / num_replicas).
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const Dataset& dataset() const { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  DataLoaderState state() const { return cursor_; }
  /// Moves the cursor: the next batch is batch `position` of epoch `epoch` (0 <= position <=
  /// batches_per_epoch(); position == batches_per_epoch() means the epoch has just ended).
  void set_state(DataLoaderState state);

  /// Single-pass iteration over the rest of the current epoch; `*it` is the batch just loaded.
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    Batch& operator*() const { return *loader_->current_; }
    Batch* operator->() const { return &*loader_->current_; }
    Iterator& operator++() {
      loader_->current_ = loader_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    bool operator==(std::default_sentinel_t) const { return !loader_->current_.has_value(); }

   private:
    friend class DataLoader;
    explicit Iterator(DataLoader* loader) : loader_(loader) {}
    DataLoader* loader_ = nullptr;
  };
  /// Loads the first batch of the rest of the epoch: call it once per loop.
  Iterator begin();
  std::default_sentinel_t end() const { return {}; }

 private:
  class BatchSource;  // loads the batch at a cursor; each thread that loads has its own
  class Worker;

  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t batches_per_epoch_ = 0;
  DataLoaderState cursor_;
  std::optional<Batch> current_;
  std::unique_ptr<BatchSource> source_;  // used when prefetch == 0
  std::unique_ptr<Worker> worker_;       // started by next(), stopped by set_state() and errors
};

}  // namespace ember::data
