#pragma once
/// Training checkpoints: everything a run needs to continue exactly where it stopped.
///
///   io::Checkpoint ckpt;
///   ckpt.model = model->state_dict();
///   ckpt.optimizer = optimizer.state_dict();
///   ckpt.rng = get_rng_state();
///   ckpt.loader = loader.state();
///   io::save_checkpoint(run_dir / "checkpoint.safetensors", ckpt);
///
/// The file is a safetensors file, so any safetensors reader opens it: the model's tensors are
/// stored under "model.<state_dict key>" (strip the prefix and torch's load_state_dict takes
/// them), the optimizer's under "optimizer.<key>", the generator states as "rng.cpu" and (after
/// training on a GPU) "rng.cuda"; numbers and counters are JSON strings in the metadata (a
/// GradScaler's under "grad_scaler", only when there is one, so older checkpoints still load). It is
/// written atomically — a temporary file, fsync, rename — so a crash or kill during a save
/// leaves the previous checkpoint intact.
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "ember/data/dataloader.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::io {

struct Checkpoint {
  nn::StateDict model;                        // Module::state_dict()
  optim::OptimizerStateDict optimizer;        // Optimizer::state_dict()
  std::map<std::string, double> scheduler;    // LRScheduler::state_dict(); empty without one
  std::map<std::string, double> grad_scaler;  // amp::GradScaler::state_dict(); empty without one
  Tensor rng;                                 // get_rng_state(); undefined to leave it out
  Tensor rng_cuda;                            // cuda::get_rng_state() of the training GPU, or undefined
  data::DataLoaderState loader;               // the training loader's cursor
  int64_t epoch = 0;                          // the caller's counters, stored as given
  int64_t step = 0;
  std::map<std::string, std::string> extra;  // free-form strings (a run's configuration, ...)
};

/// Writes `checkpoint` to `path` atomically. Errors are ember::Error naming the path.
void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint);

/// Reads a checkpoint written by save_checkpoint. A missing, truncated or foreign file is an
/// ember::Error naming the path and what is wrong with it.
Checkpoint load_checkpoint(const std::filesystem::path& path);

/// Reads the bytes of a checkpoint file already in memory, checked as load_checkpoint checks a
/// file; `source` names them in error messages.
Checkpoint load_checkpoint_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

}  // namespace ember::io
