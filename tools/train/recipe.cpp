#include "train/recipe.h"

#include <algorithm>
#include <cmath>

#include "ember/data/mnist.h"
#include "ember/error.h"
#include "ember/optim/optimizers.h"
#include "train/models.h"

namespace ember::train {

namespace {

void check_choice(const std::string& flag, const std::string& value, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) != choices.end()) return;
  std::string list;
  for (const std::string& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw Error(flag + " '" + value + "' is not one of: " + list);
}

}  // namespace

std::unique_ptr<optim::Optimizer> make_optimizer(const RunConfig& c, std::vector<Tensor> params) {
  if (c.optimizer == "sgd")
    return std::make_unique<optim::SGD>(std::move(params), optim::SGDOptions{.lr = c.lr, .momentum = c.momentum});
  if (c.optimizer == "adam") return std::make_unique<optim::Adam>(std::move(params), optim::AdamOptions{.lr = c.lr});
  if (c.optimizer == "adamw") return std::make_unique<optim::AdamW>(std::move(params), optim::AdamWOptions{.lr = c.lr});
  if (c.optimizer == "rmsprop") {
    return std::make_unique<optim::RMSprop>(std::move(params),
                                            optim::RMSpropOptions{.lr = c.lr, .momentum = c.momentum});
  }
  return std::make_unique<optim::Adadelta>(std::move(params), optim::AdadeltaOptions{.lr = c.lr});
}

std::unique_ptr<optim::LRScheduler> make_scheduler(const RunConfig& c, optim::Optimizer& optimizer) {
  if (c.scheduler == "cosine") return std::make_unique<optim::CosineAnnealingLR>(optimizer, c.epochs);
  if (c.scheduler == "step") return std::make_unique<optim::StepLR>(optimizer, 1, 0.7);
  return nullptr;
}

std::string data_dir(const std::string& data) { return data.empty() ? std::string(data::kFashionMnistDir) : data; }

RunConfig resolve(const TrainOptions& o) {
  check_choice("--model", o.model, model_names());
  const bool cnn = o.model == "cnn";
  RunConfig c;
  c.model = o.model;
  c.optimizer = o.optimizer.value_or(cnn ? "adadelta" : "adam");
  check_choice("--optimizer", c.optimizer, {"sgd", "adam", "adamw", "adadelta", "rmsprop"});
  // Adam/AdamW and RMSprop: PyTorch's defaults; Adadelta: pytorch/examples' 1.0.
  c.lr = o.lr.value_or(c.optimizer == "adadelta"                          ? 1.0
                       : c.optimizer == "sgd" || c.optimizer == "rmsprop" ? 1e-2
                                                                          : 1e-3);
  if (!(c.lr > 0) || !std::isfinite(c.lr)) throw Error("--lr must be a positive number, got " + std::to_string(c.lr));
  c.momentum = o.momentum;
  if (!(c.momentum >= 0) || !std::isfinite(c.momentum))
    throw Error("--momentum must be a non-negative number, got " + std::to_string(c.momentum));
  if (c.momentum != 0 && c.optimizer != "sgd" && c.optimizer != "rmsprop")
    throw Error("--momentum applies to --optimizer sgd and rmsprop only");
  const char* default_scheduler = c.optimizer == "sgd" ? "none" : c.optimizer == "adadelta" ? "step" : "cosine";
  c.scheduler = o.scheduler.value_or(default_scheduler);
  check_choice("--scheduler", c.scheduler, {"none", "step", "cosine"});
  c.batch_size = o.batch_size.value_or(64);
  if (c.batch_size < 1) throw Error("--batch-size must be at least 1, got " + std::to_string(c.batch_size));
  c.epochs = o.epochs.value_or(cnn ? 5 : 10);
  if (c.epochs < 1) throw Error("--epochs must be at least 1, got " + std::to_string(c.epochs));
  c.seed = o.seed;
  c.data = data_dir(o.data);
  c.limit = o.limit;
  c.amp = o.amp;
  c.deterministic = o.deterministic;
  if (c.limit && *c.limit < 1) throw Error("--limit must be at least 1, got " + std::to_string(*c.limit));
  return c;
}

}  // namespace ember::train
