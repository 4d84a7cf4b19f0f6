#include "train/device_batches.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ember/cuda.h"
#include "ember/error.h"
#include "ember/factories.h"

namespace ember::train {

DeviceBatches::DeviceBatches(const data::MNIST& set, Device device, int64_t batch_size, uint64_t seed,
                             int64_t num_replicas, int64_t rank)
    : size_(set.size()), batch_size_(batch_size), seed_(seed), num_replicas_(num_replicas), rank_(rank) {
  // Checked before anything is copied to the device.
  if (batch_size < 1) throw Error("DeviceBatches: batch_size must be at least 1");
  if (num_replicas < 1) {
    throw Error("DeviceBatches: num_replicas must be at least 1, got " + std::to_string(num_replicas));
  }
  if (rank < 0 || rank >= num_replicas) {
    throw Error("Invalid rank " + std::to_string(rank) + ", rank should be in the interval [0, " +
                std::to_string(num_replicas - 1) + "]");
  }
  samples_ = data::replica_size(size_, num_replicas);
  batches_per_epoch_ = (samples_ + batch_size - 1) / batch_size;
  images_ = set.images().to(device);
  labels_ = set.labels().to(device);
}

bool DeviceBatches::fits(const data::MNIST& set, Device device) {
  if (!device.is_cuda()) return false;
  // Held: the uint8 images and int64 labels, the order, and one float32 batch at a time.
  const size_t bytes = set.images().nbytes() + set.labels().nbytes() * 2;
  const size_t total =
      cuda::get_device_properties(device.has_index() ? device.index() : cuda::current_device()).total_memory;
  return bytes <= total / 4;
}

void DeviceBatches::set_state(data::DataLoaderState state) {
  if (state.epoch < 0 || state.position < 0 || state.position > batches_per_epoch_) {
    throw Error("DeviceBatches: cannot resume at batch " + std::to_string(state.position) + " of epoch " +
                std::to_string(state.epoch) + " (an epoch has " + std::to_string(batches_per_epoch_) + " batches)");
  }
  cursor_ = state;
}

std::optional<data::Batch> DeviceBatches::next() {
  if (cursor_.position >= batches_per_epoch_) {
    cursor_ = {cursor_.epoch + 1, 0};
    return std::nullopt;
  }
  if (order_epoch_ != cursor_.epoch) {
    order_ = tensor(data::replica_order(data::shuffled_order(size_, seed_, cursor_.epoch), num_replicas_, rank_))
                 .to(images_.device());
    order_epoch_ = cursor_.epoch;
  }
  const int64_t start = cursor_.position * batch_size_;
  const int64_t count = std::min(batch_size_, samples_ - start);
  const Tensor index = order_.narrow(0, start, count);
  ++cursor_.position;
  // i / 255 in float32, the value MNIST::get_batch takes from its table.
  Tensor images = (images_.index_select(0, index).to(kFloat32) / 255.0).unsqueeze(1);
  return data::Batch{std::move(images), labels_.index_select(0, index)};
}

}  // namespace ember::train
