// io::Value: a Python value as torch.save and torch.load see it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <unordered_set>

#include "core/check.h"
#include "ember/io/pytorch.h"
#include "io/pytorch_format.h"

namespace ember::io {

using detail::concat;
using detail::fail;

std::string internal::dict_key_identity(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
      return "n";
    case Value::Kind::Bool:
      return concat("i", v.to_bool() ? 1 : 0);
    case Value::Kind::Int:
      return concat("i", v.to_int());
    case Value::Kind::Float: {
      const double d = v.to_double();
      if (std::trunc(d) == d && std::abs(d) < 9.2e18) return concat("i", static_cast<int64_t>(d));
      return concat("f", std::bit_cast<uint64_t>(d));
    }
    case Value::Kind::String:
      return "s" + v.to_string();
    case Value::Kind::Bytes:
      return "b" + v.to_string();
    case Value::Kind::Dtype:
      return concat("d", static_cast<int>(v.to_dtype()));
    case Value::Kind::Device:
      return "v" + v.to_device().str();
    case Value::Kind::Tuple: {
      std::string s = "t(";
      for (const Value& item : v.items()) s += dict_key_identity(item) + ",";
      return s + ")";
    }
    case Value::Kind::Tensor:
      return concat("T", static_cast<const void*>(&v.to_tensor().impl()));
    case Value::Kind::List:
    case Value::Kind::Dict:
      break;
  }
  fail("io::Value: a ", v.type_name(), " cannot be a dict key (Python cannot hash it)");
}

namespace {

using internal::dict_key_identity;

void check_unique_keys(const Value::DictItems& items) {
  std::unordered_set<std::string> seen;
  seen.reserve(items.size());
  for (const auto& [key, value] : items)
    if (!seen.insert(dict_key_identity(key)).second)
      fail("io::Value::dict: the key ", key.summary(60), " appears twice");
}

std::string python_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

Value::Value(Tensor v) : kind_(Kind::Tensor), tensor_(std::move(v)) {
  if (!tensor_.defined()) fail("io::Value: an undefined tensor cannot be a value (use None: io::Value())");
}

Value::Value(const char* v) : kind_(Kind::String) {
  if (v == nullptr) fail("io::Value: a null string pointer cannot be a value (use None: io::Value())");
  string_ = v;
}

Value Value::bytes(std::string data) {
  Value v;
  v.kind_ = Kind::Bytes;
  v.string_ = std::move(data);
  return v;
}

Value Value::list(Items items) {
  Value v;
  v.kind_ = Kind::List;
  v.items_ = std::move(items);
  return v;
}

Value Value::tuple(Items items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::Tuple;
  return v;
}

Value Value::dict(DictItems items) {
  check_unique_keys(items);
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::move(items);
  return v;
}

Value Value::dict(std::initializer_list<std::pair<std::string, Value>> items) {
  DictItems converted;
  converted.reserve(items.size());
  for (const auto& [key, value] : items) converted.emplace_back(Value(key), value);
  return dict(std::move(converted));
}

Value Value::ordered_dict(DictItems items) {
  Value v = dict(std::move(items));
  v.ordered_ = true;
  return v;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Bytes:
      return "bytes";
    case Kind::Tensor:
      return "Tensor";
    case Kind::Dtype:
      return "torch.dtype";
    case Kind::Device:
      return "torch.device";
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return ordered_ ? "OrderedDict" : "dict";
  }
  return "object";
}

namespace {
[[noreturn]] void wrong_kind(const Value& v, std::string_view wanted) {
  fail("io::Value: expected ", wanted, " but the value is a ", v.type_name(), ": ", v.summary(120));
}
}  // namespace

bool Value::to_bool() const {
  if (kind_ != Kind::Bool) wrong_kind(*this, "a bool");
  return bool_;
}

int64_t Value::to_int() const {
  if (kind_ == Kind::Bool) return bool_ ? 1 : 0;  // Python's bool is an int
  if (kind_ != Kind::Int) wrong_kind(*this, "an int");
  return int_;
}

double Value::to_double() const {
  if (kind_ == Kind::Float) return float_;
  if (kind_ == Kind::Int) return static_cast<double>(int_);
  if (kind_ == Kind::Bool) return bool_ ? 1.0 : 0.0;
  wrong_kind(*this, "a float");
}

const std::string& Value::to_string() const {
  if (kind_ != Kind::String && kind_ != Kind::Bytes) wrong_kind(*this, "a str");
  return string_;
}

const Tensor& Value::to_tensor() const {
  if (kind_ != Kind::Tensor) wrong_kind(*this, "a Tensor");
  return tensor_;
}

Dtype Value::to_dtype() const {
  if (kind_ != Kind::Dtype) wrong_kind(*this, "a torch.dtype");
  return dtype_;
}

Device Value::to_device() const {
  if (kind_ != Kind::Device) wrong_kind(*this, "a torch.device");
  return device_;
}

const Value::Items& Value::items() const {
  if (kind_ != Kind::List && kind_ != Kind::Tuple) wrong_kind(*this, "a list or a tuple");
  return items_;
}

Value::Items& Value::items() {
  if (kind_ != Kind::List && kind_ != Kind::Tuple) wrong_kind(*this, "a list or a tuple");
  return items_;
}

const Value::DictItems& Value::dict_items() const {
  if (kind_ != Kind::Dict) wrong_kind(*this, "a dict");
  return dict_;
}

Value::DictItems& Value::dict_items() {
  if (kind_ != Kind::Dict) wrong_kind(*this, "a dict");
  return dict_;
}

size_t Value::size() const {
  switch (kind_) {
    case Kind::List:
    case Kind::Tuple:
      return items_.size();
    case Kind::Dict:
      return dict_.size();
    case Kind::String:
    case Kind::Bytes:
      return string_.size();
    default:
      wrong_kind(*this, "a container");
  }
}

const Value* Value::find(const Value& key) const {
  const std::string id = dict_key_identity(key);
  for (const auto& [k, v] : dict_items())
    if (dict_key_identity(k) == id) return &v;
  return nullptr;
}

bool Value::contains(const Value& key) const { return find(key) != nullptr; }

const Value& Value::operator[](const Value& key) const {
  if (const Value* v = find(key)) return *v;
  std::string keys;
  for (size_t i = 0; i < dict_.size() && i < 20; ++i) keys += (i ? ", " : "") + dict_[i].first.summary(40);
  if (dict_.size() > 20) keys += concat(", ... (", dict_.size(), " keys)");
  fail("io::Value: the dict has no key ", key.summary(60), "; its keys are: ", keys.empty() ? "(none)" : keys);
}

void Value::set(Value key, Value value) {
  if (const Value* v = find(key))
    *const_cast<Value*>(v) = std::move(value);  // find() on this non-const dict
  else
    dict_items().emplace_back(std::move(key), std::move(value));
}

std::string Value::summary(size_t max_chars) const {
  std::string s;
  switch (kind_) {
    case Kind::None:
      s = "None";
      break;
    case Kind::Bool:
      s = bool_ ? "True" : "False";
      break;
    case Kind::Int:
      s = std::to_string(int_);
      break;
    case Kind::Float:
      s = python_float_repr(float_);
      break;
    case Kind::String:
    case Kind::Bytes: {
      s = kind_ == Kind::Bytes ? "b'" : "'";
      for (char c : string_) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f || (kind_ == Kind::Bytes && u >= 0x80)) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", u);
          s += buf;
        } else {
          s += c;
        }
        if (s.size() > max_chars) break;
      }
      s += "'";
      break;
    }
    case Kind::Tensor: {
      s = concat("tensor(", std::string(dtype_name(tensor_.dtype())).substr(6), ", [");
      for (int64_t d = 0; d < tensor_.dim(); ++d) s += concat(d ? ", " : "", tensor_.sizes()[static_cast<size_t>(d)]);
      s += "]";
      if (!tensor_.device().is_cpu()) s += ", " + tensor_.device().str();
      s += ")";
      break;
    }
    case Kind::Dtype:
      s = std::string(dtype_name(dtype_));
      break;
    case Kind::Device:
      s = device_.repr();
      break;
    case Kind::List:
    case Kind::Tuple: {
      const bool list = kind_ == Kind::List;
      s = list ? "[" : "(";
      for (size_t i = 0; i < items_.size() && s.size() <= max_chars; ++i)
        s += (i ? ", " : "") + items_[i].summary(max_chars);
      if (!list && items_.size() == 1) s += ",";
      s += list ? "]" : ")";
      break;
    }
    case Kind::Dict: {
      s = ordered_ ? "OrderedDict({" : "{";
      for (size_t i = 0; i < dict_.size() && s.size() <= max_chars; ++i)
        s += concat(i ? ", " : "", dict_[i].first.summary(max_chars), ": ", dict_[i].second.summary(max_chars));
      s += ordered_ ? "})" : "}";
      break;
    }
  }
  if (s.size() > max_chars) s = s.substr(0, max_chars > 3 ? max_chars - 3 : 0) + "...";
  return s;
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Value::Kind::None:
      return true;
    case Value::Kind::Bool:
      return a.bool_ == b.bool_;
    case Value::Kind::Int:
      return a.int_ == b.int_;
    case Value::Kind::Float:
      return a.float_ == b.float_ || (std::isnan(a.float_) && std::isnan(b.float_));
    case Value::Kind::String:
    case Value::Kind::Bytes:
      return a.string_ == b.string_;
    case Value::Kind::Tensor:
      return a.tensor_.impl_ptr() == b.tensor_.impl_ptr();
    case Value::Kind::Dtype:
      return a.dtype_ == b.dtype_;
    case Value::Kind::Device:
      return a.device_ == b.device_;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      return a.items_ == b.items_;
    case Value::Kind::Dict:
      return a.ordered_ == b.ordered_ && a.dict_ == b.dict_;
  }
  return false;
}

}  // namespace ember::io
