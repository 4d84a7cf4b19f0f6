#pragma once
// What the CUDA driver says about this machine, asked once. Built with the CUDA toolkit, this
// really asks the driver (src/backend/cuda/cuda_probe.cpp); without it, it says so
// (src/backend/cuda_probe_none.cpp). Never throws, never aborts.
#include <string>
#include <vector>

namespace ember {

struct CudaProbe {
  bool built = false;
  int device_count = 0;
  std::string reason;            // why CUDA is not usable; empty when it is
  std::string runtime_version;   // "13.0"
  std::string driver_version;    // "" when no driver is installed
  std::vector<std::string> device_names;
};

/// Probes on first call, then returns the cached answer.
const CudaProbe& cuda_probe() noexcept;

}  // namespace ember
