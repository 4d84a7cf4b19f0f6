#pragma once
// A run's recipe: the options resolved into a RunConfig (resolve(), declared in trainer.h), and
// the optimizer and learning-rate schedule it names.
#include <memory>
#include <string>
#include <vector>

#include "ember/optim/lr_scheduler.h"
#include "ember/optim/optimizer.h"
#include "train/trainer.h"

namespace ember::train {

std::unique_ptr<optim::Optimizer> make_optimizer(const RunConfig& config, std::vector<Tensor> params);
/// Null for --scheduler none.
std::unique_ptr<optim::LRScheduler> make_scheduler(const RunConfig& config, optim::Optimizer& optimizer);
/// The data folder a run reads: `data`, or Debian's Fashion-MNIST folder when empty.
std::string data_dir(const std::string& data);

}  // namespace ember::train
