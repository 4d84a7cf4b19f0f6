// ember::data::MNIST on small data sets written at run time, and on the real Fashion-MNIST when
// Debian's dataset-fashion-mnist package is installed.
#include <gtest/gtest.h>

#include "support/error_of.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <functional>
#include <string>

#include "data/idx_test_files.h"
#include "ember/data/mnist.h"
#include "ember/error.h"

namespace {

using ember::Tensor;
using ember::data::MNIST;
using ember_test::Bytes;
using ember_test::contains;
using ember_test::idx_file;
using ember_test::ScratchDir;
using ember_test::write_gzip;
using ember_test::write_plain;

using ember_test::error_of;

// Image i has every pixel equal to (i * 37 + pixel) % 256 and label i % 10.
Bytes image_bytes(uint32_t count) {
  Bytes out(size_t{count} * 784);
  for (size_t i = 0; i < count; ++i) {
    for (size_t p = 0; p < 784; ++p) out[i * 784 + p] = static_cast<uint8_t>((i * 37 + p) % 256);
  }
  return out;
}
Bytes label_bytes(uint32_t count) {
  Bytes out(count);
  for (uint32_t i = 0; i < count; ++i) out[i] = static_cast<uint8_t>(i % 10);
  return out;
}

// A directory in the layout of the real data set: train set gzipped, test set plain.
void write_small_mnist(const ScratchDir& dir, uint32_t train = 25, uint32_t test = 12) {
  write_gzip(dir.file("train-images-idx3-ubyte.gz"), idx_file({train, 28, 28}, image_bytes(train)));
  write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_file({train}, label_bytes(train)));
  write_plain(dir.file("t10k-images-idx3-ubyte"), idx_file({test, 28, 28}, image_bytes(test)));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_file({test}, label_bytes(test)));
}

TEST(Mnist, LoadsBothSplits) {
  ScratchDir dir;
  write_small_mnist(dir);
  MNIST train(dir.path().string(), MNIST::Split::Train);
  MNIST test(dir.path().string(), MNIST::Split::Test);
  EXPECT_EQ(train.size(), 25);
  EXPECT_EQ(test.size(), 12);
  EXPECT_EQ(train.images().dtype(), ember::kUInt8);
  EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{25, 28, 28}));
  EXPECT_EQ(train.labels().dtype(), ember::kInt64);
  EXPECT_EQ(train.labels().sizes().vec(), (std::vector<int64_t>{25}));
  EXPECT_EQ(train.labels().data_ptr<int64_t>()[13], 3);
  EXPECT_EQ(train.images().data_ptr<uint8_t>()[2 * 784 + 5], (2 * 37 + 5) % 256);
  EXPECT_EQ(train.images_path(), dir.file("train-images-idx3-ubyte.gz"));
  EXPECT_EQ(test.labels_path(), dir.file("t10k-labels-idx1-ubyte"));
}

TEST(Mnist, BatchesAreScaledFloatImagesAndInt64Labels) {
  ScratchDir dir;
  write_small_mnist(dir);
  MNIST train(dir.path().string());
  const std::array<int64_t, 3> indices = {7, 0, 24};
  ember::data::Batch batch = train.get_batch(indices);
  ASSERT_EQ(batch.data.dtype(), ember::kFloat32);
  ASSERT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{3, 1, 28, 28}));
  ASSERT_EQ(batch.target.dtype(), ember::kInt64);
  ASSERT_EQ(batch.target.sizes().vec(), (std::vector<int64_t>{3}));
  const float* data = batch.data.data_ptr<float>();
  for (size_t b = 0; b < indices.size(); ++b) {
    for (int p = 0; p < 784; p += 97) {
      const auto byte = static_cast<uint8_t>((indices[b] * 37 + p) % 256);
      // Exactly float32(byte) / 255, as the PyTorch baseline computes it.
      EXPECT_EQ(data[b * 784 + p], static_cast<float>(byte) / 255.0f) << "sample " << indices[b] << " pixel " << p;
    }
    EXPECT_EQ(batch.target.data_ptr<int64_t>()[b], indices[b] % 10);
  }
  // 255 is exactly 1 and 0 exactly 0: the range is [0, 1].
  const std::array<int64_t, 1> bright = {1};  // image 1 holds byte 255 at pixel 218
  EXPECT_EQ(train.get_batch(bright).data.data_ptr<float>()[218], 1.0f);

  ember::data::Example one = train.get(7);
  EXPECT_EQ(one.data.sizes().vec(), (std::vector<int64_t>{1, 28, 28}));
  EXPECT_EQ(one.target.dim(), 0);
  EXPECT_EQ(one.target.item<int64_t>(), 7);
  EXPECT_EQ(one.data.contiguous().data_ptr<float>()[100], data[100]);

  const std::array<int64_t, 1> outside = {25};
  EXPECT_EQ(error_of([&] { train.get_batch(outside); }),
            "MNIST: index 25 is out of range for a data set of 25 samples");
}

TEST(Mnist, LimitKeepsTheFirstSamples) {
  ScratchDir dir;
  write_small_mnist(dir);
  MNIST first(dir.path().string(), MNIST::Split::Train, 10);
  EXPECT_EQ(first.size(), 10);
  EXPECT_EQ(first.images().sizes().vec(), (std::vector<int64_t>{10, 28, 28}));
  EXPECT_EQ(first.images().data_ptr<uint8_t>()[9 * 784], (9 * 37) % 256);
  EXPECT_EQ(MNIST(dir.path().string(), MNIST::Split::Train, 1000).size(), 25);
  EXPECT_EQ(error_of([&] { MNIST(dir.path().string(), MNIST::Split::Train, 0); }),
            "MNIST: limit must be at least 1, got 0");
}

TEST(Mnist, PrefersThePlainFileWhenBothExist) {
  ScratchDir dir;
  write_small_mnist(dir);
  write_plain(dir.file("train-labels-idx1-ubyte"), idx_file({25}, Bytes(25, 4)));
  write_plain(dir.file("train-images-idx3-ubyte"), idx_file({25, 28, 28}, image_bytes(25)));
  MNIST train(dir.path().string());
  EXPECT_EQ(train.labels_path(), dir.file("train-labels-idx1-ubyte"));
  EXPECT_EQ(train.labels().data_ptr<int64_t>()[0], 4);
}

TEST(MnistErrors, MissingDirectoryOrFile) {
  ScratchDir dir;
  const std::string nowhere = dir.file("nowhere");
  EXPECT_TRUE(contains(error_of([&] { MNIST m(nowhere); }),
                       nowhere + ": no such directory (Fashion-MNIST comes with Debian's dataset-fashion-mnist"));
  write_small_mnist(dir);
  std::filesystem::remove(dir.file("t10k-labels-idx1-ubyte"));
  EXPECT_TRUE(
      contains(error_of([&] { MNIST m(dir.path().string(), MNIST::Split::Test); }),
               dir.path().string() + ": neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz is there"));
}

TEST(MnistErrors, ImagesAndLabelsMustAgree) {
  ScratchDir dir;
  write_small_mnist(dir);
  write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_file({24}, label_bytes(24)));
  EXPECT_EQ(error_of([&] { MNIST m(dir.path().string()); }),
            "images and labels disagree: " + dir.file("train-images-idx3-ubyte.gz") + " holds 25 images but " +
                dir.file("train-labels-idx1-ubyte.gz") + " holds 24 labels");
}

TEST(MnistErrors, LabelsMustBeClasses) {
  ScratchDir dir;
  write_small_mnist(dir);
  Bytes labels = label_bytes(25);
  labels[17] = 10;
  write_gzip(dir.file("train-labels-idx1-ubyte.gz"), idx_file({25}, labels));
  EXPECT_EQ(error_of([&] { MNIST m(dir.path().string()); }),
            dir.file("train-labels-idx1-ubyte.gz") + ": label 10 at index 17 is not a class (0 to 9)");
}

TEST(MnistErrors, ShapesMustBeImagesAndLabels) {
  ScratchDir dir;
  write_small_mnist(dir);
  write_plain(dir.file("t10k-images-idx3-ubyte"), idx_file({12, 784}, image_bytes(12)));
  EXPECT_EQ(
      error_of([&] { MNIST m(dir.path().string(), MNIST::Split::Test); }),
      dir.file("t10k-images-idx3-ubyte") + ": expected images of shape [N, rows, columns], the file holds [12, 784]");
  write_plain(dir.file("t10k-images-idx3-ubyte"), idx_file({12, 28, 28}, image_bytes(12)));
  write_plain(dir.file("t10k-labels-idx1-ubyte"), idx_file({12, 1}, label_bytes(12)));
  EXPECT_EQ(error_of([&] { MNIST m(dir.path().string(), MNIST::Split::Test); }),
            dir.file("t10k-labels-idx1-ubyte") + ": expected labels of shape [N], the file holds [12, 1]");
}

TEST(MnistErrors, ABrokenFileIsNamed) {
  ScratchDir dir;
  write_small_mnist(dir);
  const Bytes whole = idx_file({12, 28, 28}, image_bytes(12));
  write_plain(dir.file("t10k-images-idx3-ubyte"), Bytes(whole.begin(), whole.end() - 100));
  EXPECT_EQ(
      error_of([&] { MNIST m(dir.path().string(), MNIST::Split::Test); }),
      dir.file("t10k-images-idx3-ubyte") + ": truncated: header says 12x28x28 = 9408 bytes of data, file holds 9308");
}

// ---- the real data set ----

bool have_fashion_mnist() { return std::filesystem::is_directory(ember::data::kFashionMnistDir); }

#define SKIP_WITHOUT_FASHION_MNIST()                                                    \
  if (!have_fashion_mnist())                                                            \
  GTEST_SKIP() << "Fashion-MNIST is not installed in " << ember::data::kFashionMnistDir \
               << " (on Debian: apt-get install dataset-fashion-mnist)"

TEST(FashionMnist, TrainSetHas6000ImagesPerClass) {
  SKIP_WITHOUT_FASHION_MNIST();
  MNIST train;
  ASSERT_EQ(train.size(), 60000);
  EXPECT_EQ(train.images().sizes().vec(), (std::vector<int64_t>{60000, 28, 28}));
  const int64_t* labels = train.labels().data_ptr<int64_t>();
  EXPECT_EQ(labels[0], 9);  // an ankle boot
  std::array<int64_t, 10> histogram{};
  for (int64_t i = 0; i < train.size(); ++i) ++histogram[labels[i]];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram[c], 6000) << "class " << c;
}

TEST(FashionMnist, TestSetHas1000ImagesPerClass) {
  SKIP_WITHOUT_FASHION_MNIST();
  MNIST test(ember::data::kFashionMnistDir, MNIST::Split::Test);
  ASSERT_EQ(test.size(), 10000);
  EXPECT_EQ(test.images().sizes().vec(), (std::vector<int64_t>{10000, 28, 28}));
  const int64_t* labels = test.labels().data_ptr<int64_t>();
  EXPECT_EQ(labels[0], 9);
  std::array<int64_t, 10> histogram{};
  for (int64_t i = 0; i < test.size(); ++i) ++histogram[labels[i]];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram[c], 1000) << "class " << c;
  // Images use the whole byte range, so scaled batches span [0, 1] exactly.
  const uint8_t* pixels = test.images().data_ptr<uint8_t>();
  uint8_t low = 255, high = 0;
  for (int64_t i = 0; i < test.images().numel(); ++i) {
    low = std::min(low, pixels[i]);
    high = std::max(high, pixels[i]);
  }
  EXPECT_EQ(low, 0);
  EXPECT_EQ(high, 255);
}

}  // namespace
