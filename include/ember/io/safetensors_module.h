#pragma once
/// Modules and safetensors files in one call (safetensors.torch's load_file / load_model /
/// save_model for ember's nn::Module). In io, not nn: io sits above nn in ember's layers.
///
///   auto model = std::make_shared<nn::Linear>(784, 10);
///   io::save_model(*model, "model.safetensors");
///   nn::IncompatibleKeys keys = io::load_model(*model, "model.safetensors", /*strict=*/false);
#include <filesystem>

#include "ember/io/safetensors.h"
#include "ember/nn/module.h"

namespace ember::io {

/// The tensors of a safetensors file as a state_dict, keyed by their names in sorted order (the
/// order safetensors' load_file gives PyTorch), as CPU tensors.
nn::StateDict load_safetensors_state_dict(const std::filesystem::path& path,
                                          const SafetensorsLoadOptions& options = {});

/// module.load_state_dict(load_safetensors_state_dict(path), strict): copies the file's tensors
/// into the module's parameters and buffers (converted to their dtype and device), with
/// load_state_dict's checks and messages; returns the missing and unexpected keys.
nn::IncompatibleKeys load_model(nn::Module& module, const std::filesystem::path& path, bool strict = true);

/// Writes module.state_dict() to `path` atomically (save_safetensors).
void save_model(const nn::Module& module, const std::filesystem::path& path, const SafetensorsMetadata& metadata = {});

}  // namespace ember::io
