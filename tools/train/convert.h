#pragma once
// `ember convert`: weights from one file format to another, chosen by the files' extensions.
#include <filesystem>
#include <optional>
#include <string>

namespace ember::train {

struct ConvertResult {
  size_t tensors = 0;
  std::string source_format, target_format;
};

/// Reads a state_dict from `input` (.safetensors, .pt/.pth/.bin as torch.save writes them, or
/// .npz) and writes it to `output` in the format its extension names. `key` selects the
/// state_dict inside a checkpoint: an entry of a torch.save'd dict ("model", "state_dict"), or the
/// "KEY." prefix of safetensors names (an ember checkpoint keeps the model under "model.").
/// Errors are ember::Error saying what the input holds and which --key would select it.
ConvertResult convert_weights(const std::filesystem::path& input, const std::filesystem::path& output,
                              const std::optional<std::string>& key);

}  // namespace ember::train
