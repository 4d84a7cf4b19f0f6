// safetensors: round trips, files written by the reference (tests/io/golden, made by
// tools/gen_safetensors_golden.py), byte-identical output, hostile files and atomic saves.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/safetensors.h"
#include "support/error_of.h"
#include "support/mapped_file.h"
#include "support/temp_dir.h"

namespace {

using ember_test::error_of;
using ember_test::TempDir;

using namespace ember;
using namespace ember::io;
namespace fs = std::filesystem;

// ---- helpers ----

std::vector<uint8_t> raw_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return std::vector<uint8_t>(p, p + c.nbytes());
}

template <typename T>
Tensor make(const std::vector<T>& values, IntList sizes, Dtype dtype = dtype_v<T>) {
  return from_blob_copy(values.data(), sizes, dtype);
}

Tensor make_bool(const std::vector<uint8_t>& values, IntList sizes) {
  return from_blob_copy(values.data(), sizes, kBool);
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, std::string_view bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

fs::path golden(const char* name) { return fs::path(EMBER_SOURCE_DIR) / "tests" / "io" / "golden" / name; }

// A safetensors file from its JSON header and data; `declared` overrides the length prefix.
std::string st_file(std::string_view json, std::string_view data = "", std::optional<uint64_t> declared = {}) {
  const uint64_t n = declared.value_or(json.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(n >> (8 * i));
  out += json;
  out += data;
  return out;
}

void expect_same_tensor(const Tensor& actual, const Tensor& expected, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec());
  EXPECT_TRUE(actual.is_cpu());
  // ember's is_contiguous() says false for some empty shapes ([4, 0]); PyTorch says true.
  EXPECT_TRUE(actual.numel() == 0 || actual.is_contiguous());
  EXPECT_EQ(raw_bytes(actual), raw_bytes(expected));
}

// ---- the tensors in the golden files, built here from the same literal values ----

NamedTensors golden_all_dtypes() {
  const float fmax = std::numeric_limits<float>::max();
  const float fden = std::numeric_limits<float>::denorm_min();
  const float finf = std::numeric_limits<float>::infinity();
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  return {
      {"bool", make_bool({1, 0, 1, 0, 0, 1}, {2, 3})},
      {"u8", make<uint8_t>({0, 1, 127, 128, 255}, {5})},
      {"i8", make<int8_t>({-128, -1, 0, 1, 127}, {5})},
      {"i16", make<int16_t>({-32768, -2, 3, 32767}, {2, 2})},
      {"i32", make<int32_t>({std::numeric_limits<int32_t>::min(), -7, 0, 9, 2147483647}, {5})},
      {"i64", make<int64_t>({std::numeric_limits<int64_t>::min(), -5, 6, std::numeric_limits<int64_t>::max()}, {4, 1})},
      {"f16", make<uint16_t>({0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00}, {2, 4}, kFloat16)},
      {"f32", make<float>({0.5f, -1.25f, fmax, fden, -0.0f, finf, -finf, fnan}, {2, 2, 2})},
      {"f64",
       make<double>(
           {1.0 / 3.0, -2.5e-308, std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max()}, {4})},
      {"scalar_f32", make<float>({2.75f}, {})},
      {"empty_f32", empty({0, 3})},
      {"empty_i64", empty({2, 0}, kInt64)},
      {"bf16", make<uint16_t>({0x3F80, 0xC040, 0x3F81, 0x7F7F, 0x0001, 0x7F80, 0x8000, 0x7FC0}, {8}, kBFloat16)},
  };
}

const char* kOddName =
    "quote\"back\\slash\nnewline\ttab\x01"
    "ctl";

NamedTensors golden_state_dict() {
  return {
      {"layer.10.weight", make<float>({0, 0.25f, 0.5f, 0.75f, 1.0f, 1.25f}, {2, 3})},
      {"layer.2.weight", make<float>({-1.5f, -0.5f, 0.5f, 1.5f}, {2, 2})},
      {"layer.2.bias", make<float>({0.25f, -0.75f}, {2})},
      {"Zeta.num_batches_tracked", make<int64_t>({7}, {})},
      {"émbed.wéight", make<double>({1.5, 2.5, -3.5}, {3})},
      {kOddName, make<int8_t>({1, 2, 3}, {3})},
      {"mask", make_bool({1, 0}, {2})},
      {"a", make<int16_t>({-1, 2}, {2})},
  };
}

const SafetensorsMetadata kStateDictMetadata = {{"note", "ember \"golden\" \\ ünïcode\n"}};

// ---- round trips ----

TEST(Safetensors, RoundTripEveryDtypeThroughAFile) {
  TempDir dir("safetensors");
  NamedTensors tensors = {
      {"bool", arange(12).reshape({3, 4}) > 5},
      {"u8", arange(200, 212, 1, kUInt8)},
      {"i8", arange(-6, 6, 1, kInt8).reshape({2, 2, 3})},
      {"i16", arange(-300, 300, 50, kInt16)},
      {"i32", arange(-5, 7, 1, kInt32).reshape({4, 3})},
      {"i64", arange(12).reshape({2, 6}) * int64_t{1000000000000}},
      {"f16", randn({3, 5}).to(kFloat16)},
      {"bf16", randn({5, 3}).to(kBFloat16)},
      {"f32", randn({2, 3, 4})},
      {"f64", randn({7}, kFloat64)},
      {"zero_dim_f32", scalar_tensor(3.5)},
      {"zero_dim_i64", scalar_tensor(42)},
      {"zero_dim_bool", scalar_tensor(true)},
      {"empty_f32", empty({0})},
      {"empty_2d_bf16", empty({4, 0}, kBFloat16)},
      {"empty_3d_bool", empty({0, 2, 0}, kBool)},
  };
  const fs::path path = dir / "all.safetensors";
  save_safetensors(path, tensors, {{"framework", "ember"}});
  const SafetensorsData loaded = load_safetensors(path);
  ASSERT_EQ(loaded.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) expect_same_tensor(loaded.at(name), t, name);
  EXPECT_EQ(loaded.metadata, (SafetensorsMetadata{{"framework", "ember"}}));
  // The folder holds the file and nothing else: the temporary file was renamed, not left behind.
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"all.safetensors"}));
}

TEST(Safetensors, NonContiguousInputsAreWrittenContiguous) {
  Tensor base = arange(24, kFloat32).reshape({4, 6});
  NamedTensors tensors = {
      {"transposed", base.t()},
      {"narrowed", base.narrow(1, 2, 3)},  // storage offset and row stride
      {"selected", base.select(0, 2)},
      {"stepped", base.slice(1, 0, 6, 2)},
      {"expanded", arange(3, kFloat32).expand({4, 3})},  // stride 0
      {"permuted", arange(24, kInt64).reshape({2, 3, 4}).permute({2, 0, 1})},
  };
  for (const auto& [name, t] : tensors) ASSERT_FALSE(t.is_contiguous() && t.storage_offset() == 0) << name;
  const std::vector<uint8_t> bytes = save_safetensors_to_bytes(tensors);
  const SafetensorsData loaded = load_safetensors_from_bytes(bytes);
  for (const auto& [name, t] : tensors) expect_same_tensor(loaded.at(name), t.contiguous(), name);
  // Exactly the elements are stored: no whole base storage behind a view.
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  uint64_t expected_data = 0;
  for (const auto& p : tensors) expected_data += p.second.nbytes();
  EXPECT_EQ(bytes.size(), 8 + header_len + expected_data);
}

TEST(Safetensors, MetadataAndNamesSurviveEscaping) {
  NamedTensors tensors = golden_state_dict();
  SafetensorsMetadata metadata = {{"format", "pt"},
                                  {"empty", ""},
                                  {"quotes \"and\" \\ slashes", "tab\there\nnewline \x1f unicode ü 漢字 🙂"},
                                  {"json-looking", "{\"a\": [1, 2]}"}};
  const std::vector<uint8_t> bytes = save_safetensors_to_bytes(tensors, metadata);
  const SafetensorsData loaded = load_safetensors_from_bytes(bytes);
  EXPECT_EQ(loaded.metadata, metadata);
  for (const auto& [name, t] : tensors) expect_same_tensor(loaded.at(name), t, name);
}

TEST(Safetensors, EmptyMetadataWritesNoMetadataKey) {
  const std::vector<uint8_t> bytes = save_safetensors_to_bytes(NamedTensors{{"x", zeros({1})}});
  const std::string text(bytes.begin(), bytes.end());
  EXPECT_EQ(text.find("__metadata__"), std::string::npos);
  EXPECT_TRUE(load_safetensors_from_bytes(bytes).metadata.empty());
}

TEST(Safetensors, InMemoryVariantsMatchTheFile) {
  TempDir dir("safetensors");
  const NamedTensors tensors = golden_all_dtypes();
  const std::vector<uint8_t> bytes = save_safetensors_to_bytes(tensors, {{"format", "pt"}});
  save_safetensors(dir / "f.safetensors", tensors, {{"format", "pt"}});
  EXPECT_EQ(read_file(dir / "f.safetensors"), bytes);
  const std::string as_string(bytes.begin(), bytes.end());
  const SafetensorsData from_string = load_safetensors_from_bytes(std::string_view(as_string));
  const SafetensorsData from_vector = load_safetensors_from_bytes(bytes);
  for (const auto& [name, t] : tensors) {
    expect_same_tensor(from_string.at(name), t, name);
    expect_same_tensor(from_vector.at(name), t, name);
  }
}

TEST(Safetensors, MapAndVectorInputsGiveTheSameBytesInTheReferenceOrder) {
  std::map<std::string, Tensor> as_map = {{"b", zeros({2})},
                                          {"a", zeros({2})},
                                          {"c", zeros({1}, kInt64)},
                                          {"d", zeros({1}, kBool)},
                                          {"e", zeros({1}, kInt32)}};
  NamedTensors as_vector(as_map.rbegin(), as_map.rend());
  const std::vector<uint8_t> from_map = save_safetensors_to_bytes(as_map);
  EXPECT_EQ(save_safetensors_to_bytes(as_vector), from_map);
  // Widest dtype first in the reference's dtype order (I64 > F32 > I32 > BOOL), then by name.
  EXPECT_EQ(load_safetensors_from_bytes(from_map).names(), (std::vector<std::string>{"c", "a", "b", "e", "d"}));
}

TEST(Safetensors, LookupOfAMissingTensorThrows) {
  const SafetensorsData data = load_safetensors_from_bytes(save_safetensors_to_bytes(NamedTensors{{"w", zeros({1})}}));
  EXPECT_TRUE(data.contains("w"));
  EXPECT_FALSE(data.contains("v"));
  EXPECT_NE(error_of([&] { data.at("v"); }).find("no tensor called 'v'"), std::string::npos);
}

TEST(Safetensors, HeaderIsPaddedWithSpacesToAMultipleOfEight) {
  for (const std::string name : {"a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh"}) {
    const std::vector<uint8_t> bytes = save_safetensors_to_bytes(NamedTensors{{name, zeros({1})}});
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
    EXPECT_EQ(n % 8, 0u) << name;
    const std::string header(bytes.begin() + 8, bytes.begin() + 8 + static_cast<int64_t>(n));
    const size_t close = header.rfind('}');
    EXPECT_EQ(header.find_first_not_of(' ', close + 1), std::string::npos) << name;
    EXPECT_LT(header.size() - close - 1, 8u) << name;
  }
}

// ---- interoperability with the reference implementation ----

TEST(SafetensorsGolden, ReadsEveryDtypeWrittenByTorch) {
  const SafetensorsData data = load_safetensors(golden("all_dtypes.safetensors"));
  const NamedTensors expected = golden_all_dtypes();
  ASSERT_EQ(data.tensors.size(), expected.size());
  for (const auto& [name, t] : expected) expect_same_tensor(data.at(name), t, name);
  EXPECT_EQ(data.metadata, (SafetensorsMetadata{{"format", "pt"}}));
  // Spot checks through ember's own conversions, not just bytes.
  EXPECT_EQ(data.at("f16")[0][2].item<float>(), 65504.0f);
  EXPECT_EQ(data.at("bf16")[2].item<float>(), 1.0078125f);
  EXPECT_EQ(data.at("i64")[3][0].item<int64_t>(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(data.at("scalar_f32").dim(), 0);
  EXPECT_EQ(data.at("scalar_f32").item<float>(), 2.75f);
  EXPECT_TRUE(std::isnan(data.at("f32")[1][1][1].item<float>()));
  // File order: the reference's dtype order, then names.
  EXPECT_EQ(data.names(), (std::vector<std::string>{"empty_i64", "i64", "f64", "empty_f32", "f32", "scalar_f32", "i32",
                                                    "bf16", "f16", "i16", "i8", "u8", "bool"}));
}

TEST(SafetensorsGolden, ReadsAStateDictWithEscapedNamesAndMetadata) {
  const SafetensorsData data = load_safetensors(golden("state_dict.safetensors"));
  const NamedTensors expected = golden_state_dict();
  ASSERT_EQ(data.tensors.size(), expected.size());
  for (const auto& [name, t] : expected) expect_same_tensor(data.at(name), t, name);
  EXPECT_EQ(data.metadata, kStateDictMetadata);
}

TEST(SafetensorsGolden, ReadsAFileWithoutTensors) {
  const SafetensorsData data = load_safetensors(golden("no_tensors.safetensors"));
  EXPECT_TRUE(data.tensors.empty());
  EXPECT_TRUE(data.metadata.empty());
}

TEST(SafetensorsGolden, WriterIsByteIdenticalToTheReference) {
  EXPECT_EQ(save_safetensors_to_bytes(golden_all_dtypes(), {{"format", "pt"}}),
            read_file(golden("all_dtypes.safetensors")));
  EXPECT_EQ(save_safetensors_to_bytes(golden_state_dict(), kStateDictMetadata),
            read_file(golden("state_dict.safetensors")));
  EXPECT_EQ(save_safetensors_to_bytes(NamedTensors{}), read_file(golden("no_tensors.safetensors")));
}

// ---- what the writer refuses ----

TEST(Safetensors, WriterRejectsBadInputBeforeTouchingTheDisk) {
  TempDir dir("safetensors");
  const fs::path path = dir / "w.safetensors";
  struct Case {
    NamedTensors tensors;
    SafetensorsMetadata metadata;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{{"x", Tensor()}}, {}, "tensor 'x' is undefined"},
      {{{"x", zeros({1})}, {"y", zeros({1})}, {"x", zeros({2}, kInt64)}}, {}, "two tensors are called 'x'"},
      {{{"__metadata__", zeros({1})}}, {}, "cannot be called '__metadata__'"},
      {{{"bad\xff", zeros({1})}}, {}, "is not valid UTF-8"},
      {{{"x", zeros({1})}}, {{"k", "\xc0\xaf"}}, "the metadata value for 'k' is not valid UTF-8"},
      {{{"x", zeros({1})}}, {{"\xed\xa0\x80", "surrogate"}}, "metadata key"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of([&] { save_safetensors(path, c.tensors, c.metadata); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    EXPECT_NE(error_of([&] { save_safetensors_to_bytes(c.tensors, c.metadata); }).find(c.message), std::string::npos);
  }
  EXPECT_TRUE(dir.entries().empty());
}

// ---- hostile files ----

struct HostileCase {
  const char* what;
  std::string bytes;
  const char* message;
};

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<HostileCase> hostile_cases() {
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  return {
      {"shorter than the length prefix", std::string("\x08\x00\x00", 3), "3 bytes long, too short"},
      {"header length over the cap", st_file("{}", "", 100'000'001),
       "header length is 100000001 bytes, over the limit"},
      {"header length 2^64-1", st_file("{}", "", std::numeric_limits<uint64_t>::max()), "over the limit"},
      {"header length past the end", st_file("{}", "", 50), "header length is 50 bytes but only 2 bytes follow"},
      {"empty header", st_file(""), "not valid JSON"},
      {"truncated JSON", st_file(R"({"t":{"dtype":)"), "not valid JSON"},
      {"garbage after the JSON", st_file("{}x"), "not valid JSON"},
      {"NUL padding", st_file(std::string("{}\0\0", 4)), "not valid JSON: it holds a NUL byte at offset 2"},
      {"NUL then garbage", st_file(std::string("{}\0garbage", 10)), "NUL byte at offset 2"},
      {"invalid UTF-8", st_file("{\"t\xff\":{}}"), "not valid JSON"},
      {"JSON root is a list", st_file("[]"), "the header must be a JSON object, not a list"},
      {"entry is not an object", st_file(R"({"t":[1]})"), "the entry of tensor 't' must be an object, not a list"},
      {"dtype is a number", st_file(R"({"t":{"dtype":5,"shape":[],"data_offsets":[0,0]}})"),
       "'dtype' of tensor 't' must be a string, not a number"},
      {"unknown dtype", st_file(R"({"t":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}})", "x"),
       "tensor 't' has the unknown dtype 'Q8'"},
      {"lowercase dtype", st_file(R"({"t":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", "xxxx"),
       "unknown dtype 'f32'"},
      {"dtype ember lacks", st_file(R"({"t":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}})", "xx"),
       "safetensors dtype 'U16', which ember does not support"},
      {"negative dimension", st_file(R"({"t":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}})", "x"),
       "the shape of tensor 't' holds the negative number -1"},
      {"minus zero dimension", st_file(R"({"t":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}})"),
       "holds the negative number -0"},
      {"fractional dimension", st_file(R"({"t":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}})", "x"),
       "holds '1.5', which is not a 64-bit unsigned integer"},
      {"dimension over 2^64",
       st_file(R"({"t":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,1]}})", "x"),
       "holds '18446744073709551616', which is not a 64-bit unsigned integer"},
      {"dimension over 2^63",
       st_file(R"({"t":{"dtype":"U8","shape":[9223372036854775808],"data_offsets":[0,1]}})", "x"),
       "has the dimension 9223372036854775808, which is too large"},
      {"shape is a number", st_file(R"({"t":{"dtype":"U8","shape":3,"data_offsets":[0,3]}})", "xxx"),
       "'shape' of tensor 't' must be a list of integers, not a number"},
      {"shape holds a string", st_file(R"({"t":{"dtype":"U8","shape":["2"],"data_offsets":[0,2]}})", "xx"),
       "the shape of tensor 't' must hold only non-negative integers, not a string"},
      {"shape product overflows",
       st_file(R"({"t":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", "xxxx"),
       "too large to address with 64-bit sizes"},
      {"strides of an empty tensor overflow",
       st_file(R"({"t":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})"),
       "too large to address with 64-bit sizes"},
      {"three offsets", st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1,1]}})", "x"),
       "'data_offsets' of tensor 't' has more than two offsets"},
      {"one offset", st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[1]}})", "x"),
       "'data_offsets' of tensor 't' must hold two numbers [begin, end], not 1"},
      {"negative offset", st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}})", "x"),
       "'data_offsets' of tensor 't' holds the negative number -1"},
      {"offsets end before they begin", st_file(R"({"t":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", "x"),
       "data_offsets [8, 0], which end before they begin"},
      {"offsets disagree with the shape", st_file("{\"t\":{" + f32x2 + R"(,"data_offsets":[0,4]}})", "xxxx"),
       "which need 8 bytes, but its data_offsets [0, 4] span 4"},
      {"offsets past the end of the file", st_file("{\"t\":{" + f32x2 + R"(,"data_offsets":[0,8]}})", "xxxx"),
       "runs past the end of the data, which is 4 bytes"},
      {"huge offsets",
       st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})", "x"),
       "belong to no tensor (a gap before tensor 't')"},
      {"data does not start at offset 0", st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "xx"),
       "bytes [0, 1) of the data belong to no tensor"},
      {"gap between tensors",
       st_file(
           R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})",
           "xxx"),
       "bytes [1, 2) of the data belong to no tensor (a gap before tensor 'b')"},
      {"overlapping tensors",
       st_file(
           R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
           "xx"),
       "tensor 'b' (data_offsets [1, 2]) overlaps tensor 'a', which ends at 2"},
      {"trailing bytes", st_file(R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "xyzw"),
       "bytes [1, 4) of the data, after the last tensor, belong to no tensor"},
      {"duplicate tensor",
       st_file(
           R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})",
           "x"),
       "the header describes tensor 't' twice"},
      {"duplicate field", st_file(R"({"t":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "x"),
       "the entry of tensor 't' has 'dtype' twice"},
      {"missing field", st_file(R"({"t":{"dtype":"U8","data_offsets":[0,1]}})", "x"),
       "the entry of tensor 't' has no 'shape'"},
      {"metadata value is a number", st_file(R"({"__metadata__":{"a":1}})"),
       "the metadata value for 'a' must be a string, not a number"},
      {"metadata is a list", st_file(R"({"__metadata__":["a"]})"),
       "'__metadata__' must be an object of strings, not a list"},
      {"metadata key twice", st_file(R"({"__metadata__":{"a":"1","a":"2"}})"), "the metadata has the key 'a' twice"},
      {"metadata object twice", st_file(R"({"__metadata__":{},"__metadata__":{}})"), "has '__metadata__' twice"},
      {"nesting bomb in an unknown field",
       st_file(
           R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)" + repeat("[", 126) + repeat("]", 126) + "}}",
           "x"),
       "nested more than 127 levels deep"},
      {"comment in JSON", st_file("{/*c*/}"), "not valid JSON"},
  };
}

TEST(SafetensorsHostile, EveryMalformedFileIsAnErrorNamingTheSourceAndTheProblem) {
  const std::vector<HostileCase> cases = hostile_cases();
  ASSERT_GE(cases.size(), 15u);
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = error_of([&] { load_safetensors_from_bytes(c.bytes, "hostile.safetensors"); });
    EXPECT_NE(msg.find("hostile.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
  }
}

TEST(SafetensorsHostile, FilesOnDiskGiveTheSameErrorsWithThePath) {
  TempDir dir("safetensors");
  const std::vector<HostileCase> cases = hostile_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].what);
    const fs::path path = dir / ("case" + std::to_string(i) + ".safetensors");
    write_file(path, cases[i].bytes);
    const std::string msg = error_of([&] { load_safetensors(path); });
    EXPECT_NE(msg.find("load_safetensors('" + path.string() + "')"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cases[i].message), std::string::npos) << msg;
  }
}

TEST(SafetensorsHostile, WhatTheReferenceAcceptsIsAccepted) {
  // Leading whitespace, null metadata, unknown fields (ignored), zero-size tensors sharing an offset,
  // and tensors listed out of offset order are all fine for the reference reader.
  const std::string json =
      R"( {"__metadata__":null,"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"extra":{"k":[1,{"z":null}]}},)"
      R"("e1":{"dtype":"F32","shape":[0],"data_offsets":[2,2]},"e0":{"dtype":"I64","shape":[3,0],"data_offsets":[2,2]},)"
      R"("a":{"dtype":"BOOL","shape":[3],"data_offsets":[2,5]}}   )";
  const SafetensorsData data = load_safetensors_from_bytes(st_file(json, std::string("\x07\x09\x00\x02\x01", 5)));
  EXPECT_EQ(data.names(), (std::vector<std::string>{"b", "e0", "e1", "a"}));
  EXPECT_EQ(raw_bytes(data.at("b")), (std::vector<uint8_t>{7, 9}));
  EXPECT_EQ(data.at("e0").sizes().vec(), (std::vector<int64_t>{3, 0}));
  // A BOOL byte other than 0 or 1 reads as true, never as an invalid C++ bool.
  EXPECT_EQ(raw_bytes(data.at("a")), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_TRUE(data.metadata.empty());
  // The deepest nesting the reference accepts in an unknown field (one level more is rejected above).
  const std::string deep =
      R"({"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":)" + repeat("[", 125) + repeat("]", 125) + "}}";
  EXPECT_EQ(load_safetensors_from_bytes(st_file(deep, "x")).names(), (std::vector<std::string>{"t"}));
}

TEST(SafetensorsHostile, HugeNamesAreCutShortInMessages) {
  const std::string name(100000, 'n');
  const std::string msg = error_of([&] {
    load_safetensors_from_bytes(st_file("{\"" + name + R"(":{"dtype":"X","shape":[],"data_offsets":[0,0]}})"));
  });
  EXPECT_NE(msg.find("unknown dtype 'X'"), std::string::npos);
  EXPECT_NE(msg.find("(100000 bytes)"), std::string::npos);
  EXPECT_LT(msg.size(), 400u);
}

TEST(SafetensorsHostile, NotARegularFileOrMissing) {
  TempDir dir("safetensors");
  EXPECT_NE(error_of([&] { load_safetensors(dir.path()); }).find("not a regular file"), std::string::npos);
  const std::string missing = error_of([&] { load_safetensors(dir / "missing.safetensors"); });
  EXPECT_NE(missing.find("missing.safetensors"), std::string::npos);
  EXPECT_NE(missing.find(std::strerror(ENOENT)), std::string::npos) << missing;
}

// Every prefix and many single-byte corruptions of a valid file either load or throw ember::Error.
TEST(SafetensorsHostile, TruncationsAndByteFlipsNeverCrash) {
  const std::vector<uint8_t> good = save_safetensors_to_bytes(golden_state_dict(), kStateDictMetadata);
  int errors = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    try {
      load_safetensors_from_bytes(std::span<const uint8_t>(good.data(), n));
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(errors, static_cast<int>(good.size()));  // every proper prefix is incomplete
  for (size_t i = 0; i < good.size(); ++i) {
    for (const uint8_t value : {0x00, 0x01, 0x20, 0x22, 0x2c, 0x30, 0x39, 0x5b, 0x5d, 0x7b, 0x7d, 0x80, 0xff}) {
      std::vector<uint8_t> bad = good;
      bad[i] = value;
      try {
        load_safetensors_from_bytes(bad);
      } catch (const Error&) {
      }
    }
  }
}

// ---- atomic saves ----

TEST(SafetensorsAtomic, OverwritingReplacesTheFileAndLeavesNoTemporary) {
  TempDir dir("safetensors");
  const fs::path path = dir / "model.safetensors";
  save_safetensors(path, NamedTensors{{"w", zeros({3})}});
  save_safetensors(path, NamedTensors{{"w", ones({4}, kFloat64)}});
  expect_same_tensor(load_safetensors(path).at("w"), ones({4}, kFloat64), "w");
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}));
}

TEST(SafetensorsAtomic, ParentThatIsAFileIsAnErrorWithThePathAndReason) {
  TempDir dir("safetensors");
  write_file(dir / "not_a_dir", "plain file");
  const fs::path path = dir / "not_a_dir" / "model.safetensors";
  const std::string msg = error_of([&] { save_safetensors(path, NamedTensors{{"w", zeros({3})}}); });
  EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(ENOTDIR)), std::string::npos) << msg;
  EXPECT_EQ(read_file(dir / "not_a_dir"), (std::vector<uint8_t>{'p', 'l', 'a', 'i', 'n', ' ', 'f', 'i', 'l', 'e'}));
}

TEST(SafetensorsAtomic, FailedRenameRemovesTheTemporaryFile) {
  TempDir dir("safetensors");
  fs::create_directories(dir / "occupied" / "child");  // rename() cannot replace a non-empty directory
  const std::string msg = error_of([&] { save_safetensors(dir / "occupied", NamedTensors{{"w", zeros({3})}}); });
  EXPECT_NE(msg.find("cannot move the temporary file"), std::string::npos) << msg;
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"occupied"}));
  EXPECT_TRUE(fs::is_directory(dir / "occupied" / "child"));
}

// A write that fails halfway (here: RLIMIT_FSIZE, which stops writes even for root, like a full
// disk) must leave the previous file as it was and no temporary file behind.
TEST(SafetensorsAtomic, WriteFailingHalfwayKeepsThePreviousFile) {
  TempDir dir("safetensors");
  const fs::path path = dir / "model.safetensors";
  save_safetensors(path, NamedTensors{{"w", arange(10, kFloat32)}});
  const std::vector<uint8_t> before = read_file(path);

  rlimit old_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  struct sigaction ignore {
  }, old_action{};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old_action), 0);
  rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of([&] { save_safetensors(path, NamedTensors{{"w", zeros({100000})}}); });
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ::sigaction(SIGXFSZ, &old_action, nullptr);

  EXPECT_NE(msg.find("cannot write"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::strerror(EFBIG)), std::string::npos) << msg;
  EXPECT_EQ(read_file(path), before);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"model.safetensors"}));
  expect_same_tensor(load_safetensors(path).at("w"), arange(10, kFloat32), "w");
}

// ---- memory-mapped loads ----

TEST(SafetensorsMmap, GoldensLoadAsWhenReadAndTensorsViewTheFile) {
  SafetensorsLoadOptions mapped;
  mapped.mmap = true;
  for (const char* name : {"all_dtypes.safetensors", "state_dict.safetensors", "no_tensors.safetensors"}) {
    SCOPED_TRACE(name);
    const SafetensorsData read = load_safetensors(golden(name));
    const SafetensorsData map = load_safetensors(golden(name), mapped);
    EXPECT_EQ(map.metadata, read.metadata);
    ASSERT_EQ(map.names(), read.names());
    for (const auto& [key, t] : read.tensors) {
      expect_same_tensor(map.at(key), t, key);
      // Bool tensors are read (their bytes are checked); the rest view the file (the reference
      // writer, which made these, aligns every tensor: an 8-byte padded header, widest first).
      if (t.numel() > 0 && t.dtype() != kBool) {
        EXPECT_TRUE(ember_test::mapped_from(golden(name), map.at(key).data_ptr())) << key;
      }
    }
  }
}

TEST(SafetensorsMmap, TensorsOutliveTheLoadAndWritesStayInMemory) {
  TempDir dir("safetensors_mmap");
  const fs::path path = dir / "w.safetensors";
  const Tensor w = arange(1000, kFloat32).reshape({10, 100});
  save_safetensors(path, NamedTensors{{"w", w}, {"b", arange(7, kInt64)}});
  const std::vector<uint8_t> before = read_file(path);
  Tensor kept;
  {
    SafetensorsLoadOptions mapped;
    mapped.mmap = true;
    kept = load_safetensors(path, mapped).at("w");
  }
  EXPECT_TRUE(ember_test::mapped_from(path, kept.data_ptr()));
  expect_same_tensor(kept, w, "w");
  kept.mul_(2);
  EXPECT_EQ(kept.select(0, 1).select(0, 0).item<float>(), 200.0f);
  EXPECT_EQ(read_file(path), before) << "a write to a mapped tensor reached the file";
}

}  // namespace
