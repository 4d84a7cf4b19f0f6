#pragma once
// Writes IDX files (plain and gzipped) into a scratch directory at run time, so the data tests
// need no committed binary fixtures.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ember_test {

using Bytes = std::vector<uint8_t>;

/// A fresh directory under the system's temporary directory, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ember-data-test-XXXXXX").string();
    if (!mkdtemp(pattern.data())) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// An IDX header for unsigned-byte data of these dimensions.
inline Bytes idx_header(const std::vector<uint32_t>& dims, uint8_t type = 0x08) {
  Bytes out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  }
  return out;
}

/// A complete IDX file: header, then `payload`.
inline Bytes idx_file(const std::vector<uint32_t>& dims, const Bytes& payload) {
  Bytes out = idx_header(dims);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

/// 0, 1, 2, ... wrapping at 251 (a prime, so rows of any width differ from their neighbours).
inline Bytes counting_bytes(size_t n) {
  Bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i % 251);
  return out;
}

inline void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// Writes `bytes` gzip-compressed with zlib's gzip writer, as the gzip tool would.
inline void write_gzip(const std::string& path, const Bytes& bytes) {
  gzFile out = gzopen(path.c_str(), "wb");
  ASSERT_NE(out, nullptr) << "gzopen failed for " << path;
  size_t written = 0;
  while (written < bytes.size()) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - written, 1u << 30));
    ASSERT_EQ(gzwrite(out, bytes.data() + written, chunk), static_cast<int>(chunk));
    written += chunk;
  }
  ASSERT_EQ(gzclose(out), Z_OK);
}

/// For messages checked in part: EXPECT_TRUE(starts_with(message, "...")).
inline ::testing::AssertionResult starts_with(const std::string& text, const std::string& prefix) {
  if (text.starts_with(prefix)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not start with\n\"" << prefix << "\"";
}
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not contain\n\"" << part << "\"";
}

inline Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace ember_test
