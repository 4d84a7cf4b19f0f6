// The IDX reader: round trips through plain and gzipped files, and a clear ember::Error naming
// the file for every way a file can be broken.
#include <gtest/gtest.h>

#include "support/error_of.h"

#include <cstring>
#include <functional>
#include <string>

#include "data/idx_test_files.h"
#include "ember/data/mnist.h"
#include "ember/error.h"

namespace {

using ember::Tensor;
using ember::data::read_idx;
using ember_test::Bytes;
using ember_test::counting_bytes;
using ember_test::idx_file;
using ember_test::idx_header;
using ember_test::ScratchDir;
using ember_test::starts_with;
using ember_test::write_gzip;
using ember_test::write_plain;

using ember_test::error_of;

Bytes bytes_of(const Tensor& t) {
  const uint8_t* p = t.data_ptr<uint8_t>();
  return Bytes(p, p + t.numel());
}

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

TEST(IdxReader, ReadsAPlainFile) {
  ScratchDir dir;
  const Bytes payload = counting_bytes(3 * 4 * 5);
  write_plain(dir.file("cube"), idx_file({3, 4, 5}, payload));
  Tensor t = read_idx(dir.file("cube"));
  EXPECT_EQ(t.dtype(), ember::kUInt8);
  EXPECT_EQ(sizes_of(t), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(bytes_of(t), payload);
}

TEST(IdxReader, ReadsAGzippedFileWhateverItsName) {
  ScratchDir dir;
  const Bytes payload = counting_bytes(7 * 9);
  // Compression is told by the magic bytes: a gzipped file without .gz, a plain one with it.
  write_gzip(dir.file("images"), idx_file({7, 9}, payload));
  write_plain(dir.file("labels.gz"), idx_file({7, 9}, payload));
  for (const char* name : {"images", "labels.gz"}) {
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(sizes_of(t), (std::vector<int64_t>{7, 9})) << name;
    EXPECT_EQ(bytes_of(t), payload) << name;
  }
}

TEST(IdxReader, ReadsOneDimensionalAndEmptyFiles) {
  ScratchDir dir;
  write_plain(dir.file("labels"), idx_file({4}, {9, 0, 3, 255}));
  Tensor labels = read_idx(dir.file("labels"));
  EXPECT_EQ(sizes_of(labels), (std::vector<int64_t>{4}));
  EXPECT_EQ(bytes_of(labels), (Bytes{9, 0, 3, 255}));

  write_gzip(dir.file("none.gz"), idx_file({0, 28, 28}, {}));
  Tensor none = read_idx(dir.file("none.gz"));
  EXPECT_EQ(sizes_of(none), (std::vector<int64_t>{0, 28, 28}));
  EXPECT_EQ(none.numel(), 0);
}

TEST(IdxReader, ReadsConcatenatedGzipMembersAndSkipsZeroPadding) {
  ScratchDir dir;
  const Bytes file = idx_file({2, 50}, counting_bytes(100));
  // Two gzip members, as `cat a.gz b.gz` makes: one stream to gunzip.
  write_gzip(dir.file("first.gz"), Bytes(file.begin(), file.begin() + 40));
  write_gzip(dir.file("second.gz"), Bytes(file.begin() + 40, file.end()));
  Bytes joined = ember_test::read_all(dir.file("first.gz"));
  const Bytes second = ember_test::read_all(dir.file("second.gz"));
  joined.insert(joined.end(), second.begin(), second.end());
  joined.insert(joined.end(), 512, 0);  // tape-style zero padding, which gunzip accepts
  write_plain(dir.file("joined.gz"), joined);
  EXPECT_EQ(bytes_of(read_idx(dir.file("joined.gz"))), counting_bytes(100));
}

TEST(IdxReader, GrowsItsBufferForLargeGzippedFiles) {
  // More than the reader's first 64 MiB chunk, so the buffer must grow as data arrives.
  ScratchDir dir;
  const uint32_t rows = 2500, columns = 28 * 1024;
  Bytes file = idx_header({rows, columns});
  const size_t header = file.size();
  file.resize(header + size_t{rows} * columns, 0);
  file.back() = 7;
  file[header + (size_t{64} << 20)] = 5;
  write_gzip(dir.file("big.gz"), file);
  file = Bytes();
  Tensor t = read_idx(dir.file("big.gz"));
  ASSERT_EQ(sizes_of(t), (std::vector<int64_t>{rows, columns}));
  const uint8_t* p = t.data_ptr<uint8_t>();
  EXPECT_EQ(p[t.numel() - 1], 7);
  EXPECT_EQ(p[size_t{64} << 20], 5);
  EXPECT_EQ(p[1000], 0);
}

TEST(IdxReaderErrors, MissingFileOrDirectory) {
  ScratchDir dir;
  const std::string missing = dir.file("train-images-idx3-ubyte.gz");
  EXPECT_EQ(error_of([&] { read_idx(missing); }), missing + ": cannot open: No such file or directory");
  EXPECT_EQ(error_of([&] { read_idx(dir.path().string()); }),
            dir.path().string() + ": is a directory, not an IDX file");
}

TEST(IdxReaderErrors, TooShortOrWrongMagic) {
  ScratchDir dir;
  write_plain(dir.file("empty"), {});
  EXPECT_EQ(error_of([&] { read_idx(dir.file("empty")); }),
            dir.file("empty") + ": not an IDX file: it holds 0 bytes, fewer than the 4 of an IDX magic number");
  write_plain(dir.file("text"), {'h', 'e', 'l', 'l', 'o'});
  EXPECT_EQ(error_of([&] { read_idx(dir.file("text")); }),
            dir.file("text") +
                ": not an IDX file: wrong magic number 0x68 0x65 0x6c 0x6c (an IDX file starts with two zero bytes, "
                "its element type and its number of dimensions)");
  // The magic number is checked after decompression too.
  write_gzip(dir.file("text.gz"), {1, 0, 8, 1, 0, 0, 0, 0});
  EXPECT_TRUE(starts_with(error_of([&] { read_idx(dir.file("text.gz")); }),
                          dir.file("text.gz") + ": not an IDX file: wrong magic number 0x01 0x00 0x08 0x01"));
}

TEST(IdxReaderErrors, ElementTypeAndDimensionCount) {
  ScratchDir dir;
  Bytes floats = idx_header({2}, 0x0D);
  floats.resize(floats.size() + 8);
  write_plain(dir.file("floats"), floats);
  EXPECT_EQ(
      error_of([&] { read_idx(dir.file("floats")); }),
      dir.file("floats") + ": IDX element type 0x0d (float32) is not supported; ember reads only 0x08 (unsigned byte)");
  write_plain(dir.file("odd-type"), idx_header({2}, 0x07));
  EXPECT_EQ(error_of([&] { read_idx(dir.file("odd-type")); }),
            dir.file("odd-type") + ": not an IDX file: unknown element type 0x07 in its magic number");
  write_plain(dir.file("no-dims"), {0, 0, 8, 0, 1, 2});
  EXPECT_EQ(error_of([&] { read_idx(dir.file("no-dims")); }),
            dir.file("no-dims") + ": the IDX header declares 0 dimensions");
}

TEST(IdxReaderErrors, TruncatedHeader) {
  ScratchDir dir;
  Bytes header = idx_header({60000, 28, 28});
  header.resize(9);
  write_plain(dir.file("cut"), header);
  EXPECT_EQ(
      error_of([&] { read_idx(dir.file("cut")); }),
      dir.file("cut") + ": truncated: the header declares 3 dimensions, which need 16 header bytes, file holds 9");
}

TEST(IdxReaderErrors, TruncatedData) {
  ScratchDir dir;
  const Bytes file = idx_file({60000, 28, 28}, counting_bytes(1234));
  write_plain(dir.file("train-images-idx3-ubyte"), file);
  write_gzip(dir.file("train-images-idx3-ubyte.gz"), file);
  for (const char* name : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"}) {
    EXPECT_EQ(error_of([&] { read_idx(dir.file(name)); }),
              dir.file(name) + ": truncated: header says 60000x28x28 = 47040000 bytes of data, file holds 1234");
  }
  write_plain(dir.file("labels"), idx_file({10}, counting_bytes(9)));
  EXPECT_EQ(error_of([&] { read_idx(dir.file("labels")); }),
            dir.file("labels") + ": truncated: header says 10 bytes of data, file holds 9");
}

TEST(IdxReaderErrors, TrailingData) {
  ScratchDir dir;
  const Bytes file = idx_file({2, 3, 4}, counting_bytes(30));
  write_plain(dir.file("long"), file);
  write_gzip(dir.file("long.gz"), file);
  for (const char* name : {"long", "long.gz"}) {
    EXPECT_EQ(error_of([&] { read_idx(dir.file(name)); }),
              dir.file(name) + ": trailing data: header says 2x3x4 = 24 bytes of data, file holds 30");
  }
}

TEST(IdxReaderErrors, HugeClaimsAreRejectedBeforeAllocating) {
  ScratchDir dir;
  // 2^40 bytes claimed by tiny files: the size check must come before any allocation (which
  // would otherwise throw OutOfMemoryError or, with overcommit, appear to succeed).
  const Bytes file = idx_file({1u << 20, 1u << 20}, counting_bytes(84));
  write_plain(dir.file("huge"), file);
  EXPECT_EQ(error_of([&] { read_idx(dir.file("huge")); }),
            dir.file("huge") + ": truncated: header says 1048576x1048576 = 1099511627776 bytes of data, file holds 84");
  write_gzip(dir.file("huge.gz"), file);
  EXPECT_EQ(
      error_of([&] { read_idx(dir.file("huge.gz")); }),
      dir.file("huge.gz") + ": truncated: header says 1048576x1048576 = 1099511627776 bytes of data, file holds 84");
  write_plain(dir.file("overflow"), idx_header({4294967295u, 4294967295u, 4294967295u}));
  EXPECT_EQ(
      error_of([&] { read_idx(dir.file("overflow")); }),
      dir.file("overflow") + ": header says 4294967295x4294967295x4294967295 elements, which overflows a 64-bit size");
}

TEST(IdxReaderErrors, BrokenGzipStreams) {
  ScratchDir dir;
  write_gzip(dir.file("good.gz"), idx_file({100, 100}, counting_bytes(10000)));
  const Bytes good = ember_test::read_all(dir.file("good.gz"));

  Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(good.size() / 2));
  write_plain(dir.file("cut.gz"), cut);
  EXPECT_TRUE(starts_with(error_of([&] { read_idx(dir.file("cut.gz")); }),
                          dir.file("cut.gz") + ": truncated gzip data: the file ends inside a compressed stream"));

  // Only the 8-byte trailer (CRC-32, length) missing: the data is complete but unverified.
  Bytes no_trailer(good.begin(), good.end() - 8);
  write_plain(dir.file("no-trailer.gz"), no_trailer);
  EXPECT_TRUE(starts_with(error_of([&] { read_idx(dir.file("no-trailer.gz")); }),
                          dir.file("no-trailer.gz") + ": truncated gzip data"));

  Bytes bad_crc = good;
  bad_crc[bad_crc.size() - 8] ^= 0xff;
  write_plain(dir.file("bad-crc.gz"), bad_crc);
  EXPECT_EQ(error_of([&] { read_idx(dir.file("bad-crc.gz")); }),
            dir.file("bad-crc.gz") + ": corrupt gzip data: incorrect data check");

  Bytes junk = good;
  for (char c : std::string("junk")) junk.push_back(static_cast<uint8_t>(c));
  write_plain(dir.file("junk.gz"), junk);
  EXPECT_EQ(error_of([&] { read_idx(dir.file("junk.gz")); }),
            dir.file("junk.gz") + ": trailing garbage: 4 bytes after the end of the gzip data are not gzip");
}

}  // namespace
