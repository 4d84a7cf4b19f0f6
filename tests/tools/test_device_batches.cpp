// DeviceBatches (the training set held on the training device) must hand out exactly the
// DataLoader's batches and keep its cursor, so GPU runs match CPU runs and checkpoints resume on
// either. On the CPU the same class runs on host tensors, so this is checked everywhere.
#include <gtest/gtest.h>

#include <filesystem>

#include "ember/ember.h"
#include "train/device_batches.h"

namespace {

using namespace ember;

bool have_fashion_mnist() {
  for (const char* name : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"}) {
    if (std::filesystem::exists(std::filesystem::path(data::kFashionMnistDir) / name)) return true;
  }
  return false;
}

void expect_same_batch(const data::Batch& a, const data::Batch& b) {
  ASSERT_EQ(a.data.sizes().vec(), b.data.sizes().vec());
  EXPECT_EQ(a.data.dtype(), b.data.dtype());
  EXPECT_TRUE(equal(a.data, b.data));
  EXPECT_TRUE(equal(a.target, b.target));
}

TEST(DeviceBatches, SameBatchesAndCursorAsTheDataLoader) {
  if (!have_fashion_mnist()) GTEST_SKIP() << "Fashion-MNIST is not installed in " << data::kFashionMnistDir;
  // 1000 samples in batches of 64: 16 batches, the last one of 40.
  auto set = std::make_shared<data::MNIST>(data::kFashionMnistDir, data::MNIST::Split::Train, 1000);
  data::DataLoader loader(set, {.batch_size = 64, .shuffle = true, .seed = 7, .prefetch = 0});
  train::DeviceBatches batches(*set, Device("cpu"), 64, 7);
  ASSERT_EQ(batches.batches_per_epoch(), loader.batches_per_epoch());

  for (int epoch = 0; epoch < 2; ++epoch) {  // a new order each epoch
    int64_t count = 0;
    while (std::optional<data::Batch> expected = loader.next()) {
      std::optional<data::Batch> got = batches.next();
      ASSERT_TRUE(got.has_value()) << "epoch " << epoch << " batch " << count;
      expect_same_batch(*got, *expected);
      EXPECT_EQ(batches.state(), loader.state());
      ++count;
    }
    EXPECT_FALSE(batches.next().has_value());  // the epoch's end moves the cursor on, as the loader's
    EXPECT_EQ(batches.state(), loader.state());
    EXPECT_EQ(count, 16);
  }

  // Resuming in the middle of an epoch gives the loader's next batch.
  loader.set_state({5, 11});
  batches.set_state({5, 11});
  expect_same_batch(*batches.next(), *loader.next());
  EXPECT_THROW(batches.set_state({0, 17}), Error);
}

}  // namespace
