#include "ember/dtype.h"

#include <array>
#include <ostream>

namespace ember {
namespace {

struct DtypeInfo {
  size_t size;
  bool floating;
  std::string_view name;
  std::string_view aten_name;
  std::string_view cpp_name;
};

constexpr std::array<DtypeInfo, kNumDtypes> kInfo = {{
    {1, false, "torch.bool", "Bool", "bool"},
    {1, false, "torch.uint8", "Byte", "unsigned char"},
    {1, false, "torch.int8", "Char", "signed char"},
    {2, false, "torch.int16", "Short", "short int"},
    {4, false, "torch.int32", "Int", "int"},
    {8, false, "torch.int64", "Long", "long int"},
    {2, true, "torch.float16", "Half", "c10::Half"},
    {2, true, "torch.bfloat16", "BFloat16", "c10::BFloat16"},
    {4, true, "torch.float32", "Float", "float"},
    {8, true, "torch.float64", "Double", "double"},
}};

const DtypeInfo& info(Dtype d) { return kInfo[static_cast<size_t>(d)]; }

}  // namespace

size_t element_size(Dtype d) { return info(d).size; }
bool is_floating_point(Dtype d) { return info(d).floating; }
std::string_view dtype_name(Dtype d) { return info(d).name; }
std::string_view scalar_type_name(Dtype d) { return info(d).aten_name; }
std::string_view cpp_type_name(Dtype d) { return info(d).cpp_name; }

Dtype promote_types(Dtype a, Dtype b) {
  if (a == b) return a;
  // torch.promote_types, restricted to ember's dtypes. Rows and columns in enum order:
  // b1 u1 i1 i2 i4 i8 f2 bf f4 f8.
  using D = Dtype;
  constexpr D b1 = D::Bool, u1 = D::UInt8, i1 = D::Int8, i2 = D::Int16, i4 = D::Int32, i8 = D::Int64,
              f2 = D::Float16, bf = D::BFloat16, f4 = D::Float32, f8 = D::Float64;
  static constexpr D table[kNumDtypes][kNumDtypes] = {
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<size_t>(a)][static_cast<size_t>(b)];
}

std::ostream& operator<<(std::ostream& os, Dtype d) { return os << dtype_name(d); }

}  // namespace ember
