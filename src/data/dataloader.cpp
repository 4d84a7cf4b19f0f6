// DataLoader: a cursor (epoch, position) over the batches of a data set, with an optional worker
// thread that loads the batches after the cursor into a bounded queue.
#include "ember/data/dataloader.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>

#include "core/check.h"
#include "ember/device.h"

namespace ember::data {
namespace {

// SplitMix64 (Steele, Lea and Flood 2014): tiny, fast, statistically strong and fully specified,
// so a seed gives the same permutation with every compiler and standard library (std::shuffle
// and the std:: distributions do not promise that).
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t state) : state_(state) {}
  uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ULL); }

  /// Uniform on [0, range) without modulo bias (Lemire's multiply-and-reject, 2019).
  uint64_t below(uint64_t range) {
    __extension__ using u128 = unsigned __int128;
    u128 product = static_cast<u128>(next()) * range;
    auto low = static_cast<uint64_t>(product);
    if (low < range) {
      const uint64_t threshold = -range % range;
      while (low < threshold) {
        product = static_cast<u128>(next()) * range;
        low = static_cast<uint64_t>(product);
      }
    }
    return static_cast<uint64_t>(product >> 64);
  }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  EMBER_CHECK(n >= 0, "shuffled_order: n must be non-negative, got ", n);
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Hashing seed and epoch separately keeps nearby (seed, epoch) pairs from sharing streams.
  SplitMix64 rng(mix64(seed) ^ mix64(static_cast<uint64_t>(epoch) + 0x632be59bd9b4e019ULL));
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(order[i], order[static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1))]);
  }
  return order;
}

std::vector<int64_t> replica_order(const std::vector<int64_t>& epoch_order, int64_t num_replicas, int64_t rank) {
  EMBER_CHECK(num_replicas >= 1, "replica_order: num_replicas must be at least 1, got ", num_replicas);
  EMBER_CHECK(rank >= 0 && rank < num_replicas, "Invalid rank ", rank, ", rank should be in the interval [0, ",
              num_replicas - 1, "]");
  const auto n = static_cast<int64_t>(epoch_order.size());
  const int64_t per_replica = replica_size(n, num_replicas);
  std::vector<int64_t> shard;
  shard.reserve(static_cast<size_t>(per_replica));
  // Entry i of the padded order is epoch_order[i % n]: PyTorch pads with
  // (indices * ceil(padding / n))[:padding], which repeats the order from its start.
  for (int64_t j = 0; j < per_replica; ++j) {
    shard.push_back(epoch_order[static_cast<size_t>((rank + j * num_replicas) % n)]);
  }
  return shard;
}

/// Loads the batch at a cursor position. Not shared between threads: the worker has its own.
class DataLoader::BatchSource {
 public:
  BatchSource(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options)
      : dataset_(std::move(dataset)),
        options_(options),
        size_(dataset_->size()),
        pin_(options.pin_memory && cuda::is_available()) {}

  Batch load(const DataLoaderState& at) {
    // Without shuffle every epoch has the same order, so the first one built is kept.
    if (order_epoch_ < 0 || (options_.shuffle && order_epoch_ != at.epoch)) {
      std::vector<int64_t> order;
      if (options_.shuffle) {
        order = shuffled_order(size_, options_.seed, at.epoch);
      } else {
        order.resize(static_cast<size_t>(size_));
        std::iota(order.begin(), order.end(), int64_t{0});
      }
      order_ = replica_order(order, options_.num_replicas, options_.rank);
      order_epoch_ = at.epoch;
    }
    const int64_t first = at.position * options_.batch_size;
    const int64_t count = std::min(options_.batch_size, static_cast<int64_t>(order_.size()) - first);
    Batch batch = dataset_->get_batch({order_.data() + first, static_cast<size_t>(count)});
    EMBER_CHECK(batch.data.defined() && batch.data.dim() >= 1 && batch.data.size(0) == count,
                "DataLoader: get_batch was asked for ", count, " samples but returned data of shape ",
                batch.data.defined() ? detail::shape_str(batch.data.sizes()) : "(undefined)");
    EMBER_CHECK(!batch.target.defined() || (batch.target.dim() >= 1 && batch.target.size(0) == count),
                "DataLoader: get_batch was asked for ", count, " samples but returned targets of shape ",
                detail::shape_str(batch.target.sizes()));
    if (pin_) {
      batch.data = batch.data.pin_memory();
      if (batch.target.defined()) batch.target = batch.target.pin_memory();
    }
    return batch;
  }

 private:
  std::shared_ptr<const Dataset> dataset_;
  DataLoaderOptions options_;
  int64_t size_;
  bool pin_;                    // options_.pin_memory, with a GPU to pin for
  std::vector<int64_t> order_;  // this replica's samples of epoch order_epoch_
  int64_t order_epoch_ = -1;
};

/// A thread that walks the cursor ahead of the consumer, one batch (or end-of-epoch mark) at a
/// time, and waits whenever `prefetch` of them are queued.
class DataLoader::Worker {
 public:
  struct Item {
    DataLoaderState at;
    std::optional<Batch> batch;  // empty: the epoch `at.epoch` ends here
    std::exception_ptr error;    // set: loading the batch at `at` threw this
  };

  Worker(std::shared_ptr<const Dataset> dataset, const DataLoaderOptions& options, int64_t batches_per_epoch,
         DataLoaderState start)
      : source_(std::move(dataset), options),
        batches_per_epoch_(batches_per_epoch),
        capacity_(static_cast<size_t>(options.prefetch)),
        next_(start),
        thread_([this] { run(); }) {}

  ~Worker() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    space_.notify_all();
    thread_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Item pop() {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    space_.notify_one();
    return item;
  }

 private:
  void run() {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        space_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
        if (stop_) return;
      }
      // Loading happens outside the lock, so the consumer can take batches meanwhile.
      Item item{next_, std::nullopt, nullptr};
      if (next_.position == batches_per_epoch_) {
        next_ = {next_.epoch + 1, 0};
      } else {
        try {
          item.batch = source_.load(next_);
          ++next_.position;
        } catch (...) {
          item.error = std::current_exception();
        }
      }
      const bool failed = item.error != nullptr;
      {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(item));
      }
      ready_.notify_one();
      // The consumer rethrows the error and starts a new worker if it carries on.
      if (failed) return;
    }
  }

  BatchSource source_;
  const int64_t batches_per_epoch_;
  const size_t capacity_;
  DataLoaderState next_;  // touched only by the worker thread
  std::mutex mutex_;
  std::condition_variable ready_;  // an item was queued
  std::condition_variable space_;  // an item was taken, or stop_ was set
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: it starts running once everything above is constructed
};

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: the data set is null");
  EMBER_CHECK(options_.batch_size >= 1, "DataLoader: batch_size must be at least 1, got ", options_.batch_size);
  EMBER_CHECK(options_.prefetch >= 0, "DataLoader: prefetch must be non-negative, got ", options_.prefetch);
  EMBER_CHECK(options_.num_replicas >= 1, "DataLoader: num_replicas must be at least 1, got ", options_.num_replicas);
  EMBER_CHECK(options_.rank >= 0 && options_.rank < options_.num_replicas, "Invalid rank ", options_.rank,
              ", rank should be in the interval [0, ", options_.num_replicas - 1, "]");
  const int64_t size = dataset_->size();
  EMBER_CHECK(size >= 0, "DataLoader: the data set reports a negative size, ", size);
  // Padding gives every replica the same share, so all ranks run the same number of steps.
  const int64_t samples = replica_size(size, options_.num_replicas);
  batches_per_epoch_ =
      options_.drop_last ? samples / options_.batch_size : (samples + options_.batch_size - 1) / options_.batch_size;
}

DataLoader::~DataLoader() = default;

std::optional<Batch> DataLoader::next() {
  if (options_.prefetch == 0) {
    if (cursor_.position == batches_per_epoch_) {
      cursor_ = {cursor_.epoch + 1, 0};
      return std::nullopt;
    }
    if (!source_) source_ = std::make_unique<BatchSource>(dataset_, options_);
    Batch batch = source_->load(cursor_);
    ++cursor_.position;
    return batch;
  }

  if (!worker_) worker_ = std::make_unique<Worker>(dataset_, options_, batches_per_epoch_, cursor_);
  Worker::Item item = worker_->pop();
  EMBER_CHECK(item.at == cursor_, "DataLoader: internal error: the worker loaded batch ", item.at.position,
              " of epoch ", item.at.epoch, " where batch ", cursor_.position, " of epoch ", cursor_.epoch, " was due");
  if (item.error) {
    worker_.reset();  // it stopped at the error; the next call retries the same batch
    std::rethrow_exception(item.error);
  }
  if (!item.batch) {
    cursor_ = {cursor_.epoch + 1, 0};
    return std::nullopt;
  }
  ++cursor_.position;
  return std::move(item.batch);
}

void DataLoader::set_state(DataLoaderState state) {
  EMBER_CHECK(state.epoch >= 0, "DataLoader::set_state: epoch must be non-negative, got ", state.epoch);
  EMBER_CHECK(state.position >= 0 && state.position <= batches_per_epoch_, "DataLoader::set_state: position ",
              state.position, " is outside the epoch's ", batches_per_epoch_, " batches");
  // Batches the worker loaded ahead belong to the old cursor.
  worker_.reset();
  cursor_ = state;
}

DataLoader::Iterator DataLoader::begin() {
  current_ = next();
  return Iterator(this);
}

}  // namespace ember::data
