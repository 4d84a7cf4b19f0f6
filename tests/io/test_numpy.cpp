// NumPy's .npy and .npz files: files written by NumPy (tests/io/golden/numpy, made by
// tools/gen_numpy_golden.py), byte-identical output to numpy.save, Fortran order, big-endian data,
// format versions, round trips, hostile files and atomic saves.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/numpy.h"
#include "io/zip_archive.h"
#include "support/error_of.h"
#include "support/temp_dir.h"

namespace {

using ember_test::error_of;
using ember_test::TempDir;

using namespace ember;
using namespace ember::io;
namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// ---- helpers ----

Bytes raw_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return Bytes(p, p + c.nbytes());
}

template <typename T>
Tensor make(const std::vector<T>& values, IntList sizes, Dtype dtype = dtype_v<T>) {
  return from_blob_copy(values.data(), sizes, dtype);
}

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const Bytes& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

Bytes bytes_of(std::string_view s) { return Bytes(s.begin(), s.end()); }
// A string literal's bytes, NULs included.
template <size_t N>
Bytes lit(const char (&s)[N]) {
  return Bytes(s, s + N - 1);
}

fs::path golden(const std::string& name) {
  return fs::path(EMBER_SOURCE_DIR) / "tests" / "io" / "golden" / "numpy" / name;
}

void expect_same_tensor(const Tensor& actual, const Tensor& expected, const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.dtype(), expected.dtype());
  EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec());
  EXPECT_TRUE(actual.is_cpu());
  EXPECT_TRUE(actual.is_contiguous());
  EXPECT_EQ(raw_bytes(actual), raw_bytes(expected));  // bit for bit, NaN and -0 included
}

// A .npy file from its header text (padded as NumPy pads it) and data.
Bytes npy_file(std::string_view header, std::string_view data = "", int major = 1) {
  std::string h(header);
  const size_t length_bytes = major == 1 ? 2 : 4;
  h.append(63 - (8 + length_bytes + h.size()) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < length_bytes; ++i) out += static_cast<char>(h.size() >> (8 * i));
  return bytes_of(out + h + std::string(data));
}

std::string f32_header(std::string_view shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + std::string(shape) + ", }";
}

// The values of tools/gen_numpy_golden.py, file name -> tensor.
const uint16_t kF16Bits[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00, 0xFC00, 0x7E00};

std::vector<std::pair<std::string, Tensor>> golden_dtypes() {
  const float inf = std::numeric_limits<float>::infinity();
  return {
      {"b1", make<uint8_t>({1, 0, 1, 0, 0, 1}, {2, 3}, kBool)},
      {"u1", make<uint8_t>({0, 1, 127, 128, 255}, {5})},
      {"i1", make<int8_t>({-128, -1, 0, 1, 127}, {5})},
      {"i2", make<int16_t>({-32768, -2, 3, 32767}, {2, 2})},
      {"i4", make<int32_t>({-2147483647 - 1, -7, 0, 9, 2147483647}, {5})},
      {"i8", make<int64_t>({std::numeric_limits<int64_t>::min(), -5, 6, std::numeric_limits<int64_t>::max()}, {4, 1})},
      {"f2", from_blob_copy(kF16Bits, {2, 4}, kFloat16)},
      {"f4", make<float>({0.5f, -1.25f, 3.4028234663852886e38f, 1e-45f, -0.0f, inf, -inf,
                          std::numeric_limits<float>::quiet_NaN()},
                         {2, 2, 2})},
      {"f8", make<double>({1.0 / 3.0, -2.5e-308, 5e-324, 1.7976931348623157e308}, {4})},
  };
}

std::vector<std::pair<std::string, Tensor>> golden_shapes() {
  return {
      {"scalar_f8", scalar_tensor(2.75, kFloat64)},
      {"empty_f4", zeros({0, 3})},
      {"empty_1d_i8", zeros({0}, kInt64)},
      {"wide_i2", zeros({1234567, 0}, kInt16)},
      {"many_dims_u1", arange(24, kUInt8).reshape({2, 1, 3, 1, 2, 1, 2})},
  };
}

NamedTensors golden_npz() {
  return {
      {"weight", arange(6, kFloat32).reshape({2, 3}) / 2},
      {"bias", make<double>({0.25, -0.75, 1e300}, {3})},
      {"mask", make<uint8_t>({1, 0, 1}, {3}, kBool)},
      {"ids", make<int64_t>({1, -2, 3, 4}, {2, 2})},
      {"half", from_blob_copy(kF16Bits, {4}, kFloat16)},
      {"step", scalar_tensor(7, kInt32)},
      {"empty", zeros({0, 2}, kUInt8)},
      {"encoder/layer.0", make<int8_t>({-1, 2, -3}, {3})},
      {"arr_0", make<float>({1.5f, -2.5f}, {2, 1})},
  };
}

void expect_same_arrays(const NamedTensors& actual, const NamedTensors& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(actual[i].first, expected[i].first);
    expect_same_tensor(actual[i].second, expected[i].second, expected[i].first);
  }
}

// ---- files written by NumPy ----

TEST(NpyGolden, ReadsEveryDtypeAndShapeNumpyWrites) {
  for (const auto& group : {golden_dtypes(), golden_shapes()})
    for (const auto& [name, expected] : group) expect_same_tensor(load_npy(golden(name + ".npy")), expected, name);
}

TEST(NpyGolden, WritesTheBytesOfNumpySave) {
  TempDir dir("npy");
  for (const auto& group : {golden_dtypes(), golden_shapes()}) {
    for (const auto& [name, tensor] : group) {
      SCOPED_TRACE(name);
      const Bytes expected = read_file(golden(name + ".npy"));
      ASSERT_FALSE(expected.empty());
      EXPECT_EQ(save_npy_to_bytes(tensor), expected);
      save_npy(dir / (name + ".npy"), tensor);
      EXPECT_EQ(read_file(dir / (name + ".npy")), expected);
    }
  }
}

TEST(NpyGolden, FortranOrderGivesTheSameValuesAsNumpy) {
  const Tensor f = load_npy(golden("fortran_i4.npy"));
  expect_same_tensor(f, arange(24, kInt32).reshape({2, 3, 4}), "fortran_i4");
  EXPECT_EQ(f.select(0, 1).select(0, 2).select(0, 3).item<int32_t>(), 23);
  // Saved back, it is C order, as numpy.save writes np.ascontiguousarray of it.
  const std::string header(reinterpret_cast<const char*>(save_npy_to_bytes(f).data()) + 10, 60);
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  expect_same_tensor(load_npy(golden("be_fortran_f4.npy")), arange(6, kFloat32).reshape({2, 3}) - 2.5, "be_fortran_f4");
}

TEST(NpyGolden, BigEndianDataIsSwapped) {
  const auto dtypes = golden_dtypes();
  auto expected = [&](const std::string& name) {
    for (const auto& [n, t] : dtypes)
      if (n == name) return t;
    return Tensor();
  };
  expect_same_tensor(load_npy(golden("be_f8.npy")), expected("f8"), "be_f8");
  expect_same_tensor(load_npy(golden("be_i2.npy")), expected("i2"), "be_i2");
  expect_same_tensor(load_npy(golden("be_f2.npy")), expected("f2"), "be_f2");
}

TEST(NpyGolden, FormatVersions2And3) {
  const Tensor expected = arange(6, kFloat32).reshape({2, 3}) - 1;
  expect_same_tensor(load_npy(golden("v2_f4.npy")), expected, "v2");
  expect_same_tensor(load_npy(golden("v3_f4.npy")), expected, "v3");
}

TEST(NpyGolden, DtypesEmberLacksAreRefusedByName) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"c8", {"dtype '<c8' (complex64) is not supported", "real and imaginary parts"}},
      {"u2", {"dtype '<u2' (uint16) is not supported", "a.astype(np.int64)"}},
      {"U3", {"dtype '<U3' (a unicode string) is not supported"}},
      {"object", {"dtype '|O' (object: Python objects stored as a pickle, which ember never reads)"}},
      {"structured", {"structured dtype [('a', '<f4'), ('b', '<i4')]"}},
  };
  for (const auto& [name, parts] : cases) {
    SCOPED_TRACE(name);
    const fs::path path = golden(std::string("unsupported_") + name + ".npy");
    const std::string msg = error_of([&] { load_npy(path); });
    EXPECT_NE(msg.find("load_npy('" + path.string() + "')"), std::string::npos) << msg;
    for (const std::string& part : parts) EXPECT_NE(msg.find(part), std::string::npos) << msg;
    EXPECT_NE(msg.find("ember reads bool, uint8, int8"), std::string::npos) << msg;
  }
}

// ---- round trips and layouts ----

TEST(Npy, RoundTripsEveryDtypeThroughAFile) {
  TempDir dir("npy");
  manual_seed(3);
  for (const Dtype d : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kFloat32, kFloat64}) {
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{}, {7}, {3, 4}, {2, 0, 5}, {2, 3, 1, 2}}) {
      SCOPED_TRACE(std::string(dtype_name(d)) + " " + ::testing::PrintToString(shape));
      const Tensor t = d == kBool ? rand(shape) > 0.5 : (rand(shape) * 200 - 100).to(d);
      const fs::path path = dir / "t.npy";
      save_npy(path, t);
      expect_same_tensor(load_npy(path), t, "file");
      expect_same_tensor(load_npy_from_bytes(save_npy_to_bytes(t)), t, "bytes");
    }
  }
}

TEST(Npy, NonContiguousTensorsAreSavedInLogicalOrder) {
  const Tensor base = arange(24, kFloat64).reshape({4, 6});
  const Tensor views[] = {base.t(), base.slice(1, 1, std::nullopt, 2), base.select(1, 3),
                          arange(3, kInt32).unsqueeze(1).expand({3, 4}), base.permute({1, 0}).reshape({2, 12, 1})};
  for (const Tensor& v : views) {
    SCOPED_TRACE(::testing::PrintToString(v.sizes().vec()));
    EXPECT_EQ(save_npy_to_bytes(v), save_npy_to_bytes(v.contiguous()));
    expect_same_tensor(load_npy_from_bytes(save_npy_to_bytes(v)), v.contiguous(), "view");
  }
}

TEST(Npy, BFloat16IsRefusedWithTheConversionToUse) {
  TempDir dir("npy");
  const Tensor t = ones({2}, kBFloat16);
  const std::string msg = error_of([&] { save_npy(dir / "b.npy", t); });
  EXPECT_NE(msg.find("save_npy('" + (dir / "b.npy").string() + "')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NumPy has no bfloat16"), std::string::npos) << msg;
  EXPECT_NE(msg.find(".to(ember::kFloat32)"), std::string::npos) << msg;
  EXPECT_TRUE(dir.entries().empty());
  EXPECT_NE(error_of([&] { save_npy_to_bytes(t); }).find("NumPy has no bfloat16"), std::string::npos);
  // Converted as the message says, it saves.
  expect_same_tensor(load_npy_from_bytes(save_npy_to_bytes(t.to(kFloat32))), ones({2}), "converted");
  EXPECT_NE(error_of([&] { save_npy_to_bytes(Tensor()); }).find("the tensor is undefined"), std::string::npos);
  // NumPy's limit on dimensions holds both ways.
  const Tensor deep = ones(std::vector<int64_t>(65, 1));
  EXPECT_NE(
      error_of([&] { save_npy_to_bytes(deep); }).find("the tensor has 65 dimensions; NumPy arrays have at most 64"),
      std::string::npos);
  expect_same_tensor(load_npy_from_bytes(save_npy_to_bytes(deep.squeeze(0))), deep.squeeze(0), "64 dimensions");
}

TEST(Npy, HeadersNumpyAcceptsInOtherSpellings) {
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40", 8);  // 1.0f, 2.0f
  const Tensor expected = make<float>({1.f, 2.f}, {2});
  const char* headers[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
      "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f4\"}",    // any order, double quotes
      "{'descr':'<f4','fortran_order':False,'shape':(2,)}",                 // no spaces, no trailing comma
      "  {'descr': '<f4',\n 'fortran_order': True,\t'shape': ( 2 , ) , }",  // whitespace; 1-d Fortran
      "{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }",          // native order
      "{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }",  // Python 2's longs (1.0 and 2.0)
      "{'descr': '<f4', 'fortran_order': False, 'shape': (+2,), }",
  };
  for (const char* h : headers) {
    SCOPED_TRACE(h);
    expect_same_tensor(load_npy_from_bytes(npy_file(h, data)), expected, "spelling");
  }
  // Bytes after the data are ignored, as numpy.load ignores them.
  expect_same_tensor(load_npy_from_bytes(npy_file(headers[0], data + "trailing")), expected, "trailing");
  // Version 2.0 with its 4-byte header length.
  expect_same_tensor(load_npy_from_bytes(npy_file(headers[0], data, 2)), expected, "v2");
  // A bool byte other than 0 or 1 reads as true, never as an invalid C++ bool.
  const Tensor b = load_npy_from_bytes(
      npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\x00\x02\xff", 3)));
  EXPECT_EQ(raw_bytes(b), (Bytes{0, 1, 1}));
  // Fortran order with a zero-size dimension, and a big-endian 0-d array.
  expect_same_tensor(load_npy_from_bytes(npy_file("{'descr': '<i8', 'fortran_order': True, 'shape': (3, 0, 2), }")),
                     zeros({3, 0, 2}, kInt64), "empty fortran");
  expect_same_tensor(load_npy_from_bytes(npy_file("{'descr': '>i4', 'fortran_order': False, 'shape': (), }",
                                                  std::string("\x00\x00\x01\x02", 4))),
                     scalar_tensor(258, kInt32), "big-endian scalar");
}

// ---- hostile files ----

struct HostileCase {
  const char* what;
  Bytes bytes;
  std::string message;
};

std::string repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::vector<HostileCase> hostile_cases() {
  const std::string f32x6(24, '\0');
  return {
      {"empty file", {}, "too short for a .npy file"},
      {"cut inside the magic", lit("\x93NUM"), "too short for a .npy file"},
      {"cut after the magic", lit("\x93NUMPY\x01"), "too short for a .npy file's magic, version and header"},
      {"bad magic", lit("\x93NUMPX\x01\x00\x10\x00{}"), "does not start with NumPy's magic"},
      {"a text file", lit("hello, world\n"), "does not start with NumPy's magic"},
      {"an .npz archive", lit("PK\x03\x04\x14\x00\x00\x00"), "ZIP archive, not a .npy file"},
      {"version 4.0", lit("\x93NUMPY\x04\x00\x10\x00{}"), "format version 4.0; ember reads versions 1.0"},
      {"version 1.1", lit("\x93NUMPY\x01\x01\x10\x00{}"), "format version 1.1"},
      {"header past the end", lit("\x93NUMPY\x01\x00\x40\x00{'descr'"),
       "the header is 64 bytes long but only 8 bytes follow"},
      {"header over the limit", lit("\x93NUMPY\x02\x00\x11\x27\x00\x00"),
       "the header is 10001 bytes long, over the limit of 10000"},
      {"huge v2 header length", lit("\x93NUMPY\x02\x00\xff\xff\xff\xff"),
       "the header is 4294967295 bytes long, over the limit"},
      {"cut in the data", npy_file(f32_header("(2, 3)"), f32x6.substr(0, 23)),
       "the shape (2, 3) with dtype '<f4' needs 24 bytes of data, but only 23 bytes follow the header"},
      {"shape too big for the file", npy_file(f32_header("(100000, 100000)"), f32x6),
       "needs 40000000000 bytes of data, but only 24 bytes follow"},
      {"shape overflowing 64 bits", npy_file(f32_header("(4294967296, 4294967296)")),
       "too large to address with 64-bit sizes"},
      {"empty with overflowing strides", npy_file(f32_header("(0, 4294967296, 4294967296)")),
       "too large to address with 64-bit sizes"},
      {"dimension over int64", npy_file(f32_header("(9223372036854775808,)")), "which is too large"},
      {"dimension over uint64", npy_file(f32_header("(123456789012345678901234567890,)")), "which is too large"},
      {"negative dimension", npy_file(f32_header("(2, -3)")), "has a negative dimension"},
      {"float dimension", npy_file(f32_header("(2.0,)")), "a number that is not an integer"},
      {"shape is a list", npy_file(f32_header("[2, 3]")), "the header's 'shape' is [2, 3], not a tuple of integers"},
      {"shape in parentheses only", npy_file(f32_header("(6)")), "the header's 'shape' is 6, not a tuple"},
      {"shape holds a string", npy_file(f32_header("('2',)")), "holds a string, not only integers"},
      {"shape holds a bool", npy_file(f32_header("(True,)")), "holds a bool, not only integers"},
      {"too many dimensions", npy_file(f32_header("(" + repeat("1, ", 65) + ")")),
       "the shape has 65 dimensions, more than NumPy's limit of 64"},
      {"leading zero", npy_file(f32_header("(02,)")), "the integer '02' has a leading zero"},
      {"fortran_order not a bool", npy_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (), }", "1234"),
       "the header's 'fortran_order' is 0, not True or False"},
      {"unknown descr", npy_file("{'descr': '<x9', 'fortran_order': False, 'shape': (), }", "1234"),
       "'descr' '<x9' is not a NumPy dtype ember knows"},
      {"descr not a string", npy_file("{'descr': 4, 'fortran_order': False, 'shape': (), }", "1234"),
       "the header's 'descr' is 4, not a dtype string"},
      {"uint64", npy_file("{'descr': '<u8', 'fortran_order': False, 'shape': (), }", "12345678"),
       "dtype '<u8' (uint64) is not supported"},
      {"missing key", npy_file("{'descr': '<f4', 'shape': (), }", "1234"),
       "the header's keys are {'descr', 'shape'}; a .npy header has exactly 'descr', 'fortran_order' and 'shape'"},
      {"extra key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", "1234"),
       "the header's keys are {'descr', 'fortran_order', 'shape', 'x'}"},
      {"key twice", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", "1234"),
       "the header has the key 'descr' twice"},
      {"header is a list", npy_file("['descr', '<f4']"), "the header is a list, not a dict"},
      {"header is empty", npy_file(""), "the header ends where a value should be"},
      {"unclosed dict", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': ()"),
       "expected ',' or '}' but found end of header"},
      {"unclosed string", npy_file("{'descr: '<f4'}"), "expected ':' after a key"},
      {"string across lines", npy_file("{'descr\n': 1}"), "a string is not closed"},
      {"missing colon", npy_file("{'descr' '<f4'}"), "expected ':' after a key but found"},
      {"code instead of a literal", npy_file("{'descr': __import__('os').system('true')}"), "unexpected '__import__'"},
      {"text after the dict", npy_file(f32_header("()") + " x"), "unexpected 'x' after the header's dict"},
      {"nesting bomb", npy_file("{'descr': " + repeat("[", 40) + repeat("]", 40) + "}"),
       "nested more than 32 levels deep"},
      {"NUL in the header", npy_file(std::string("{'descr'\0: 1}", 13)), "the header holds a NUL byte at offset 8"},
      {"control characters", npy_file("{'descr': '\x01\x7f'}"), "the header's keys are {'descr'}"},
  };
}

TEST(NpyHostile, EveryMalformedFileIsAnErrorNamingTheSourceAndTheProblem) {
  const std::vector<HostileCase> cases = hostile_cases();
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string msg = error_of([&] { load_npy_from_bytes(c.bytes, "hostile.npy"); });
    EXPECT_NE(msg.find("load_npy_from_bytes(hostile.npy): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 600u) << msg;
  }
}

TEST(NpyHostile, FilesOnDiskGiveTheSameErrorsWithThePath) {
  TempDir dir("npy");
  const std::vector<HostileCase> cases = hostile_cases();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].what);
    const fs::path path = dir / ("case" + std::to_string(i) + ".npy");
    write_file(path, cases[i].bytes);
    const std::string msg = error_of([&] { load_npy(path); });
    EXPECT_NE(msg.find("load_npy('" + path.string() + "'): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(cases[i].message), std::string::npos) << msg;
  }
  EXPECT_NE(error_of([&] { load_npy(dir.path()); }).find("not a regular file"), std::string::npos);
  const std::string missing = error_of([&] { load_npy(dir / "missing.npy"); });
  EXPECT_NE(missing.find("missing.npy"), std::string::npos) << missing;
  EXPECT_NE(missing.find(std::strerror(ENOENT)), std::string::npos) << missing;
}

// Every prefix and every single-byte corruption of valid files either loads or throws ember::Error.
TEST(NpyHostile, TruncationsAndByteFlipsNeverCrash) {
  for (const char* name : {"f4.npy", "fortran_i4.npy", "be_f2.npy", "v3_f4.npy", "scalar_f8.npy"}) {
    SCOPED_TRACE(name);
    const Bytes good = read_file(golden(name));
    for (size_t n = 0; n < good.size(); ++n) {
      const std::string msg = error_of([&] { load_npy_from_bytes(std::span(good.data(), n)); });
      EXPECT_NE(msg, "no error") << "prefix of " << n << " bytes";
    }
    for (size_t i = 0; i < good.size(); ++i) {
      for (const uint8_t flip : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
        Bytes bad = good;
        bad[i] ^= flip;
        try {
          (void)raw_bytes(load_npy_from_bytes(bad));
        } catch (const Error&) {
        }
      }
    }
  }
}

// ---- .npz ----

TEST(NpzGolden, ReadsSavezAndSavezCompressed) {
  expect_same_arrays(load_npz(golden("savez.npz")), golden_npz());
  expect_same_arrays(load_npz(golden("savez_compressed.npz")), golden_npz());
}

TEST(Npz, RoundTripsThroughAFileAndBytes) {
  TempDir dir("npz");
  const fs::path path = dir / "arrays.npz";
  NamedTensors arrays = golden_npz();
  arrays.emplace_back("wéight", arange(4, kFloat64).t());  // a non-ASCII name, as zipfile writes it
  arrays.emplace_back("strided", arange(12, kInt16).reshape({3, 4}).t());
  save_npz(path, arrays);
  NamedTensors contiguous;
  for (const auto& [name, t] : arrays) contiguous.emplace_back(name, t.contiguous());
  expect_same_arrays(load_npz(path), contiguous);
  EXPECT_EQ(read_file(path), save_npz_to_bytes(arrays));
  expect_same_arrays(load_npz_from_bytes(save_npz_to_bytes(arrays)), contiguous);
  EXPECT_EQ(dir.entries(), (std::vector<std::string>{"arrays.npz"}));
  // Each entry is what save_npy writes, stored (not compressed), as numpy.savez stores it.
  const Bytes bytes = read_file(path);
  const auto zip = io::internal::ZipReader::from_bytes(bytes, "test");
  ASSERT_EQ(zip.entries().size(), arrays.size());
  for (size_t i = 0; i < arrays.size(); ++i) {
    const io::internal::ZipEntry& e = zip.entries()[i];
    EXPECT_EQ(e.name, arrays[i].first + ".npy");
    EXPECT_EQ(e.method, 0);
    EXPECT_EQ(zip.read_bytes(e, 1 << 20), save_npy_to_bytes(arrays[i].second));
  }
  // No arrays: an empty archive, as np.savez(path) writes.
  save_npz(path, {});
  EXPECT_TRUE(load_npz(path).empty());
}

TEST(Npz, BadInputToSaveIsAnErrorBeforeTheDiskIsTouched) {
  TempDir dir("npz");
  const fs::path path = dir / "a.npz";
  save_npz(path, {{"keep", ones({2})}});
  const Bytes before = read_file(path);
  const std::pair<NamedTensors, std::string> cases[] = {
      {{{"w", ones({2})}, {"b", ones({2}, kBFloat16)}}, "array 'b': NumPy has no bfloat16 dtype"},
      {{{"w", ones({2})}, {"w", ones({3})}}, "two arrays are called 'w'"},
      {{{"", ones({2})}}, "an array's name is empty"},
      {{{"u", Tensor()}}, "array 'u': the tensor is undefined"},
      {{{std::string(65532, 'n'), ones({1})}}, "is longer than 65531 bytes"},
  };
  for (const auto& c : cases) {
    const NamedTensors& arrays = c.first;
    const std::string& message = c.second;
    SCOPED_TRACE(message);
    const std::string msg = error_of([&] { save_npz(path, arrays); });
    EXPECT_NE(msg.find("save_npz('" + path.string() + "'): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(message), std::string::npos) << msg;
    EXPECT_NE(error_of([&] { save_npz_to_bytes(arrays); }).find(message), std::string::npos);
    EXPECT_EQ(read_file(path), before);
    EXPECT_EQ(dir.entries(), (std::vector<std::string>{"a.npz"}));
  }
}

// An archive holding these entries, stored.
Bytes zip_of(const std::vector<std::pair<std::string, Bytes>>& entries) {
  Bytes out;
  io::internal::ZipWriter zip(
      [&](const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        out.insert(out.end(), p, p + n);
      },
      1);
  for (const auto& [name, bytes] : entries) zip.add(name, bytes);
  zip.finish();
  return out;
}

TEST(NpzHostile, MalformedArchivesAreErrorsNamingTheEntry) {
  const Bytes good = save_npy_to_bytes(ones({2}));
  const std::pair<Bytes, std::string> cases[] = {
      {zip_of({{"a.npy", good}, {"notes.txt", bytes_of("hi")}}),
       "load_npz_from_bytes(hostile.npz): entry 'notes.txt' is not a .npy array"},
      {zip_of({{".npy", good}}), "entry '.npy' is not a .npy array"},
      {zip_of({{"a.npy", good}, {"b.npy", Bytes(good.begin(), good.end() - 1)}}),
       "load_npz_from_bytes(hostile.npz): entry 'b.npy': the shape (2,) with dtype '<f4' needs 8 bytes of data, but "
       "only 7"},
      {zip_of({{"c.npy", read_file(golden("unsupported_c8.npy"))}}), "entry 'c.npy': the array's dtype '<c8'"},
      {zip_of({{"z.npy", zip_of({})}}), "entry 'z.npy': this is a ZIP archive, not a .npy file"},
      {good, "this is a .npy file, not an .npz archive (read it with load_npy)"},
      {bytes_of("not an archive at all, but long enough"), "not a ZIP archive"},
  };
  for (const auto& c : cases) {
    const Bytes& bytes = c.first;
    const std::string& message = c.second;
    SCOPED_TRACE(message);
    const std::string msg = error_of([&] { load_npz_from_bytes(bytes, "hostile.npz"); });
    EXPECT_NE(msg.find("load_npz_from_bytes(hostile.npz): "), std::string::npos) << msg;
    EXPECT_NE(msg.find(message), std::string::npos) << msg;
  }
  TempDir dir("npz");
  write_file(dir / "a.npy", good);
  const std::string msg = error_of([&] { load_npz(dir / "a.npy"); });
  EXPECT_NE(msg.find("load_npz('" + (dir / "a.npy").string() + "'): this is a .npy file"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { load_npz(dir / "missing.npz"); }).find(std::strerror(ENOENT)), std::string::npos);
}

// A deflated entry that claims more than deflate can expand to is refused before its declared size
// is allocated.
TEST(NpzHostile, DeflatedEntriesClaimingHugeSizesAreRefusedBeforeAllocating) {
  Bytes archive = read_file(golden("savez_compressed.npz"));
  const auto zip = io::internal::ZipReader::from_bytes(archive, "test");
  const io::internal::ZipEntry first = zip.entries().at(0);
  ASSERT_EQ(first.method, 8);
  // The central directory's uncompressed size of the first entry (offset 24 in its record).
  const std::string name = first.name;
  const Bytes central_header_sig = {'P', 'K', 1, 2};
  const auto it = std::search(archive.begin(), archive.end(), central_header_sig.begin(), central_header_sig.end());
  ASSERT_NE(it, archive.end());
  const size_t at = static_cast<size_t>(it - archive.begin()) + 24;
  for (int i = 0; i < 4; ++i) archive[at + i] = 0xfe;
  const std::string msg = error_of([&] { load_npz_from_bytes(archive, "bomb.npz"); });
  EXPECT_NE(msg.find("entry '" + name + "': "), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot inflate to the declared 4278124286 bytes"), std::string::npos) << msg;
}

}  // namespace
