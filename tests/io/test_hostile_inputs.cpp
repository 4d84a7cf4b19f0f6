// The allocation rule for every reader of outside data: no reader allocates more than the
// input's size justifies before it has checked the input. Tiny inputs whose headers claim
// terabytes get a plain ember::Error naming the problem (not an OutOfMemoryError, which would
// mean the allocation was tried, and not a crash), from the in-memory readers the fuzzers drive.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ember/data/mnist.h"
#include "ember/device.h"
#include "ember/error.h"
#include "ember/io/checkpoint.h"
#include "ember/io/safetensors.h"

namespace {

using Bytes = std::vector<uint8_t>;

// The message of the ember::Error `f` throws; fails the test for anything else, an
// OutOfMemoryError included.
template <typename F>
std::string rejection_of(F&& f) {
  try {
    f();
  } catch (const ember::OutOfMemoryError& e) {
    ADD_FAILURE() << "the reader tried the allocation: " << e.what();
    return e.what();
  } catch (const ember::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "the input was accepted";
  return "";
}

Bytes le64(uint64_t v) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  return out;
}

Bytes safetensors_file(const std::string& header, size_t data_bytes) {
  Bytes out = le64(header.size());
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0x5a);
  return out;
}

// 2^20 x 2^20 float32 = 4 TiB claimed, 16 bytes present.
const std::string kHugeTensor = R"("w":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,4398046511104]})";

TEST(HostileInputs, SafetensorsClaimingTerabytesOfTensorData) {
  const Bytes file = safetensors_file("{" + kHugeTensor + "}", 16);
  EXPECT_EQ(rejection_of([&] { ember::io::load_safetensors_from_bytes(file, "tiny"); }),
            "load_safetensors_from_bytes(tiny): tensor 'w' (data_offsets [0, 4398046511104]) runs past the end of the "
            "data, which is 16 bytes (truncated file?)");
}

TEST(HostileInputs, SafetensorsClaimingAHugeHeader) {
  Bytes file = le64(uint64_t{1} << 40);
  file.resize(64, '{');
  EXPECT_EQ(rejection_of([&] { ember::io::load_safetensors_from_bytes(file, "tiny"); }),
            "load_safetensors_from_bytes(tiny): the header length is 1099511627776 bytes, over the limit of 100000000 "
            "(not a safetensors file?)");
  // Within the format's limit but beyond the bytes there: no 100 MB string is made for it.
  file = le64(99'999'999);
  file.resize(64, '{');
  EXPECT_EQ(rejection_of([&] { ember::io::load_safetensors_from_bytes(file, "tiny"); }),
            "load_safetensors_from_bytes(tiny): the header length is 99999999 bytes but only 56 bytes follow it "
            "(truncated file, or not a safetensors file?)");
}

TEST(HostileInputs, CheckpointClaimingTerabytesOfTensorData) {
  const Bytes file = safetensors_file(
      R"({"__metadata__":{"format":"ember-checkpoint","version":"1"},"model.)" + kHugeTensor.substr(1) + "}", 16);
  EXPECT_EQ(rejection_of([&] { ember::io::load_checkpoint_from_bytes(file, "tiny"); }),
            "load_safetensors_from_bytes(tiny): tensor 'model.w' (data_offsets [0, 4398046511104]) runs past the end "
            "of the data, which is 16 bytes (truncated file?)");
}

Bytes idx_file(const std::vector<uint32_t>& dims, size_t payload) {
  Bytes out = {0, 0, 0x08, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(d >> shift));
  out.resize(out.size() + payload, 7);
  return out;
}

Bytes gzip(const Bytes& plain) {
  z_stream s{};
  EXPECT_EQ(deflateInit2(&s, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  Bytes out(deflateBound(&s, plain.size()));
  s.next_in = const_cast<uint8_t*>(plain.data());
  s.avail_in = static_cast<uInt>(plain.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&s, Z_FINISH), Z_STREAM_END);
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

TEST(HostileInputs, IdxClaimingTerabytesPlainOrGzipped) {
  const Bytes file = idx_file({1u << 20, 1u << 20}, 84);
  const std::string expected =
      "tiny: truncated: header says 1048576x1048576 = 1099511627776 bytes of data, file holds 84";
  EXPECT_EQ(rejection_of([&] { ember::data::read_idx_from_bytes(file, "tiny"); }), expected);
  EXPECT_EQ(rejection_of([&] { ember::data::read_idx_from_bytes(gzip(file), "tiny"); }), expected);
}

TEST(HostileInputs, GzippedIdxClaimingMoreThanDeflateCanHold) {
  // 4 GB claimed by a gzip file of a few dozen bytes, which can inflate to 1032 times its size at
  // most: rejected after counting what it holds, without a buffer for the claim.
  const Bytes file = gzip(idx_file({4'000'000'000u}, 16));
  ASSERT_LT(file.size(), 100u);
  EXPECT_EQ(rejection_of([&] { ember::data::read_idx_from_bytes(file, "bomb"); }),
            "bomb: truncated: header says 4000000000 bytes of data, file holds 16");
}

TEST(HostileInputs, IdxEmptyTensorWhoseOtherSizesOverflow) {
  // No data is needed for an empty tensor, but its strides (products of the other sizes) must
  // still fit in 64 bits: found by review while writing the IDX fuzz target.
  for (const auto& dims : {std::vector<uint32_t>{0, 4294967295u, 4294967295u, 4294967295u},
                           std::vector<uint32_t>{4294967295u, 4294967295u, 4294967295u, 0}}) {
    const std::string message = rejection_of([&] { ember::data::read_idx_from_bytes(idx_file(dims, 0), "empty"); });
    EXPECT_NE(message.find("the tensor is empty, but its other sizes multiply to more than a 64-bit size holds"),
              std::string::npos)
        << message;
  }
}

TEST(HostileInputs, DeviceStringsOfAnyLength) {
  EXPECT_EQ(rejection_of([] { ember::Device("cuda:99999999999999999999"); }),
            "Device index must be between -1 and 511 inclusively, got 99999999999999999999 in device string "
            "'cuda:99999999999999999999'");
  const std::string long_name(1 << 20, 'c');
  EXPECT_NE(rejection_of([&] { ember::Device(long_name + ":0"); }).find("Expected one of cpu, cuda, mps"),
            std::string::npos);
}

}  // namespace
