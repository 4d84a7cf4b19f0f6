#include "train/run_files.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ember/error.h"
#include "ember/version.h"

namespace ember::train {

std::string config_to_json(const RunConfig& config, const std::string& device, int64_t parameters) {
  nlohmann::ordered_json j;
  j["ember_version"] = kVersion;
  j["model"] = config.model;
  j["optimizer"] = config.optimizer;
  j["lr"] = config.lr;
  j["momentum"] = config.momentum;
  j["scheduler"] = config.scheduler;
  j["batch_size"] = config.batch_size;
  j["epochs"] = config.epochs;
  j["seed"] = config.seed;
  j["data"] = config.data;
  j["limit"] = config.limit ? nlohmann::ordered_json(*config.limit) : nlohmann::ordered_json(nullptr);
  j["amp"] = config.amp;
  j["deterministic"] = config.deterministic;
  j["device"] = device;
  j["parameters"] = parameters;
  return j.dump(2) + "\n";
}

RunConfig read_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path.string() + "': no such file (is this an `ember train` run directory?)");
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
    RunConfig config;
    config.model = j.at("model").get<std::string>();
    config.optimizer = j.at("optimizer").get<std::string>();
    config.scheduler = j.at("scheduler").get<std::string>();
    config.data = j.at("data").get<std::string>();
    config.lr = j.at("lr").get<double>();
    config.momentum = j.at("momentum").get<double>();
    config.batch_size = j.at("batch_size").get<int64_t>();
    config.epochs = j.at("epochs").get<int64_t>();
    config.seed = j.at("seed").get<uint64_t>();
    if (!j.at("limit").is_null()) config.limit = j.at("limit").get<int64_t>();
    config.amp = j.value("amp", false);                      // absent in runs made before --amp
    config.deterministic = j.value("deterministic", false);  // and before --deterministic
    return config;
  } catch (const nlohmann::json::exception& e) {
    throw Error("'" + path.string() + "' is not a valid run configuration: " + e.what());
  }
}

std::string metrics_csv(const std::vector<EpochMetrics>& history) {
  std::string out =
      "epoch,train_loss,test_loss,test_accuracy,train_seconds,samples_per_second,peak_gpu_mib,skipped_steps\n";
  for (const EpochMetrics& m : history) {
    char row[256];
    std::snprintf(row, sizeof row, "%lld,%.6f,%.6f,%.4f,%.3f,%.1f,%.1f,%lld\n", static_cast<long long>(m.epoch),
                  m.train_loss, m.test_loss, m.test_accuracy, m.train_seconds, m.samples_per_second, m.peak_gpu_mib,
                  static_cast<long long>(m.skipped_steps));
    out += row;
  }
  return out;
}

std::string history_to_json(const std::vector<EpochMetrics>& history) {
  nlohmann::json rows = nlohmann::json::array();
  for (const EpochMetrics& m : history) {
    rows.push_back({m.epoch, m.train_loss, m.test_loss, m.test_accuracy, m.train_seconds, m.samples_per_second, m.lr,
                    m.peak_gpu_mib, m.skipped_steps});
  }
  return rows.dump();
}

std::vector<EpochMetrics> history_from_json(const std::string& text) {
  std::vector<EpochMetrics> history;
  try {
    for (const auto& row : nlohmann::json::parse(text)) {
      EpochMetrics m;
      m.epoch = row.at(0).get<int64_t>();
      m.train_loss = row.at(1).get<double>();
      m.test_loss = row.at(2).get<double>();
      m.test_accuracy = row.at(3).get<double>();
      m.train_seconds = row.at(4).get<double>();
      m.samples_per_second = row.at(5).get<double>();
      m.lr = row.at(6).get<double>();
      if (row.size() > 7) m.peak_gpu_mib = row.at(7).get<double>();  // absent in 0.1.0 checkpoints
      if (row.size() > 8) m.skipped_steps = row.at(8).get<int64_t>();
      history.push_back(m);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("the checkpoint's epoch history is malformed: ") + e.what());
  }
  return history;
}

}  // namespace ember::train
