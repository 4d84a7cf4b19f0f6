// The generic batch gather: one get() per sample, then one stack per field.
#include "ember/data/dataset.h"

#include <vector>

#include "core/check.h"
#include "ember/ops.h"

namespace ember::data {

Batch Dataset::get_batch(std::span<const int64_t> indices) const {
  EMBER_CHECK(!indices.empty(), "Dataset::get_batch: a batch needs at least one index");
  std::vector<Tensor> data;
  std::vector<Tensor> target;
  data.reserve(indices.size());
  target.reserve(indices.size());
  for (int64_t index : indices) {
    Example example = get(index);
    data.push_back(std::move(example.data));
    target.push_back(std::move(example.target));
  }
  // A data set without targets (for unsupervised learning) leaves them undefined.
  const bool has_target = target.front().defined();
  return {stack(data), has_target ? stack(target) : Tensor()};
}

}  // namespace ember::data
