#pragma once
// The text files of a run directory: config.json and metrics.csv, and the per-epoch history
// that a checkpoint carries so that a resumed run rewrites them exactly.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace ember::train {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, test_loss = 0, test_accuracy = 0, train_seconds = 0, samples_per_second = 0, lr = 0;
  double peak_gpu_mib = 0;    // peak memory held by tensors on the GPU since the run started; 0 on the CPU
  int64_t skipped_steps = 0;  // optimizer steps skipped for non-finite values (--nan-policy skip)
};

/// config.json: the resolved options plus facts about the run (`device`, `parameters`, ...).
std::string config_to_json(const RunConfig& config, const std::string& device, int64_t parameters);
/// Reads config.json back; a missing or malformed file is an ember::Error naming it.
RunConfig read_config(const std::filesystem::path& path);

/// metrics.csv: the header and one row per epoch.
std::string metrics_csv(const std::vector<EpochMetrics>& history);

/// The history as JSON (doubles round-trip exactly) and back.
std::string history_to_json(const std::vector<EpochMetrics>& history);
std::vector<EpochMetrics> history_from_json(const std::string& text);

}  // namespace ember::train
