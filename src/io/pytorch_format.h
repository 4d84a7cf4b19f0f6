#pragma once
// Names torch.save uses for ember's dtypes: the legacy storage classes in persistent ids
// (torch.FloatStorage) and the dtype globals (torch.float32). Internal to ember (src/io).
#include <array>
#include <optional>
#include <string_view>

#include "ember/dtype.h"
#include "ember/io/pytorch.h"

namespace ember::io::internal {

struct TorchDtypeNames {
  Dtype dtype;
  std::string_view storage;  // torch.<storage>
  std::string_view name;     // torch.<name>, as pickled
};

inline constexpr std::array<TorchDtypeNames, 10> kTorchDtypeNames = {{
    {kFloat32, "FloatStorage", "float32"},
    {kFloat64, "DoubleStorage", "float64"},
    {kFloat16, "HalfStorage", "float16"},
    {kBFloat16, "BFloat16Storage", "bfloat16"},
    {kInt64, "LongStorage", "int64"},
    {kInt32, "IntStorage", "int32"},
    {kInt16, "ShortStorage", "int16"},
    {kInt8, "CharStorage", "int8"},
    {kUInt8, "ByteStorage", "uint8"},
    {kBool, "BoolStorage", "bool"},
}};

inline std::optional<Dtype> storage_dtype(std::string_view storage) {
  for (const auto& n : kTorchDtypeNames)
    if (n.storage == storage) return n.dtype;
  return std::nullopt;
}

inline std::string_view storage_type_name(Dtype d) {
  for (const auto& n : kTorchDtypeNames)
    if (n.dtype == d) return n.storage;
  return "FloatStorage";
}

inline std::optional<Dtype> dtype_from_torch_name(std::string_view name) {
  for (const auto& n : kTorchDtypeNames)
    if (n.name == name) return n.dtype;
  return std::nullopt;
}

// torch's dtypes that ember lacks, so that a file naming one gets a precise message.
inline bool is_unsupported_torch_dtype(std::string_view name) {
  constexpr std::array<std::string_view, 17> kOthers = {
      "complex32",     "complex64",   "complex128",      "uint16",          "uint32",          "uint64",
      "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",  "qint8",
      "quint8",        "qint32",      "quint4x2",        "quint2x4",        "float4_e2m1fn_x2"};
  for (std::string_view o : kOthers)
    if (o == name) return true;
  return false;
}

/// A dict key's identity for duplicate checks and lookups: Python's 1, 1.0 and True are one key.
/// Throws for kinds Python cannot hash (lists, dicts). Defined in pytorch_value.cpp.
std::string dict_key_identity(const Value& key);

inline const char* supported_dtypes_text() {
  return "ember has float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8 and bool";
}

}  // namespace ember::io::internal
