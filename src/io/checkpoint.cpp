// Checkpoints as safetensors files: tensors under prefixes, everything else as JSON metadata.
#include "ember/io/checkpoint.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "core/check.h"
#include "ember/io/safetensors.h"

namespace ember::io {

namespace {

constexpr std::string_view kFormat = "ember-checkpoint";
constexpr int kVersion = 1;
constexpr std::string_view kModelPrefix = "model.";
constexpr std::string_view kOptimizerPrefix = "optimizer.";
constexpr std::string_view kRngName = "rng.cpu";
constexpr std::string_view kCudaRngName = "rng.cuda";

// Doubles round-trip exactly through nlohmann's shortest representation, which is what makes a
// resumed run bit-identical (learning rates, betas and scheduler counters are doubles).
std::string to_json(const std::map<std::string, double>& numbers) { return nlohmann::json(numbers).dump(); }

std::map<std::string, double> numbers_from(const SafetensorsMetadata& metadata, const std::string& key,
                                           std::string_view source) {
  auto it = metadata.find(key);
  EMBER_CHECK(it != metadata.end(), "checkpoint '", source, "' has no \"", key, "\" entry (truncated or not ",
              "written by ember?)");
  try {
    return nlohmann::json::parse(it->second).get<std::map<std::string, double>>();
  } catch (const nlohmann::json::exception& e) {
    detail::fail("checkpoint '", source, "': entry \"", key, "\" is not a JSON object of numbers (", e.what(), ")");
  }
}

int64_t integer_from(const SafetensorsMetadata& metadata, const std::string& key, std::string_view source) {
  auto it = metadata.find(key);
  EMBER_CHECK(it != metadata.end(), "checkpoint '", source, "' has no \"", key, "\" entry");
  try {
    size_t used = 0;
    const int64_t value = std::stoll(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  detail::fail("checkpoint '", source, "': entry \"", key, "\" is not an integer: '", it->second, "'");
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& checkpoint) {
  NamedTensors tensors;
  for (const auto& [key, value] : checkpoint.model) tensors.emplace_back(std::string(kModelPrefix) + key, value);
  for (const auto& [key, value] : checkpoint.optimizer.tensors)
    tensors.emplace_back(std::string(kOptimizerPrefix) + key, value);
  if (checkpoint.rng.defined()) tensors.emplace_back(std::string(kRngName), checkpoint.rng);
  if (checkpoint.rng_cuda.defined()) tensors.emplace_back(std::string(kCudaRngName), checkpoint.rng_cuda);

  SafetensorsMetadata metadata;
  metadata["format"] = std::string(kFormat);
  metadata["version"] = std::to_string(kVersion);
  metadata["optimizer"] = to_json(checkpoint.optimizer.numbers);
  metadata["scheduler"] = to_json(checkpoint.scheduler);
  if (!checkpoint.grad_scaler.empty()) metadata["grad_scaler"] = to_json(checkpoint.grad_scaler);
  metadata["loader.epoch"] = std::to_string(checkpoint.loader.epoch);
  metadata["loader.position"] = std::to_string(checkpoint.loader.position);
  metadata["epoch"] = std::to_string(checkpoint.epoch);
  metadata["step"] = std::to_string(checkpoint.step);
  metadata["extra"] = nlohmann::json(checkpoint.extra).dump();
  save_safetensors(path, tensors, metadata);
}

namespace {

// What load_checkpoint and load_checkpoint_from_bytes share: the safetensors file is read and
// checked; this checks that it is an ember checkpoint and takes it apart.
Checkpoint checkpoint_from(SafetensorsData data, std::string_view source) {
  const SafetensorsMetadata& metadata = data.metadata;
  auto format = metadata.find("format");
  EMBER_CHECK(format != metadata.end() && format->second == kFormat, "'", source,
              "' is a safetensors file but not an ember checkpoint (no \"format\": \"", kFormat,
              "\" metadata); to load bare weights use io::load_safetensors");
  const int64_t version = integer_from(metadata, "version", source);
  EMBER_CHECK(version == kVersion, "checkpoint '", source, "' has format version ", version,
              ", this ember reads version ", kVersion);

  Checkpoint checkpoint;
  for (auto& [name, tensor] : data.tensors) {
    std::string_view key = name;
    if (key.starts_with(kModelPrefix)) {
      checkpoint.model.insert(std::string(key.substr(kModelPrefix.size())), tensor);
    } else if (key.starts_with(kOptimizerPrefix)) {
      checkpoint.optimizer.tensors[std::string(key.substr(kOptimizerPrefix.size()))] = tensor;
    } else if (key == kRngName) {
      checkpoint.rng = tensor;
    } else if (key == kCudaRngName) {
      checkpoint.rng_cuda = tensor;
    } else {
      detail::fail("checkpoint '", source, "' holds an unexpected tensor '", name, "'");
    }
  }
  checkpoint.optimizer.numbers = numbers_from(metadata, "optimizer", source);
  checkpoint.scheduler = numbers_from(metadata, "scheduler", source);
  if (metadata.count("grad_scaler") != 0) checkpoint.grad_scaler = numbers_from(metadata, "grad_scaler", source);
  checkpoint.loader.epoch = integer_from(metadata, "loader.epoch", source);
  checkpoint.loader.position = integer_from(metadata, "loader.position", source);
  checkpoint.epoch = integer_from(metadata, "epoch", source);
  checkpoint.step = integer_from(metadata, "step", source);
  auto extra = metadata.find("extra");
  if (extra != metadata.end()) {
    try {
      checkpoint.extra = nlohmann::json::parse(extra->second).get<std::map<std::string, std::string>>();
    } catch (const nlohmann::json::exception& e) {
      detail::fail("checkpoint '", source, "': entry \"extra\" is not a JSON object of strings (", e.what(), ")");
    }
  }
  return checkpoint;
}

}  // namespace

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  return checkpoint_from(load_safetensors(path), path.string());
}

Checkpoint load_checkpoint_from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  return checkpoint_from(load_safetensors_from_bytes(bytes, source), source);
}

}  // namespace ember::io
