#include "train/convert.h"

#include <algorithm>
#include <cctype>

#include "ember/error.h"
#include "ember/io/numpy.h"
#include "ember/io/pytorch.h"
#include "ember/io/safetensors.h"

namespace ember::train {

namespace {

enum class Format { Safetensors, Torch, Npz };

Format format_of(const std::filesystem::path& path, const char* role) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".safetensors") return Format::Safetensors;
  if (ext == ".pt" || ext == ".pth" || ext == ".bin") return Format::Torch;
  if (ext == ".npz") return Format::Npz;
  throw Error(std::string("ember convert: cannot tell the format of the ") + role + " file '" + path.string() +
              "' from its extension; use .safetensors, .pt (also .pth, .bin: torch.save's format) or .npz");
}

const char* format_name(Format f) {
  switch (f) {
    case Format::Safetensors:
      return "safetensors";
    case Format::Torch:
      return "torch.save";
    case Format::Npz:
      return "npz";
  }
  return "";
}

// Keeps the names under "KEY." with the prefix removed.
io::NamedTensors select_prefix(const io::NamedTensors& all, const std::optional<std::string>& key,
                               const std::filesystem::path& input) {
  if (!key) return all;
  const std::string prefix = *key + ".";
  io::NamedTensors out;
  for (const auto& [name, t] : all)
    if (name.starts_with(prefix)) out.emplace_back(name.substr(prefix.size()), t);
  if (out.empty())
    throw Error("ember convert: no tensor in '" + input.string() + "' has a name starting with '" + prefix + "'");
  return out;
}

io::NamedTensors read_torch(const std::filesystem::path& input, const std::optional<std::string>& key) {
  io::TorchLoadOptions options;
  options.map_location = Device(DeviceType::CPU);
  const io::Value root = io::torch_load(input, options);
  const io::Value* value = &root;
  if (key) {
    if (!root.is_dict())
      throw Error("ember convert: --key needs a dict, but '" + input.string() + "' holds a " +
                  std::string(root.type_name()));
    value = &root[io::Value(*key)];
  } else if (root.is_dict()) {
    // A checkpoint dict: say which entries hold state_dicts.
    const bool all_tensors = std::all_of(root.dict_items().begin(), root.dict_items().end(),
                                         [](const auto& item) { return item.second.is_tensor(); });
    if (!all_tensors) {
      std::string candidates;
      for (const auto& [k, v] : root.dict_items())
        if (v.is_dict() && k.kind() == io::Value::Kind::String)
          candidates += (candidates.empty() ? "" : ", ") + k.to_string();
      throw Error("ember convert: '" + input.string() +
                  "' is a checkpoint, not a state_dict (some entries are not tensors); choose the state_dict with "
                  "--key" +
                  (candidates.empty() ? std::string() : " (dict entries: " + candidates + ")"));
    }
  }
  io::NamedTensors out;
  for (const auto& [name, t] : to_state_dict(*value)) out.emplace_back(name, t);
  return out;
}

}  // namespace

ConvertResult convert_weights(const std::filesystem::path& input, const std::filesystem::path& output,
                              const std::optional<std::string>& key) {
  const Format from = format_of(input, "input"), to = format_of(output, "output");
  if (std::filesystem::exists(output) && std::filesystem::equivalent(input, output))
    throw Error("ember convert: the input and the output are the same file");

  io::NamedTensors tensors;
  switch (from) {
    case Format::Safetensors:
      tensors = select_prefix(io::load_safetensors(input).tensors, key, input);
      break;
    case Format::Npz:
      tensors = select_prefix(io::load_npz(input), key, input);
      break;
    case Format::Torch:
      tensors = read_torch(input, key);
      break;
  }

  switch (to) {
    case Format::Safetensors:
      io::save_safetensors(output, tensors);
      break;
    case Format::Npz:
      io::save_npz(output, tensors);
      break;
    case Format::Torch: {
      nn::StateDict state;
      for (const auto& [name, t] : tensors) state.insert(name, t);
      io::torch_save(output, io::to_value(state));
      break;
    }
  }
  return {tensors.size(), format_name(from), format_name(to)};
}

}  // namespace ember::train
