#pragma once
/// ember::data::Dataset: indexed samples that a DataLoader gathers into batches.
#include <cstdint>
#include <span>

#include "ember/tensor.h"

namespace ember::data {

/// One sample, or a batch of them: the input and what the model should predict for it.
struct Example {
  Tensor data;
  Tensor target;
};
/// A batch has the same two fields, each with a leading batch dimension.
using Batch = Example;

/// A map-style data set, as torch.utils.data.Dataset: `size()` samples addressed by index.
///
/// A DataLoader calls get_batch() from its worker thread while the program may use the data set
/// from its own thread, so both methods must be safe to call concurrently (const and free of
/// shared mutable state, as reading tensors that never change is).
class Dataset {
 public:
  virtual ~Dataset() = default;

  /// The number of samples.
  virtual int64_t size() const = 0;

  /// Sample `index`, 0 <= index < size().
  virtual Example get(int64_t index) const = 0;

  /// The samples at `indices`, stacked along a new leading dimension. This default calls get()
  /// once per index and stacks the results; data sets held in memory should override it to
  /// gather rows straight into one batch tensor, so a batch costs two allocations, not 2·B + 2.
  virtual Batch get_batch(std::span<const int64_t> indices) const;
};

}  // namespace ember::data
