#pragma once
/// MNIST-style data sets (MNIST, Fashion-MNIST) and the IDX file format they are stored in.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ember/data/dataset.h"
#include "ember/tensor.h"

namespace ember::data {

/// Reads an IDX file (the format of MNIST and Fashion-MNIST), gzip-compressed or not: which one
/// is told by the file's first bytes, not its name. Returns a uint8 tensor whose sizes are the
/// dimensions in the file's header. Only element type 0x08 (unsigned byte) is supported.
///
/// A file that is missing, is not IDX, is cut short, has bytes after its data, or is corrupt
/// throws ember::Error naming the file and the problem. Memory is allocated only for as much
/// data as the file can hold, whatever its header claims.
Tensor read_idx(const std::string& path);

/// Reads the bytes of an IDX file already in memory, gzip-compressed or not, exactly as read_idx
/// reads a file; `source` names them in error messages.
Tensor read_idx_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

/// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// An MNIST-format data set: 28x28 grey images with labels 0-9, read from the four IDX files
/// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
/// t10k-labels-idx1-ubyte in `root`, each plain or with a .gz suffix (the plain file is used when
/// both exist). Works for MNIST, Fashion-MNIST, KMNIST and others with the same layout.
///
/// Samples are float32 images [1, H, W] with values x/255 in [0, 1], as torchvision's ToTensor
/// (and the PyTorch baseline) make them, and int64 labels.
class MNIST : public Dataset {
 public:
  enum class Split { Train, Test };

  /// Loads `split` from `root`; with `limit`, keeps only the first `limit` samples.
  explicit MNIST(const std::string& root = kFashionMnistDir, Split split = Split::Train,
                 std::optional<int64_t> limit = std::nullopt);

  int64_t size() const override { return labels_.size(0); }
  /// Image [1, H, W] float32 in [0, 1], label 0-dim int64.
  Example get(int64_t index) const override;
  /// Images [B, 1, H, W] float32 in [0, 1], labels [B] int64, each gathered into one new tensor.
  Batch get_batch(std::span<const int64_t> indices) const override;

  /// All images as stored, uint8 [N, H, W].
  const Tensor& images() const { return images_; }
  /// All labels, int64 [N].
  const Tensor& labels() const { return labels_; }
  Split split() const { return split_; }
  /// The files the images and labels were read from.
  const std::string& images_path() const { return images_path_; }
  const std::string& labels_path() const { return labels_path_; }

  static constexpr int64_t kNumClasses = 10;

 private:
  Tensor images_;
  Tensor labels_;
  Split split_;
  std::string images_path_;
  std::string labels_path_;
};

}  // namespace ember::data
