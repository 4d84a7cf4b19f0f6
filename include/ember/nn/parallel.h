#pragma once
/// ember::nn::DistributedDataParallel: data-parallel training across the ranks of a job
/// (ember/distributed.h), as torch.nn.parallel.DistributedDataParallel.
///
///   distributed::init();
///   auto model = std::make_shared<nn::DistributedDataParallel>(make_model());
///   optim::SGD sgd(model->parameters(), {.lr = 0.1});
///   for (auto& batch : loader) {            // each rank its own shard: DataLoaderOptions::num_replicas/rank
///     sgd.zero_grad();
///     nn::functional::cross_entropy(model->forward(batch.data), batch.target).backward();
///     sgd.step();                           // every rank now holds the same gradients
///   }
///
/// The constructor copies rank 0's parameters and buffers to every rank. During backward(), each
/// gradient is copied into a bucket as soon as it is accumulated, and a bucket is all-reduced
/// (averaged) as soon as all its gradients are there, while backward goes on with earlier layers;
/// backward() returns once every bucket is averaged and copied back into grad(). So K steps on N
/// ranks with batch B each give the parameters of K steps with batch N*B on one process (for
/// models without batch statistics or dropout; BatchNorm normalises each rank's batch on its own,
/// as in PyTorch).
///
/// Buckets are reduced in the same order on every rank. A parameter that received no gradient
/// on a rank in some backward() contributes what its grad() holds there, or zeros (PyTorch needs
/// find_unused_parameters=True for that); after the reduction it has the average as its grad().
/// The averaged gradients are views of the buckets (PyTorch's gradient_as_bucket_view=True): a
/// copy of a gradient kept across steps must be a clone().
#include <memory>
#include <string>
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

struct DistributedDataParallelOptions {
  /// Upper size of a bucket of gradients, in MiB (PyTorch's bucket_cap_mb). The first bucket,
  /// the last layers' gradients, is capped at 1 MiB so that communication starts early.
  double bucket_cap_mb = 25;
  /// Copy rank 0's buffers (BatchNorm's running statistics) to every rank before each forward.
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public Module {
 public:
  explicit DistributedDataParallel(std::shared_ptr<Module> module, DistributedDataParallelOptions options = {});
  ~DistributedDataParallel() override;

  std::string name() const override { return "DistributedDataParallel"; }
  Tensor forward(const Tensor& input) override;

  /// The wrapped module (its state_dict has no "module." prefix).
  const std::shared_ptr<Module>& module() const { return module_; }

  /// While off, backward() only accumulates gradients locally (PyTorch's no_sync()); the next
  /// backward() with it on averages everything accumulated.
  void set_gradient_sync(bool on) { sync_ = on; }
  bool gradient_sync() const { return sync_; }

  /// The number of elements in each bucket, in the order they are reduced.
  std::vector<int64_t> bucket_sizes() const;

 private:
  class Reducer;
  std::shared_ptr<Module> module_;
  DistributedDataParallelOptions options_;
  std::unique_ptr<Reducer> reducer_;
  bool sync_ = true;
};

/// Turns gradient averaging off for its scope (`with ddp.no_sync():`).
class NoSyncGuard {
 public:
  explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.gradient_sync()) {
    ddp.set_gradient_sync(false);
  }
  ~NoSyncGuard() { ddp_.set_gradient_sync(previous_); }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;

 private:
  DistributedDataParallel& ddp_;
  bool previous_;
};

}  // namespace ember::nn
