// Modules and safetensors files in one call (include/ember/io/safetensors_module.h).
#include "ember/io/safetensors_module.h"

#include <algorithm>
#include <utility>

namespace ember::io {

nn::StateDict load_safetensors_state_dict(const std::filesystem::path& path, const SafetensorsLoadOptions& options) {
  SafetensorsData data = load_safetensors(path, options);
  // safetensors' load_file lists a file's tensors by name, whatever their order in the file.
  std::sort(data.tensors.begin(), data.tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  nn::StateDict state;
  for (auto& [name, tensor] : data.tensors) state.insert(std::move(name), std::move(tensor));
  return state;
}

nn::IncompatibleKeys load_model(nn::Module& module, const std::filesystem::path& path, bool strict) {
  return module.load_state_dict(load_safetensors_state_dict(path), strict);
}

void save_model(const nn::Module& module, const std::filesystem::path& path, const SafetensorsMetadata& metadata) {
  NamedTensors tensors;
  for (const auto& [key, value] : module.state_dict()) tensors.emplace_back(key, value);
  save_safetensors(path, tensors, metadata);
}

}  // namespace ember::io
