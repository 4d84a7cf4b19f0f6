#pragma once
// Whether memory comes from a mapping of a given file, for tests of memory-mapped loads.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace ember_test {

/// Whether `p` lies in a mapping of `path` (Linux's /proc/self/maps).
inline bool mapped_from(const std::filesystem::path& path, const void* p) {
  std::ifstream maps("/proc/self/maps");
  const auto address = reinterpret_cast<uintptr_t>(p);
  const std::string want = std::filesystem::canonical(path).string();
  std::string line;
  while (std::getline(maps, line)) {
    uintptr_t begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%zx-%zx", &begin, &end) != 2) continue;
    if (address >= begin && address < end) return line.ends_with(want);
  }
  return false;
}

}  // namespace ember_test
