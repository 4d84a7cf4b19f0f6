#pragma once
// The training batches of a data set held on a GPU. The images and labels are copied to the
// device once, and each epoch's shuffled order once per epoch; a batch is then gathered and
// converted on the device, so a training step moves nothing between host and device (a copy
// from pageable host memory would make the host wait for the GPU every step).
//
// It hands out the same batches, in the same order, as data::DataLoader with shuffle and the
// same seed (and the same num_replicas and rank, the DistributedSampler split of
// data::replica_order), and keeps the same cursor, so a checkpoint written on one resumes on the
// other.
#include <cstdint>
#include <optional>

#include "ember/data/dataloader.h"
#include "ember/data/mnist.h"
#include "ember/tensor.h"

namespace ember::train {

class DeviceBatches {
 public:
  /// Hands out replica `rank` of `num_replicas`'s share of each epoch, as DataLoaderOptions does.
  DeviceBatches(const data::MNIST& set, Device device, int64_t batch_size, uint64_t seed, int64_t num_replicas = 1,
                int64_t rank = 0);

  /// Whether `set` fits comfortably on `device` (a quarter of its memory at most), so holding it
  /// there leaves the model and activations room.
  static bool fits(const data::MNIST& set, Device device);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  data::DataLoaderState state() const { return cursor_; }
  void set_state(data::DataLoaderState state);
  /// The next batch of the epoch (images [B, 1, H, W] float32 in [0, 1], labels [B] int64), or
  /// std::nullopt at the epoch's end, which moves the cursor to the next epoch.
  std::optional<data::Batch> next();

 private:
  Tensor images_;  // uint8 [N, H, W] on the device
  Tensor labels_;  // int64 [N] on the device
  Tensor order_;   // int64 [samples_] on the device: this replica's samples of epoch order_epoch_
  int64_t order_epoch_ = -1;
  int64_t size_ = 0;
  int64_t samples_ = 0;  // this replica's samples per epoch: ceil(size_ / num_replicas_)
  int64_t batch_size_ = 1;
  uint64_t seed_ = 0;
  int64_t num_replicas_ = 1;
  int64_t rank_ = 0;
  int64_t batches_per_epoch_ = 0;
  data::DataLoaderState cursor_;
};

}  // namespace ember::train
