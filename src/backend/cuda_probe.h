#pragma once
// What the CUDA driver says about this machine, asked once: src/backend/cuda_loader.cpp loads
// the CUDA backend where a driver is present and keeps its probe's answer
// (src/backend/cuda/cuda_probe.cpp); without a driver, a backend or a build with CUDA, it says
// which. Never throws, never aborts.
#include <string>
#include <vector>

namespace ember {

struct CudaProbe {
  bool built = false;
  int device_count = 0;
  std::string reason;           // why CUDA is not usable; empty when it is
  std::string runtime_version;  // "13.0"
  std::string driver_version;   // "" when no driver is installed
  std::vector<std::string> device_names;
};

/// Probes on first call, then returns the cached answer.
const CudaProbe& cuda_probe() noexcept;

}  // namespace ember
