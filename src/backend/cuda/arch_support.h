#pragma once
// Whether a build for a list of CUDA architectures can run on a GPU, decided from the list and
// the GPU's compute capability alone. The availability probe used to ask the runtime (load a
// kernel on device 0), which creates a CUDA context there: about 0.5 GiB of device 0's memory in
// every process, 3.5 GiB on device 0 for an 8-rank job whose other ranks never touch it. Host
// code, so that the rules are tested without a GPU.
#include <cstdint>
#include <string_view>

namespace ember::cuda_impl {

enum class ArchVerdict { Runs, DoesNotRun, Unknown };

/// `archs` is CMake's CUDA_ARCHITECTURES list, separated by ';' or ',': entries such as "80"
/// (machine code and PTX for 8.0), "80-real" (machine code only), "90-virtual" (PTX only), "90a"
/// (code for exactly 9.0), "100f" (the 10.x family). Machine code for X.Y runs on X.Z with Z >= Y
/// (exactly X.Y for an "a" architecture); PTX for X.Y is compiled by the driver for any newer GPU
/// (an "a" or "f" PTX only where its machine code would run). Unknown when the list holds an
/// entry that names no number ("native", "all", "all-major") and nothing else fits.
inline ArchVerdict arch_list_runs_on(std::string_view archs, int major, int minor) {
  bool unknown = false;
  while (!archs.empty()) {
    const size_t end = archs.find_first_of(";,");
    std::string_view entry = archs.substr(0, end);
    archs = end == std::string_view::npos ? std::string_view() : archs.substr(end + 1);
    if (entry.empty()) continue;
    bool real = true, virt = true;
    if (entry.ends_with("-real")) {
      virt = false;
      entry.remove_suffix(5);
    } else if (entry.ends_with("-virtual")) {
      real = false;
      entry.remove_suffix(8);
    }
    char variant = 0;  // 'a' (this GPU only) or 'f' (its family)
    if (!entry.empty() && (entry.back() == 'a' || entry.back() == 'f')) {
      variant = entry.back();
      entry.remove_suffix(1);
    }
    int number = 0;
    bool numeric = entry.size() >= 2 && entry.size() <= 3;
    for (char ch : entry) {
      if (ch < '0' || ch > '9') numeric = false;
      number = number * 10 + (ch - '0');
    }
    if (!numeric) {
      unknown = true;
      continue;
    }
    const int arch_major = number / 10, arch_minor = number % 10;
    const bool same_family = major == arch_major && minor >= arch_minor;
    const bool machine_code_runs = variant == 'a' ? major == arch_major && minor == arch_minor : same_family;
    const bool ptx_runs = variant != 0 ? machine_code_runs : major * 10 + minor >= number;
    if ((real && machine_code_runs) || (virt && ptx_runs)) return ArchVerdict::Runs;
  }
  return unknown ? ArchVerdict::Unknown : ArchVerdict::DoesNotRun;
}

}  // namespace ember::cuda_impl
