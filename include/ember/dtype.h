#pragma once
/// Element types, their names as PyTorch prints them, and PyTorch's type-promotion rules.
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "ember/half.h"

namespace ember {

enum class Dtype : uint8_t { Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64 };
inline constexpr int kNumDtypes = 10;

inline constexpr Dtype kBool = Dtype::Bool;
inline constexpr Dtype kUInt8 = Dtype::UInt8;
inline constexpr Dtype kInt8 = Dtype::Int8;
inline constexpr Dtype kInt16 = Dtype::Int16;
inline constexpr Dtype kInt32 = Dtype::Int32;
inline constexpr Dtype kInt64 = Dtype::Int64;
inline constexpr Dtype kFloat16 = Dtype::Float16;
inline constexpr Dtype kBFloat16 = Dtype::BFloat16;
inline constexpr Dtype kFloat32 = Dtype::Float32;
inline constexpr Dtype kFloat64 = Dtype::Float64;
inline constexpr Dtype kHalf = Dtype::Float16;
inline constexpr Dtype kFloat = Dtype::Float32;
inline constexpr Dtype kDouble = Dtype::Float64;
inline constexpr Dtype kLong = Dtype::Int64;
inline constexpr Dtype kInt = Dtype::Int32;

/// Bytes per element.
size_t element_size(Dtype d);
/// True for float16, bfloat16, float32 and float64.
bool is_floating_point(Dtype d);
/// PyTorch's name: "torch.float32", "torch.int64", ...
std::string_view dtype_name(Dtype d);
/// ATen's scalar-type name used in some error messages: "Float", "Double", "Long", ...
std::string_view scalar_type_name(Dtype d);
/// C++ element type names used by PyTorch's matmul messages: "float", "double", "long int", ...
std::string_view cpp_type_name(Dtype d);
/// The result type of a binary op between two tensors of these dtypes (torch.promote_types).
Dtype promote_types(Dtype a, Dtype b);
std::ostream& operator<<(std::ostream& os, Dtype d);

/// The C++ type that stores one element of a dtype, and the reverse.
template <typename T>
struct dtype_of;
template <> struct dtype_of<bool> { static constexpr Dtype value = kBool; };
template <> struct dtype_of<uint8_t> { static constexpr Dtype value = kUInt8; };
template <> struct dtype_of<int8_t> { static constexpr Dtype value = kInt8; };
template <> struct dtype_of<int16_t> { static constexpr Dtype value = kInt16; };
template <> struct dtype_of<int32_t> { static constexpr Dtype value = kInt32; };
template <> struct dtype_of<int64_t> { static constexpr Dtype value = kInt64; };
template <> struct dtype_of<Half> { static constexpr Dtype value = kFloat16; };
template <> struct dtype_of<BFloat16> { static constexpr Dtype value = kBFloat16; };
template <> struct dtype_of<float> { static constexpr Dtype value = kFloat32; };
template <> struct dtype_of<double> { static constexpr Dtype value = kFloat64; };
template <typename T>
inline constexpr Dtype dtype_v = dtype_of<T>::value;

}  // namespace ember
