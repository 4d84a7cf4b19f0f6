// DataLoader: epoch orders, batch sizes, the prefetch worker (bounded, stoppable, rethrowing) and
// exact resume from a saved (epoch, position).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "data/idx_test_files.h"
#include "ember/data/dataloader.h"
#include "ember/data/mnist.h"
#include "ember/error.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "support/error_of.h"
#include "train/device_batches.h"

namespace {

using ember::Tensor;
using ember::data::Batch;
using ember::data::DataLoader;
using ember::data::DataLoaderOptions;
using ember::data::DataLoaderState;
using ember::data::Example;
using ember::data::replica_order;
using ember::data::shuffled_order;
using namespace std::chrono_literals;

using ember_test::error_of;

/// Sample i is (data = i as float, target = i), so a batch shows which samples it holds. It counts
/// get_batch calls and can be made slow or made to fail at one index.
class IndexDataset : public ember::data::Dataset {
 public:
  explicit IndexDataset(int64_t size) : size_(size) {}
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override {
    return {ember::scalar_tensor(static_cast<double>(index), ember::kFloat32), ember::scalar_tensor(index)};
  }
  Batch get_batch(std::span<const int64_t> indices) const override {
    ++calls;
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    for (int64_t i : indices) {
      if (i == fail_at) throw ember::Error("IndexDataset: sample " + std::to_string(i) + " is unreadable");
    }
    Tensor target = ember::empty({static_cast<int64_t>(indices.size())}, ember::kInt64);
    std::copy(indices.begin(), indices.end(), target.data_ptr<int64_t>());
    return {target.to(ember::kFloat32), target};
  }

  mutable std::atomic<int> calls{0};
  std::chrono::milliseconds delay{0};
  int64_t fail_at = -1;

 private:
  int64_t size_;
};

std::vector<int64_t> ids(const Batch& batch) {
  const int64_t* p = batch.target.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + batch.target.numel());
}

/// Runs `steps` batches of `options` without interruption (across epoch ends), saving the state
/// after batch `save_after`; checks that it is `expected_state` and that a loader restored to it,
/// with and without prefetching, hands out the same later batches.
void expect_exact_resume(const std::shared_ptr<IndexDataset>& dataset, const DataLoaderOptions& options, int steps,
                         int save_after, DataLoaderState expected_state) {
  DataLoader reference(dataset, options);
  DataLoaderState saved;
  std::vector<std::vector<int64_t>> after_save;
  for (int step = 0; step < steps; ++step) {
    auto batch = reference.next();
    if (!batch) batch = reference.next();  // an epoch ended
    ASSERT_TRUE(batch.has_value());
    if (step == save_after) saved = reference.state();
    if (step > save_after) after_save.push_back(ids(*batch));
  }
  EXPECT_EQ(saved, expected_state);

  for (int64_t prefetch : {0, 3}) {
    DataLoaderOptions resumed_options = options;
    resumed_options.prefetch = prefetch;
    DataLoader resumed(dataset, resumed_options);
    resumed.next();  // the resumed run may have moved before it restores the state
    resumed.set_state(saved);
    std::vector<std::vector<int64_t>> got;
    while (got.size() < after_save.size()) {
      auto batch = resumed.next();
      if (!batch) batch = resumed.next();
      ASSERT_TRUE(batch.has_value());
      got.push_back(ids(*batch));
    }
    EXPECT_EQ(got, after_save) << "prefetch " << prefetch;
  }
}

/// The samples of the rest of the current epoch, batch by batch.
std::vector<std::vector<int64_t>> epoch_batches(DataLoader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (Batch& batch : loader) out.push_back(ids(batch));
  return out;
}

std::vector<int64_t> flatten(const std::vector<std::vector<int64_t>>& batches) {
  std::vector<int64_t> out;
  for (const auto& b : batches) out.insert(out.end(), b.begin(), b.end());
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// Writes a 9-sample MNIST whose sample i has label i and pixels i * 20, and returns its folder.
std::shared_ptr<ember::data::MNIST> nine_sample_mnist(const ember_test::ScratchDir& dir) {
  ember_test::Bytes images(9 * 784);
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<uint8_t>(i / 784 * 20);
  ember_test::write_gzip(dir.file("train-images-idx3-ubyte.gz"), ember_test::idx_file({9, 28, 28}, images));
  ember_test::write_gzip(dir.file("train-labels-idx1-ubyte.gz"),
                         ember_test::idx_file({9}, {0, 1, 2, 3, 4, 5, 6, 7, 8}));
  return std::make_shared<ember::data::MNIST>(dir.path().string());
}

template <typename Predicate>
bool eventually(Predicate done) {
  for (int i = 0; i < 500 && !done(); ++i) std::this_thread::sleep_for(2ms);
  return done();
}

TEST(DataLoader, BatchesInOrderWithAShortLastBatch) {
  for (int64_t prefetch : {0, 2}) {
    DataLoader loader(std::make_shared<IndexDataset>(10), {.batch_size = 4, .prefetch = prefetch});
    EXPECT_EQ(loader.batches_per_epoch(), 3);
    EXPECT_EQ(epoch_batches(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}))
        << "prefetch " << prefetch;
  }
}

TEST(DataLoader, DropLastLeavesOutTheShortBatch) {
  DataLoader loader(std::make_shared<IndexDataset>(10), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  EXPECT_EQ(epoch_batches(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  DataLoader exact(std::make_shared<IndexDataset>(8), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(exact.batches_per_epoch(), 2);
  DataLoader too_small(std::make_shared<IndexDataset>(3), {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(too_small.batches_per_epoch(), 0);
  EXPECT_TRUE(epoch_batches(too_small).empty());
}

TEST(DataLoader, ShuffledEpochsArePermutations) {
  DataLoader loader(std::make_shared<IndexDataset>(103), {.batch_size = 10, .shuffle = true, .seed = 5});
  std::vector<std::vector<int64_t>> orders;
  for (int epoch = 0; epoch < 3; ++epoch) {
    const auto batches = epoch_batches(loader);
    ASSERT_EQ(batches.size(), 11u);
    EXPECT_EQ(batches.back().size(), 3u);
    std::vector<int64_t> order = flatten(batches);
    EXPECT_EQ(order, ember::data::shuffled_order(103, 5, epoch));
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(103)) << "epoch " << epoch << " visits every sample exactly once";
    EXPECT_NE(order, iota(103));
    orders.push_back(order);
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
}

TEST(DataLoader, TheOrderDependsOnlyOnSeedAndEpoch) {
  auto first_epochs = [](uint64_t seed) {
    DataLoader loader(std::make_shared<IndexDataset>(50), {.batch_size = 7, .shuffle = true, .seed = seed});
    std::vector<int64_t> out;
    for (int epoch = 0; epoch < 2; ++epoch) {
      ember::manual_seed(1000 + epoch);  // the global generator plays no part
      for (int64_t i : flatten(epoch_batches(loader))) out.push_back(i);
      ember::rand({100});
    }
    return out;
  };
  EXPECT_EQ(first_epochs(3), first_epochs(3));
  EXPECT_NE(first_epochs(3), first_epochs(4));
  // Pinned values: a change here reorders every saved run, so it must be deliberate.
  EXPECT_EQ(ember::data::shuffled_order(10, 42, 0), (std::vector<int64_t>{5, 6, 0, 8, 4, 1, 3, 9, 7, 2}));
  EXPECT_TRUE(ember::data::shuffled_order(0, 1, 0).empty());
  EXPECT_EQ(ember::data::shuffled_order(1, 1, 7), (std::vector<int64_t>{0}));
}

TEST(DataLoader, PrefetchDoesNotChangeTheBatches) {
  auto run = [](int64_t prefetch) {
    DataLoader loader(std::make_shared<IndexDataset>(37),
                      {.batch_size = 5, .shuffle = true, .seed = 9, .prefetch = prefetch});
    std::vector<std::vector<int64_t>> all;
    for (int epoch = 0; epoch < 3; ++epoch) {
      for (auto& b : epoch_batches(loader)) all.push_back(b);
    }
    return all;
  };
  const auto synchronous = run(0);
  EXPECT_EQ(synchronous.size(), 24u);
  EXPECT_EQ(run(1), synchronous);
  EXPECT_EQ(run(4), synchronous);
}

TEST(DataLoader, PinMemoryPinsBatchesWhereAGpuCanUseThem) {
  // As PyTorch's: batches are pinned when a GPU is there to copy them to, and otherwise handed
  // out as they are (no error: the same script runs on a machine without one).
  const bool pinnable = ember::cuda::is_available();
  for (int64_t prefetch : {0, 2}) {
    DataLoader plain(std::make_shared<IndexDataset>(12), {.batch_size = 5, .prefetch = prefetch});
    DataLoader pinned(std::make_shared<IndexDataset>(12), {.batch_size = 5, .prefetch = prefetch, .pin_memory = true});
    int batches = 0;
    for (auto a = plain.next(), b = pinned.next(); a || b; a = plain.next(), b = pinned.next(), ++batches) {
      ASSERT_TRUE(a && b);
      EXPECT_TRUE(ember::equal(a->data, b->data));
      EXPECT_TRUE(ember::equal(a->target, b->target));
      EXPECT_EQ(b->data.is_pinned(), pinnable);
      EXPECT_EQ(b->target.is_pinned(), pinnable);
      EXPECT_FALSE(a->data.is_pinned());
    }
    EXPECT_EQ(batches, 3);
  }
}

TEST(DataLoader, IsACursorAcrossLoopsAndEpochs) {
  DataLoader loader(std::make_shared<IndexDataset>(6), {.batch_size = 2});
  EXPECT_EQ(loader.state(), (DataLoaderState{0, 0}));
  for (Batch& batch : loader) {
    EXPECT_EQ(ids(batch), (std::vector<int64_t>{0, 1}));
    break;
  }
  EXPECT_EQ(loader.state(), (DataLoaderState{0, 1}));
  // The next loop finishes the same epoch, then the epoch counter moves on.
  EXPECT_EQ(epoch_batches(loader), (std::vector<std::vector<int64_t>>{{2, 3}, {4, 5}}));
  EXPECT_EQ(loader.state(), (DataLoaderState{1, 0}));
  auto b = loader.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(ids(*b), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(loader.state(), (DataLoaderState{1, 1}));
}

TEST(DataLoader, ResumesExactlyFromASavedState) {
  const DataLoaderOptions options{.batch_size = 8, .shuffle = true, .seed = 77};
  auto dataset = std::make_shared<IndexDataset>(60);
  // Two and a half epochs, saved after the 12th batch (in the second epoch).
  expect_exact_resume(dataset, options, 2 * 8 + 5, 11, {1, 4});

  // A state saved just after an epoch's last batch resumes with that epoch's end.
  DataLoader at_end(dataset, options);
  at_end.set_state({2, at_end.batches_per_epoch()});
  EXPECT_FALSE(at_end.next().has_value());
  EXPECT_EQ(at_end.state(), (DataLoaderState{3, 0}));
}

TEST(DataLoader, RejectsBadOptionsAndStates) {
  auto dataset = std::make_shared<IndexDataset>(10);
  EXPECT_EQ(error_of([&] { DataLoader l(dataset, {.batch_size = 0}); }),
            "DataLoader: batch_size must be at least 1, got 0");
  EXPECT_EQ(error_of([&] { DataLoader l(nullptr); }), "DataLoader: the data set is null");
  DataLoader loader(dataset, {.batch_size = 4});
  EXPECT_EQ(error_of([&] {
              loader.set_state({0, 4});
            }),
            "DataLoader::set_state: position 4 is outside the epoch's 3 batches");
  EXPECT_EQ(error_of([&] { loader.set_state({-1, 0}); }), "DataLoader::set_state: epoch must be non-negative, got -1");
}

TEST(DataLoaderWorker, LoadsOnlyABoundedNumberOfBatchesAhead) {
  auto dataset = std::make_shared<IndexDataset>(1000);
  DataLoader loader(dataset, {.batch_size = 10, .prefetch = 3});
  EXPECT_EQ(dataset->calls.load(), 0) << "nothing is loaded before the first batch is asked for";
  ASSERT_TRUE(loader.next().has_value());
  ASSERT_TRUE(loader.next().has_value());
  // Two taken, three queued: the worker then waits.
  EXPECT_TRUE(eventually([&] { return dataset->calls.load() == 5; }));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(dataset->calls.load(), 5);
}

TEST(DataLoaderWorker, StopsWhenTheLoaderIsDestroyedMidEpoch) {
  auto dataset = std::make_shared<IndexDataset>(10000);
  dataset->delay = 5ms;
  {
    DataLoader loader(dataset, {.batch_size = 4, .prefetch = 4});
    for (int i = 0; i < 3; ++i) ASSERT_EQ(ids(*loader.next()).front(), 4 * i);
  }  // the worker is joined here, possibly in the middle of loading a batch
  const int calls = dataset->calls.load();
  EXPECT_LE(calls, 3 + 4 + 1);
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(dataset->calls.load(), calls) << "no batch is loaded after the loader is gone";
  EXPECT_EQ(dataset.use_count(), 1) << "the worker released the data set";

  // Destroyed before it ever ran, and destroyed while a slow batch is loading.
  { DataLoader idle(dataset, {.batch_size = 4}); }
  dataset->delay = 50ms;
  const auto start = std::chrono::steady_clock::now();
  {
    DataLoader loader(dataset, {.batch_size = 4, .prefetch = 1});
    loader.next();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(DataLoaderWorker, RethrowsErrorsInTheConsumerAndCanRetry) {
  for (int64_t prefetch : {0, 2}) {
    auto dataset = std::make_shared<IndexDataset>(20);
    dataset->fail_at = 9;  // in batch 2 (samples 8-11)
    DataLoader loader(dataset, {.batch_size = 4, .prefetch = prefetch});
    EXPECT_EQ(ids(*loader.next()), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(ids(*loader.next()), (std::vector<int64_t>{4, 5, 6, 7}));
    EXPECT_EQ(error_of([&] { loader.next(); }), "IndexDataset: sample 9 is unreadable") << "prefetch " << prefetch;
    EXPECT_EQ(loader.state(), (DataLoaderState{0, 2})) << "the failed batch was not consumed";
    EXPECT_EQ(error_of([&] { loader.next(); }), "IndexDataset: sample 9 is unreadable") << "a retry fails the same way";
    dataset->fail_at = -1;
    EXPECT_EQ(ids(*loader.next()), (std::vector<int64_t>{8, 9, 10, 11})) << "and succeeds once the cause is gone";
  }
}

TEST(DataLoader, ChecksWhatADatasetReturns) {
  class ShortBatches : public IndexDataset {
   public:
    using IndexDataset::IndexDataset;
    Batch get_batch(std::span<const int64_t> indices) const override {
      return IndexDataset::get_batch(indices.first(1));
    }
  };
  DataLoader loader(std::make_shared<ShortBatches>(8), {.batch_size = 4, .prefetch = 0});
  EXPECT_EQ(error_of([&] { loader.next(); }),
            "DataLoader: get_batch was asked for 4 samples but returned data of shape [1]");
}

TEST(Dataset, DefaultGetBatchStacksSamples) {
  class OnlyGet : public ember::data::Dataset {
   public:
    int64_t size() const override { return 5; }
    Example get(int64_t index) const override {
      return {ember::full({2, 3}, static_cast<double>(index)), ember::scalar_tensor(index * 10)};
    }
  };
  DataLoader loader(std::make_shared<OnlyGet>(), {.batch_size = 2});
  auto batches = std::vector<Batch>();
  for (Batch& b : loader) batches.push_back(b);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].data.sizes().vec(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(batches[2].data.sizes().vec(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(batches[1].data.select(0, 1).sum().item<double>(), 6 * 3.0);
  EXPECT_EQ(ids(batches[1]), (std::vector<int64_t>{20, 30}));
}

TEST(DataLoader, MnistBatches) {
  ember_test::ScratchDir dir;
  auto mnist = nine_sample_mnist(dir);
  DataLoader loader(mnist, {.batch_size = 4, .shuffle = true, .seed = 1});
  std::vector<int64_t> seen;
  for (Batch& batch : loader) {
    ASSERT_EQ(batch.data.dtype(), ember::kFloat32);
    ASSERT_EQ(batch.data.dim(), 4);
    EXPECT_EQ(batch.data.size(1), 1);
    EXPECT_EQ(batch.data.size(2), 28);
    for (int64_t b = 0; b < batch.data.size(0); ++b) {
      const int64_t label = batch.target.data_ptr<int64_t>()[b];
      EXPECT_EQ(batch.data.data_ptr<float>()[b * 784 + 400], static_cast<float>(label * 20) / 255.0f);
      seen.push_back(label);
    }
  }
  EXPECT_EQ(seen, ember::data::shuffled_order(9, 1, 0));
}

// DistributedSampler's split (drop_last=False): the epoch's order padded with its own first entries
// to a multiple of num_replicas, replica r taking every num_replicas-th entry from r.
TEST(DataLoaderShards, ReplicaOrderMatchesPyTorchsSplit) {
  // n = 10, 3 replicas: padded to 12 with the order's first 2 entries, [5 6 0 8 4 1 3 9 7 2 | 5 6].
  const std::vector<int64_t> order{5, 6, 0, 8, 4, 1, 3, 9, 7, 2};
  EXPECT_EQ(replica_order(order, 3, 0), (std::vector<int64_t>{5, 8, 3, 2}));
  EXPECT_EQ(replica_order(order, 3, 1), (std::vector<int64_t>{6, 4, 9, 5}));
  EXPECT_EQ(replica_order(order, 3, 2), (std::vector<int64_t>{0, 1, 7, 6}));
  // n = 2, 5 replicas: the padding (3 entries) is longer than the order, so it wraps around:
  // (indices * 2)[:3] = [7 3 7], padded [7 3 7 3 7].
  const std::vector<int64_t> two{7, 3};
  EXPECT_EQ(replica_order(two, 5, 0), (std::vector<int64_t>{7}));
  EXPECT_EQ(replica_order(two, 5, 1), (std::vector<int64_t>{3}));
  EXPECT_EQ(replica_order(two, 5, 2), (std::vector<int64_t>{7}));
  EXPECT_EQ(replica_order(two, 5, 3), (std::vector<int64_t>{3}));
  EXPECT_EQ(replica_order(two, 5, 4), (std::vector<int64_t>{7}));
  // One replica takes the whole order; an even split needs no padding; an empty order gives nothing.
  EXPECT_EQ(replica_order(order, 1, 0), order);
  EXPECT_EQ(replica_order(order, 2, 1), (std::vector<int64_t>{6, 8, 1, 9, 2}));
  EXPECT_TRUE(replica_order({}, 4, 3).empty());
}

TEST(DataLoaderShards, UnshuffledReplicasTakeEveryNthSample) {
  // 10 samples, 3 replicas of 4, batches of 3: replica 1 gets 1 4 7 0 (0 is padding).
  for (int64_t prefetch : {0, 2}) {
    DataLoader loader(std::make_shared<IndexDataset>(10),
                      {.batch_size = 3, .num_replicas = 3, .rank = 1, .prefetch = prefetch});
    EXPECT_EQ(loader.batches_per_epoch(), 2);
    for (int epoch = 0; epoch < 2; ++epoch) {
      EXPECT_EQ(epoch_batches(loader), (std::vector<std::vector<int64_t>>{{1, 4, 7}, {0}})) << "prefetch " << prefetch;
    }
  }
}

TEST(DataLoaderShards, ReplicasTogetherConsumeTheShuffledOrderInTurn) {
  // 37 samples, 2 replicas of 19 (one padding entry), batches of 5: 4 batches, the last of 4.
  const int64_t n = 37, batch = 5;
  auto dataset = std::make_shared<IndexDataset>(n);
  for (int64_t prefetch : {0, 2}) {
    DataLoader first(
        dataset, {.batch_size = batch, .shuffle = true, .seed = 3, .num_replicas = 2, .rank = 0, .prefetch = prefetch});
    DataLoader second(
        dataset, {.batch_size = batch, .shuffle = true, .seed = 3, .num_replicas = 2, .rank = 1, .prefetch = prefetch});
    ASSERT_EQ(first.batches_per_epoch(), 4);
    ASSERT_EQ(second.batches_per_epoch(), 4);
    for (int64_t epoch = 0; epoch < 2; ++epoch) {
      const auto a = epoch_batches(first), b = epoch_batches(second);
      ASSERT_EQ(a.size(), 4u);
      ASSERT_EQ(b.size(), 4u);
      std::vector<int64_t> order = shuffled_order(n, 3, epoch);
      order.push_back(order.front());  // the padding
      std::vector<int64_t> seen;
      for (size_t k = 0; k < a.size(); ++k) {
        seen.insert(seen.end(), a[k].begin(), a[k].end());
        seen.insert(seen.end(), b[k].begin(), b[k].end());
        const auto consumed = std::min<size_t>(2 * (k + 1) * batch, order.size());
        EXPECT_EQ(sorted(seen), sorted({order.begin(), order.begin() + static_cast<std::ptrdiff_t>(consumed)}))
            << "epoch " << epoch << " after " << k + 1 << " batches, prefetch " << prefetch;
      }
      EXPECT_EQ(flatten(a), replica_order(shuffled_order(n, 3, epoch), 2, 0));
      EXPECT_EQ(flatten(b), replica_order(shuffled_order(n, 3, epoch), 2, 1));
    }
  }
}

TEST(DataLoaderShards, BatchesPerEpochCountsTheReplicasBatches) {
  struct Case {
    int64_t size, num_replicas, batch_size;
    bool drop_last;
    int64_t batches;
  };
  for (const Case& c : std::vector<Case>{{10, 3, 3, false, 2},  // 4 samples each
                                         {10, 3, 3, true, 1},
                                         {10, 4, 2, false, 2},  // 3 samples each
                                         {10, 4, 2, true, 1},
                                         {12, 4, 3, true, 1},  // 3 samples each, no padding
                                         {2, 5, 4, false, 1},  // 1 sample each, padded twice over
                                         {2, 5, 4, true, 0},
                                         {0, 3, 2, false, 0},
                                         {103, 8, 4, false, 4}}) {  // 13 samples each
    for (int64_t rank = 0; rank < c.num_replicas; ++rank) {
      DataLoader loader(std::make_shared<IndexDataset>(c.size), {.batch_size = c.batch_size,
                                                                 .shuffle = true,
                                                                 .drop_last = c.drop_last,
                                                                 .num_replicas = c.num_replicas,
                                                                 .rank = rank,
                                                                 .prefetch = 0});
      EXPECT_EQ(loader.batches_per_epoch(), c.batches)
          << c.size << " samples, " << c.num_replicas << " replicas, batches of " << c.batch_size << ", drop_last "
          << c.drop_last << ", rank " << rank;
      EXPECT_EQ(static_cast<int64_t>(epoch_batches(loader).size()), c.batches);
    }
  }
}

TEST(DataLoaderShards, ResumesExactlyWithinAShard) {
  const DataLoaderOptions options{.batch_size = 4, .shuffle = true, .seed = 11, .num_replicas = 3, .rank = 2};
  auto dataset = std::make_shared<IndexDataset>(50);  // 17 samples per replica: 5 batches
  DataLoader reference(dataset, options);
  ASSERT_EQ(reference.batches_per_epoch(), 5);
  expect_exact_resume(dataset, options, 12, 6, {1, 2});
  EXPECT_EQ(error_of([&] {
              reference.set_state({0, 6});
            }),
            "DataLoader::set_state: position 6 is outside the epoch's 5 batches");
}

TEST(DataLoaderShards, RejectsBadReplicas) {
  auto dataset = std::make_shared<IndexDataset>(10);
  EXPECT_EQ(error_of([&] { DataLoader l(dataset, {.num_replicas = 0}); }),
            "DataLoader: num_replicas must be at least 1, got 0");
  EXPECT_EQ(error_of([&] { DataLoader l(dataset, {.num_replicas = 2, .rank = 2}); }),
            "Invalid rank 2, rank should be in the interval [0, 1]");
  EXPECT_EQ(error_of([&] { DataLoader l(dataset, {.num_replicas = 2, .rank = -1}); }),
            "Invalid rank -1, rank should be in the interval [0, 1]");
  EXPECT_EQ(error_of([&] { replica_order(iota(4), 0, 0); }), "replica_order: num_replicas must be at least 1, got 0");
  EXPECT_EQ(error_of([&] { replica_order(iota(4), 2, 2); }), "Invalid rank 2, rank should be in the interval [0, 1]");
  EXPECT_EQ(error_of([&] { replica_order({}, 1, 1); }), "Invalid rank 1, rank should be in the interval [0, 0]");
}

TEST(DataLoaderShards, DeviceBatchesHandOutTheLoadersShard) {
  ember_test::ScratchDir dir;
  auto mnist = nine_sample_mnist(dir);
  for (int64_t rank = 0; rank < 4; ++rank) {  // 9 samples, 4 replicas of 3 (padded by 3)
    DataLoader loader(mnist,
                      {.batch_size = 2, .shuffle = true, .seed = 5, .num_replicas = 4, .rank = rank, .prefetch = 0});
    ember::train::DeviceBatches batches(*mnist, ember::Device("cpu"), 2, 5, 4, rank);
    ASSERT_EQ(batches.batches_per_epoch(), 2);
    ASSERT_EQ(loader.batches_per_epoch(), 2);
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (std::optional<Batch> expected = loader.next()) {
        std::optional<Batch> got = batches.next();
        ASSERT_TRUE(got.has_value()) << "rank " << rank << " epoch " << epoch;
        EXPECT_EQ(ids(*got), ids(*expected)) << "rank " << rank << " epoch " << epoch;
        EXPECT_TRUE(ember::equal(got->data, expected->data));
        EXPECT_EQ(batches.state(), loader.state());
      }
      EXPECT_FALSE(batches.next().has_value());
      EXPECT_EQ(batches.state(), loader.state());
    }
  }
  EXPECT_EQ(error_of([&] { ember::train::DeviceBatches b(*mnist, ember::Device("cpu"), 2, 5, 0, 0); }),
            "DeviceBatches: num_replicas must be at least 1, got 0");
  EXPECT_EQ(error_of([&] { ember::train::DeviceBatches b(*mnist, ember::Device("cpu"), 2, 5, 2, 2); }),
            "Invalid rank 2, rank should be in the interval [0, 1]");
}

}  // namespace
