#pragma once
// The first few hundred images of Fashion-MNIST, as plain IDX files in a scratch folder, for tests
// that run the trainer to check what it saves and resumes rather than how well it learns. Each
// run on the full set decompresses 60,000 training images and evaluates 10,000 test images every
// epoch; on the subset a run costs a fraction of a second, which matters most under the
// sanitizers, where these tests were CI's slowest.
#include <cstdint>
#include <filesystem>
#include <vector>

#include "data/idx_test_files.h"
#include "ember/data/mnist.h"
#include "support/fashion_mnist.h"
#include "support/temp_dir.h"

namespace ember_test {

namespace detail {

// The tensor's bytes (uint8, contiguous) as an IDX file of its sizes.
inline void write_idx(const std::filesystem::path& path, const ember::Tensor& bytes) {
  std::vector<uint32_t> dims;
  for (int64_t d = 0; d < bytes.dim(); ++d) dims.push_back(static_cast<uint32_t>(bytes.size(d)));
  const auto* data = static_cast<const uint8_t*>(bytes.data_ptr());
  write_plain(path.string(), idx_file(dims, Bytes(data, data + bytes.nbytes())));
}

}  // namespace detail

inline constexpr int64_t kSmallTrainImages = 640;  // 10 steps of 64
inline constexpr int64_t kSmallTestImages = 256;

/// A folder holding the first kSmallTrainImages training and kSmallTestImages test images of
/// Fashion-MNIST (labels alike), made on the first call and removed when the process ends. Call it
/// only after SKIP_WITHOUT_DATA().
inline const std::filesystem::path& small_fashion_mnist() {
  static const TempDir folder("small_fashion_mnist");
  static const bool written = [] {
    using ember::data::MNIST;
    const MNIST train(ember::data::kFashionMnistDir, MNIST::Split::Train, kSmallTrainImages);
    const MNIST test(ember::data::kFashionMnistDir, MNIST::Split::Test, kSmallTestImages);
    detail::write_idx(folder / "train-images-idx3-ubyte", train.images().contiguous());
    detail::write_idx(folder / "train-labels-idx1-ubyte", train.labels().to(ember::kUInt8).contiguous());
    detail::write_idx(folder / "t10k-images-idx3-ubyte", test.images().contiguous());
    detail::write_idx(folder / "t10k-labels-idx1-ubyte", test.labels().to(ember::kUInt8).contiguous());
    return true;
  }();
  (void)written;
  return folder.path();
}

}  // namespace ember_test
