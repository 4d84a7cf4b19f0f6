#pragma once
// What the tests of PyTorch's file format share (tests/io/test_pytorch_*.cpp): the goldens written
// by torch.save (tests/io/golden/torch, made by tools/gen_torch_golden.py, which also writes what
// each holds: expected.json for the structure, <name>.safetensors for the tensors), checks of a
// loaded value against them and against another value, and tools to inspect and build archives
// and pickles by hand.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "ember/io/pytorch.h"
#include "ember/io/safetensors.h"
#include "ember/nn/batchnorm.h"
#include "ember/nn/modules.h"
#include "ember/optim/optimizers.h"
#include "fuzz_common.h"
#include "io/zip_archive.h"
#include "support/error_of.h"
#include "support/host_device_backend.h"
#include "support/inject_fault.h"
#include "support/temp_dir.h"

namespace ember_test::pytorch_format {

using ember_test::error_of;
using ember_test::TempDir;
using nlohmann::json;

using namespace ember;
using io::Value;
namespace fs = std::filesystem;
namespace zip = ember::io::internal;  // src/io/zip_archive.h: the tests build and inspect archives with it
using Bytes = std::vector<uint8_t>;

// ---- files ----

inline fs::path golden_dir() { return fs::path(EMBER_SOURCE_DIR) / "tests" / "io" / "golden" / "torch"; }
inline fs::path golden(const std::string& name) { return golden_dir() / name; }

inline Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << p;
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

inline const json& expected() {
  static const json data = [] {
    std::ifstream in(golden("expected.json"));
    EXPECT_TRUE(in.good()) << "missing " << golden("expected.json");
    return json::parse(in);
  }();
  return data;
}

inline std::vector<std::string> readable_goldens() {
  std::vector<std::string> out;
  for (const auto& [name, entry] : expected()["files"].items()) out.push_back(name);
  return out;
}

inline std::string stem(const std::string& file) { return file.substr(0, file.rfind('.')); }

/// The golden's tensors (its .safetensors sibling), empty when it has none.
inline io::SafetensorsData golden_tensors(const std::string& file) {
  if (!expected()["files"][file]["tensors"].get<bool>()) return {};
  return io::load_safetensors(golden(stem(file) + ".safetensors"));
}

inline io::TorchLoadOptions on_cpu() {
  io::TorchLoadOptions o;
  o.map_location = Device("cpu");
  return o;
}

/// Reads a golden; the file saved from "cuda:0" is mapped to the CPU.
inline Value load_golden(const std::string& file) {
  const bool cuda = expected()["files"][file].contains("location");
  return io::torch_load(golden(file), cuda ? on_cpu() : io::TorchLoadOptions{});
}

// ---- tensors ----

inline Bytes raw_bytes(const Tensor& t) {
  Tensor c = t.detach().cpu().contiguous();
  const auto* p = static_cast<const uint8_t*>(c.data_ptr());
  return Bytes(p, p + c.nbytes());
}

inline const void* storage_of(const Tensor& t) { return t.impl().storage.get(); }

/// Where the tensor's storage starts, from its data pointer and offset.
inline const uint8_t* storage_base(const Tensor& t) {
  return static_cast<const uint8_t*>(t.data_ptr()) - t.storage_offset() * static_cast<int64_t>(t.element_size());
}

/// "float32" for kFloat32 (dtype_name gives "torch.float32").
inline std::string short_name(Dtype d) {
  std::string name(dtype_name(d));
  return name.rfind("torch.", 0) == 0 ? name.substr(6) : name;
}

inline std::vector<int64_t> vec(IntList l) { return std::vector<int64_t>(l.begin(), l.end()); }

template <typename T>
inline T at(const Tensor& t, std::initializer_list<int64_t> index) {
  Tensor s = t;
  for (int64_t i : index) s = s.select(0, i);
  return s.item<T>();
}

// ---- expected.json ----

/// Checks `v` against its description in expected.json; `storages` maps the file's storage
/// numbers to the ember storage that holds each, so that sharing is checked across the file.
struct Checker {
  const io::SafetensorsData& tensors;
  std::map<int64_t, const void*> storages;
  std::set<const void*> seen;
  // A value ember saved again holds only the part of each storage its tensors reach.
  bool resaved = false;

  void check(const Value& v, const json& e, const std::string& path) {
    SCOPED_TRACE("at " + (path.empty() ? std::string("<root>") : path));
    ASSERT_EQ(e.size(), 1u);
    const std::string kind = e.begin().key();
    const json& x = e.begin().value();
    if (kind == "none") {
      EXPECT_TRUE(v.is_none()) << v.summary();
    } else if (kind == "bool") {
      ASSERT_EQ(v.kind(), Value::Kind::Bool) << v.summary();
      EXPECT_EQ(v.to_bool(), x.get<bool>());
    } else if (kind == "int") {
      ASSERT_EQ(v.kind(), Value::Kind::Int) << v.summary();
      EXPECT_EQ(v.to_int(), std::stoll(x.get<std::string>()));
    } else if (kind == "float") {
      ASSERT_EQ(v.kind(), Value::Kind::Float) << v.summary();
      EXPECT_EQ(std::bit_cast<uint64_t>(v.to_double()), std::stoull(x.get<std::string>(), nullptr, 16))
          << v.to_double();
    } else if (kind == "str") {
      ASSERT_EQ(v.kind(), Value::Kind::String) << v.summary();
      EXPECT_EQ(v.to_string(), x.get<std::string>());
    } else if (kind == "bytes") {
      ASSERT_EQ(v.kind(), Value::Kind::Bytes) << v.summary();
      const std::string hex = x.get<std::string>();
      std::string raw;
      for (size_t i = 0; i < hex.size(); i += 2)
        raw.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
      EXPECT_EQ(v.to_string(), raw);
    } else if (kind == "dtype") {
      ASSERT_EQ(v.kind(), Value::Kind::Dtype) << v.summary();
      EXPECT_EQ(short_name(v.to_dtype()), x.get<std::string>());
    } else if (kind == "device") {
      ASSERT_EQ(v.kind(), Value::Kind::Device) << v.summary();
      EXPECT_EQ(v.to_device().str(), x.get<std::string>());
    } else if (kind == "list" || kind == "tuple") {
      ASSERT_EQ(v.kind(), kind == "list" ? Value::Kind::List : Value::Kind::Tuple) << v.summary();
      ASSERT_EQ(v.items().size(), x.size()) << v.summary();
      EXPECT_EQ(v.size(), x.size());
      for (size_t i = 0; i < x.size(); ++i) check(v.items()[i], x[i], path + "[" + std::to_string(i) + "]");
    } else if (kind == "dict" || kind == "odict") {
      ASSERT_TRUE(v.is_dict()) << v.summary();
      EXPECT_EQ(v.is_ordered_dict(), kind == "odict");
      ASSERT_EQ(v.dict_items().size(), x.size()) << v.summary();
      for (size_t i = 0; i < x.size(); ++i) {
        const auto& [key, value] = v.dict_items()[i];
        check(key, x[i][0], path + "{key " + std::to_string(i) + "}");
        check(value, x[i][1], path + "[" + key.summary() + "]");
        EXPECT_TRUE(v.contains(key));
        EXPECT_TRUE(v[key] == value) << "lookup by key " << key.summary();
      }
    } else if (kind == "tensor") {
      check_tensor(v, x);
    } else {
      FAIL() << "unknown kind " << kind;
    }
  }

  void check_tensor(const Value& v, const json& x) {
    ASSERT_TRUE(v.is_tensor()) << v.summary();
    const Tensor& t = v.to_tensor();
    ASSERT_TRUE(t.defined());
    const std::string name = x["name"];
    SCOPED_TRACE("tensor " + name);
    EXPECT_EQ(short_name(t.dtype()), x["dtype"].get<std::string>());
    EXPECT_EQ(vec(t.sizes()), x["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(vec(t.strides()), x["stride"].get<std::vector<int64_t>>());
    EXPECT_EQ(t.storage_offset(), x["offset"].get<int64_t>());
    EXPECT_EQ(t.requires_grad(), x["requires_grad"].get<bool>());
    EXPECT_TRUE(t.is_leaf());
    if (resaved)
      EXPECT_LE(t.impl().storage->nbytes(), x["storage_numel"].get<size_t>() * t.element_size());
    else
      EXPECT_EQ(t.impl().storage->nbytes(), x["storage_numel"].get<size_t>() * t.element_size());
    ASSERT_TRUE(tensors.contains(name)) << "the golden's .safetensors lacks " << name;
    EXPECT_EQ(raw_bytes(t), raw_bytes(tensors.at(name))) << "values differ";
    // Sharing: one ember storage per storage of the file, and no two files' storages in one.
    const int64_t number = x["storage"].get<int64_t>();
    auto [it, inserted] = storages.emplace(number, storage_of(t));
    if (inserted) {
      EXPECT_TRUE(seen.insert(storage_of(t)).second) << "storage " << number << " shares memory with another storage";
    } else {
      EXPECT_EQ(it->second, storage_of(t)) << "storage " << number << " was split into several";
    }
  }
};

inline void check_golden_value(const std::string& file, const Value& v, bool resaved = false) {
  SCOPED_TRACE(file);
  const io::SafetensorsData tensors = golden_tensors(file);
  Checker checker{tensors, {}, {}, resaved};
  checker.check(v, expected()["files"][file]["value"], "");
  EXPECT_EQ(static_cast<int64_t>(checker.storages.size()), expected()["files"][file]["storages"].get<int64_t>());
}

// ---- values compared with each other (round trips) ----

/// Same structure and kinds, floats to the bit, tensors with the same dtype, geometry, values
/// and requires_grad; `storage_map` pairs a's storages with b's, so sharing must match one to one.
struct SameValue {
  std::map<const void*, const void*> a_to_b, b_to_a;

  void check(const Value& a, const Value& b, const std::string& path) {
    SCOPED_TRACE("at " + (path.empty() ? std::string("<root>") : path));
    ASSERT_EQ(a.kind(), b.kind()) << a.summary() << " vs " << b.summary();
    switch (a.kind()) {
      case Value::Kind::Float:
        EXPECT_EQ(std::bit_cast<uint64_t>(a.to_double()), std::bit_cast<uint64_t>(b.to_double()));
        break;
      case Value::Kind::Tensor: {
        const Tensor &x = a.to_tensor(), &y = b.to_tensor();
        EXPECT_EQ(x.dtype(), y.dtype());
        EXPECT_EQ(vec(x.sizes()), vec(y.sizes()));
        EXPECT_EQ(vec(x.strides()), vec(y.strides()));
        EXPECT_EQ(x.storage_offset(), y.storage_offset());
        EXPECT_EQ(x.requires_grad(), y.requires_grad());
        EXPECT_EQ(x.device(), y.device());
        // ember saves the part of a storage that the saved tensors reach (PyTorch saves all of
        // it), so a round trip may shrink a storage, never grow it.
        EXPECT_LE(y.impl().storage->nbytes(), x.impl().storage->nbytes());
        EXPECT_EQ(raw_bytes(x), raw_bytes(y));
        auto [i, new_a] = a_to_b.emplace(storage_of(x), storage_of(y));
        auto [j, new_b] = b_to_a.emplace(storage_of(y), storage_of(x));
        EXPECT_EQ(new_a, new_b) << "storage sharing differs";
        EXPECT_EQ(i->second, storage_of(y)) << "storage sharing differs";
        EXPECT_EQ(j->second, storage_of(x)) << "storage sharing differs";
        break;
      }
      case Value::Kind::List:
      case Value::Kind::Tuple:
        ASSERT_EQ(a.items().size(), b.items().size());
        for (size_t i = 0; i < a.items().size(); ++i)
          check(a.items()[i], b.items()[i], path + "[" + std::to_string(i) + "]");
        break;
      case Value::Kind::Dict:
        EXPECT_EQ(a.is_ordered_dict(), b.is_ordered_dict());
        ASSERT_EQ(a.dict_items().size(), b.dict_items().size());
        for (size_t i = 0; i < a.dict_items().size(); ++i) {
          check(a.dict_items()[i].first, b.dict_items()[i].first, path + "{key}");
          check(a.dict_items()[i].second, b.dict_items()[i].second,
                path + "[" + a.dict_items()[i].first.summary() + "]");
        }
        break;
      default:
        EXPECT_TRUE(a == b) << a.summary() << " vs " << b.summary();
    }
  }
};

inline void expect_same_value(const Value& a, const Value& b) { SameValue().check(a, b, ""); }

// ---- archives ----

inline std::vector<std::string> entry_names(const Bytes& bytes) {
  auto reader = zip::ZipReader::from_bytes(bytes, "test");
  std::vector<std::string> out;
  for (const auto& e : reader.entries()) out.push_back(e.name);
  return out;
}

/// How many storage records ("<archive>/data/<n>") an archive holds.
inline int count_data_records(const Bytes& bytes) {
  int n = 0;
  for (const std::string& name : entry_names(bytes)) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos) continue;
    const std::string rest = name.substr(slash + 1);
    if (rest.rfind("data/", 0) == 0 && rest.size() > 5 &&
        std::all_of(rest.begin() + 5, rest.end(), [](char c) { return c >= '0' && c <= '9'; }))
      ++n;
  }
  return n;
}

/// A copy of a torch.save archive with data.pkl passed through `change`.
inline Bytes with_pickle(const Bytes& archive, const std::function<Bytes(Bytes)>& change) {
  auto reader = zip::ZipReader::from_bytes(archive, "test");
  Bytes out;
  zip::ZipWriter writer([&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  });
  for (const auto& e : reader.entries()) {
    Bytes data = reader.read_bytes(e, uint64_t{1} << 30);
    if (e.name.size() >= 8 && e.name.compare(e.name.size() - 8, 8, "data.pkl") == 0) data = change(std::move(data));
    writer.add(e.name, data);
  }
  writer.finish();
  return out;
}

inline Bytes pickle_of(const Bytes& archive) {
  auto reader = zip::ZipReader::from_bytes(archive, "test");
  for (const auto& e : reader.entries())
    if (e.name.size() >= 8 && e.name.compare(e.name.size() - 8, 8, "data.pkl") == 0)
      return reader.read_bytes(e, uint64_t{1} << 30);
  ADD_FAILURE() << "no data.pkl";
  return {};
}

// A protocol-2 pickle written by hand, for files torch.save would never write.
class PickleBuilder {
 public:
  PickleBuilder() { op(0x80).op(2); }
  PickleBuilder& op(uint8_t o) {
    bytes_.push_back(o);
    return *this;
  }
  PickleBuilder& raw(std::string_view s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  PickleBuilder& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) op(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  PickleBuilder& str(std::string_view s) { return op('X').u32(static_cast<uint32_t>(s.size())).raw(s); }
  PickleBuilder& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<uint8_t>(v));
    if (v >= INT32_MIN && v <= INT32_MAX) return op('J').u32(static_cast<uint32_t>(v));
    op(0x8a).op(8);
    for (int i = 0; i < 8; ++i) op(static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i)));
    return *this;
  }
  PickleBuilder& global(std::string_view module, std::string_view name) {
    return op('c').raw(module).raw("\n").raw(name).raw("\n");
  }
  PickleBuilder& int_tuple(const std::vector<int64_t>& v) {
    op('(');
    for (int64_t x : v) integer(x);
    return op('t');
  }
  /// _rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, OrderedDict())
  PickleBuilder& tensor(std::string_view storage_type, std::string_view key, std::string_view location, int64_t numel,
                        int64_t offset, const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", storage_type).str(key).str(location).integer(numel).op('t').op('Q');
    integer(offset).int_tuple(sizes).int_tuple(strides).op(0x89);
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
  Bytes done() {
    Bytes out = bytes_;
    out.push_back('.');
    return out;
  }

 private:
  Bytes bytes_;
};

/// An archive in torch.save's layout around a pickle and storage records.
inline Bytes archive(const Bytes& pickle, const std::map<std::string, Bytes>& records = {}) {
  Bytes out;
  zip::ZipWriter writer([&](const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  });
  writer.add("archive/data.pkl", pickle);
  writer.add("archive/byteorder", std::string_view("little"));
  for (const auto& [key, data] : records) writer.add("archive/data/" + key, data);
  writer.add("archive/version", std::string_view("3\n"));
  writer.finish();
  return out;
}

inline Bytes floats(std::initializer_list<float> v) {
  Bytes out(v.size() * 4);
  std::memcpy(out.data(), std::data(v), out.size());
  return out;
}

inline std::string load_error(const Bytes& bytes) {
  return error_of([&] { io::torch_load_from_bytes(bytes, "crafted.pt"); });
}

inline bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

/// A dict's value under a string key, for changing it in place.
inline Value& entry(Value& dict, const std::string& key) {
  for (auto& [k, v] : dict.dict_items())
    if (k.kind() == Value::Kind::String && k.to_string() == key) return v;
  throw std::out_of_range("no key " + key);
}

}  // namespace ember_test::pytorch_format
