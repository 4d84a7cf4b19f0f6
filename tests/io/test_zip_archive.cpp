// The ZIP layer under torch_load/torch_save and the npz functions (src/io/zip_archive.h): its
// CRC-32 against zlib's on every size and chunking, the writer's alignment, and ZIP64 records
// for archives of more than 65535 entries, read back by the reader.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ember/threads.h"
#include "io/zip_archive.h"
#include "support/error_of.h"

namespace {

namespace zip = ember::io::internal;
using Bytes = std::vector<uint8_t>;

uint32_t zlib_crc(const Bytes& b) {
  return static_cast<uint32_t>(::crc32(::crc32(0L, Z_NULL, 0), b.data(), static_cast<uInt>(b.size())));
}

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes b(n);
  for (auto& x : b) x = static_cast<uint8_t>(gen());
  return b;
}

TEST(ZipCrc, EqualsZlibOnEverySizeAndThreadCount) {
  const int threads = ember::get_num_threads();
  for (int t : {1, 2, 3}) {
    ember::set_num_threads(t);
    // Around the 1 MiB chunks the threads split a record into, and the empty and tiny cases.
    for (size_t n : {size_t{0}, size_t{1}, size_t{63}, size_t{1} << 20, (size_t{1} << 20) + 1, size_t{3} << 20,
                     (size_t{5} << 20) + 12345}) {
      const Bytes b = random_bytes(n, static_cast<uint32_t>(n));
      EXPECT_EQ(zip::crc32_of(b), zlib_crc(b)) << n << " bytes on " << t << " threads";
    }
  }
  ember::set_num_threads(threads);
}

Bytes build(const std::vector<std::pair<std::string, Bytes>>& entries, uint32_t alignment) {
  Bytes out;
  zip::ZipWriter writer(
      [&](const void* p, size_t n) {
        out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
      },
      alignment);
  for (const auto& [name, data] : entries) writer.add(name, data);
  writer.finish();
  return out;
}

TEST(ZipWriter, AlignsEveryRecordAndTheReaderFindsThem) {
  std::vector<std::pair<std::string, Bytes>> entries;
  for (int i = 0; i < 20; ++i) entries.emplace_back("archive/data/" + std::to_string(i), random_bytes(i * 7 + 1, i));
  const Bytes archive = build(entries, 64);
  const auto reader = zip::ZipReader::from_bytes(archive, "aligned");
  ASSERT_EQ(reader.entries().size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const zip::ZipEntry& e = reader.entries()[i];
    EXPECT_EQ(e.name, entries[i].first);
    EXPECT_EQ(reader.data_offset(e) % 64, 0u) << e.name;
    EXPECT_EQ(reader.read_bytes(e, 1 << 20), entries[i].second);
  }
}

TEST(ZipWriter, MoreThan65535EntriesGetZip64Records) {
  std::vector<std::pair<std::string, Bytes>> entries;
  for (int i = 0; i < 70000; ++i) entries.emplace_back("e" + std::to_string(i), Bytes{static_cast<uint8_t>(i)});
  const Bytes archive = build(entries, 1);
  // The classic end record says 0xFFFF entries; the ZIP64 end record holds the count.
  ASSERT_GE(archive.size(), 22u);
  EXPECT_EQ(archive[archive.size() - 22 + 10], 0xff);
  EXPECT_EQ(archive[archive.size() - 22 + 11], 0xff);
  const auto reader = zip::ZipReader::from_bytes(archive, "zip64");
  ASSERT_EQ(reader.entries().size(), entries.size());
  EXPECT_EQ(reader.read_bytes(reader.entries()[69999], 16), Bytes{static_cast<uint8_t>(69999)});
}

TEST(ZipWriter, RefusesDuplicateAndEmptyNames) {
  Bytes out;
  zip::ZipWriter writer([&](const void*, size_t) {});
  writer.add("a", std::string_view("1"));
  EXPECT_NE(ember_test::error_of([&] { writer.add("a", std::string_view("2")); }).find("two entries named 'a'"),
            std::string::npos);
  EXPECT_NE(ember_test::error_of([&] { writer.add("", std::string_view("2")); }).find("1 to 65535 bytes"),
            std::string::npos);
}

}  // namespace
