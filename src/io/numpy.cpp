// NumPy's .npy and .npz files: a writer that matches numpy.save byte for byte, and a reader that
// parses the header (a Python dict literal) with a strict parser of its own and checks a hostile
// file against its own size before it allocates anything for the data.
#include "ember/io/numpy.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/io/atomic_file.h"
#include "io/byte_source.h"
#include "io/zip_archive.h"

namespace ember::io {

// ember's tensors are little-endian in memory, as the files ember writes are.
static_assert(std::endian::native == std::endian::little, "ember's NumPy code assumes a little-endian host");

namespace {

using detail::concat;
using internal::bytes_needed;
using internal::quote_bounded;

constexpr std::string_view kMagic = "\x93NUMPY";
// numpy.lib.format: the data starts at a multiple of ARRAY_ALIGN, and the header leaves room for
// the first dimension (the one np.lib.format.open_memmap may grow) to reach GROWTH_AXIS_MAX_DIGITS.
constexpr size_t kArrayAlign = 64;
constexpr size_t kGrowthAxisMaxDigits = 21;
// NumPy 2's NPY_MAXDIMS.
constexpr size_t kMaxDims = 64;
// The header is a flat dict; a structured dtype nests a little further. Deeper is refused.
constexpr int kMaxDepth = 32;
// A ZIP entry's name has at most 65535 bytes, ".npy" included.
constexpr size_t kMaxNameBytes = 65535 - 4;

// ---------------------------------------------------------------------------------------------
// Dtypes: the NumPy type strings of ember's dtypes (all but bfloat16), as numpy.save writes them.
struct NpyType {
  Dtype dtype;
  std::string_view code;   // kind and size: "f4"
  std::string_view descr;  // what numpy.save writes: "<f4", "|b1"
};
constexpr std::array<NpyType, 9> kNpyTypes = {{
    {kBool, "b1", "|b1"},
    {kUInt8, "u1", "|u1"},
    {kInt8, "i1", "|i1"},
    {kInt16, "i2", "<i2"},
    {kInt32, "i4", "<i4"},
    {kInt64, "i8", "<i8"},
    {kFloat16, "f2", "<f2"},
    {kFloat32, "f4", "<f4"},
    {kFloat64, "f8", "<f8"},
}};

constexpr std::string_view kSupportedText =
    "ember reads bool, uint8, int8, int16, int32, int64, float16, float32 and float64 ('|b1', '|u1', '|i1', '<i2', "
    "'<i4', '<i8', '<f2', '<f4', '<f8', or big-endian with '>')";

const NpyType* npy_type_of(Dtype d) {
  for (const NpyType& t : kNpyTypes)
    if (t.dtype == d) return &t;
  return nullptr;
}

// A shape as Python's repr of a tuple shows it: "()", "(5,)", "(2, 3)".
std::string shape_repr(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ',';
  return s + ")";
}

// ---------------------------------------------------------------------------------------------
// Writing.

// The bytes of `t` as the file stores them: a contiguous CPU tensor (a copy only when needed).
Tensor host_contiguous(const Tensor& t) {
  Tensor c = t.detach();
  if (!c.is_cpu()) c = c.cpu();
  return c.contiguous();
}

const NpyType& writable_type(const Tensor& t, const std::string& context) {
  EMBER_CHECK(t.defined(), context, ": the tensor is undefined");
  const NpyType* type = npy_type_of(t.dtype());
  EMBER_CHECK(type != nullptr, context, ": NumPy has no bfloat16 dtype, so a bfloat16 tensor cannot be saved as .npy; ",
              "convert it first with .to(ember::kFloat32), which holds every bfloat16 value exactly");
  EMBER_CHECK(static_cast<size_t>(t.dim()) <= kMaxDims, context, ": the tensor has ", t.dim(),
              " dimensions; NumPy arrays have at most ", kMaxDims);
  return *type;
}

// Magic, version, header length and header, as numpy.lib.format._write_array_header writes them
// for a C-order array.
std::string npy_preamble(const Tensor& t, const std::string& context) {
  const NpyType& type = writable_type(t, context);
  const std::vector<int64_t> shape = t.sizes().vec();
  std::string dict =
      concat("{'descr': '", type.descr, "', 'fortran_order': False, 'shape': ", shape_repr(shape), ", }");
  if (!shape.empty()) {
    const size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  // _wrap_header: the header plus its newline, padded with 1 to 64 spaces so that magic, version,
  // length and header end at a multiple of 64. With at most 64 dimensions the header stays under
  // 2 KB, so its length always fits version 1.0's two bytes, as numpy.save then chooses.
  const size_t with_newline = dict.size() + 1;
  const size_t pad = kArrayAlign - (kMagic.size() + 4 + with_newline) % kArrayAlign;
  const size_t header_len = with_newline + pad;
  std::string out(kMagic);
  out += '\x01';
  out += '\0';
  out += static_cast<char>(header_len & 0xff);
  out += static_cast<char>(header_len >> 8);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  return out;
}

template <typename Emit>
void emit_npy(const Tensor& t, const std::string& context, Emit&& emit) {
  const std::string preamble = npy_preamble(t, context);
  emit(preamble.data(), preamble.size());
  if (t.numel() == 0) return;
  const Tensor c = host_contiguous(t);
  emit(c.data_ptr(), c.nbytes());
}

std::vector<uint8_t> npy_bytes(const Tensor& t, const std::string& context) {
  std::vector<uint8_t> out;
  emit_npy(t, context, [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  });
  return out;
}

// Everything save_npz can check before it touches the disk.
void check_npz_input(const NamedTensors& tensors, const std::string& context) {
  std::set<std::string_view> seen;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(!name.empty(), context, ": an array's name is empty");
    EMBER_CHECK(name.size() <= kMaxNameBytes, context, ": the name ", quote_bounded(name), " is longer than ",
                kMaxNameBytes, " bytes (a ZIP entry's name, with \".npy\", holds at most 65535)");
    EMBER_CHECK(seen.insert(name).second, context, ": two arrays are called ", quote_bounded(name));
    writable_type(t, concat(context, ": array ", quote_bounded(name)));
  }
}

void write_npz(const NamedTensors& tensors, const std::string& context, const internal::ZipWriter::Sink& sink) {
  // numpy.savez's zipfile neither aligns nor compresses its entries.
  internal::ZipWriter zip(sink, 1);
  for (const auto& [name, t] : tensors) {
    const std::vector<uint8_t> bytes = npy_bytes(t, concat(context, ": array ", quote_bounded(name)));
    zip.add(name + ".npy", bytes);
  }
  zip.finish();
}

// ---------------------------------------------------------------------------------------------
// Reading. The header: a Python literal, as ast.literal_eval would read it, limited to what can appear in
// one (strings, integers, True/False/None, tuples, lists, dicts).

struct PyValue {
  enum class Kind { Str, Int, Bool, None, Tuple, List, Dict };
  Kind kind = Kind::None;
  std::string text;                   // Str: the value; Int: the digits as written
  bool negative = false;              // Int
  std::optional<uint64_t> magnitude;  // Int, when it fits 64 bits
  bool truth = false;                 // Bool
  std::vector<PyValue> items;         // Tuple, List; Dict: key, value, key, value, ...
};

const char* kind_name(PyValue::Kind k) {
  switch (k) {
    case PyValue::Kind::Str:
      return "a string";
    case PyValue::Kind::Int:
      return "an integer";
    case PyValue::Kind::Bool:
      return "a bool";
    case PyValue::Kind::None:
      return "None";
    case PyValue::Kind::Tuple:
      return "a tuple";
    case PyValue::Kind::List:
      return "a list";
    case PyValue::Kind::Dict:
      return "a dict";
  }
  return "a value";
}

class LiteralParser {
 public:
  LiteralParser(std::string_view text, const std::string& context, bool python2_longs)
      : s_(text), context_(context), python2_longs_(python2_longs) {}

  PyValue parse() {
    skip_space();
    PyValue v = value(0);
    skip_space();
    if (pos_ != s_.size()) fail_at("unexpected ", token_here(), " after the header's dict");
    return v;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail_at(const Parts&... parts) const {
    detail::fail(context_, ": the header is not a valid Python literal: ", parts..., " at offset ", pos_);
  }

  std::string token_here() const {
    if (pos_ >= s_.size()) return "end of header";
    size_t end = pos_ + 1;
    while (end < s_.size() && end - pos_ < 20 && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_'))
      ++end;
    return quote_bounded(s_.substr(pos_, end - pos_));
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }

  bool take(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  static bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  PyValue value(int depth) {
    if (depth >= kMaxDepth) fail_at("nested more than ", kMaxDepth, " levels deep");
    skip_space();
    if (pos_ >= s_.size()) fail_at("the header ends where a value should be");
    const char c = s_[pos_];
    if (c == '\'' || c == '"') return string();
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return integer();
    if (c == '(' || c == '[' || c == '{') return container(depth);
    if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      while (end < s_.size() && is_word_char(s_[end])) ++end;
      const std::string_view word = s_.substr(pos_, end - pos_);
      PyValue v;
      if (word == "True" || word == "False") {
        v.kind = PyValue::Kind::Bool;
        v.truth = word == "True";
      } else if (word == "None") {
        v.kind = PyValue::Kind::None;
      } else {
        fail_at("unexpected ", quote_bounded(word));
      }
      pos_ = end;
      return v;
    }
    fail_at("unexpected ", token_here());
  }

  PyValue string() {
    const char quote = s_[pos_++];
    PyValue v;
    v.kind = PyValue::Kind::Str;
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] == '\n') fail_at("a string is not closed");
      const char c = s_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        v.text += c;
        continue;
      }
      if (pos_ >= s_.size()) fail_at("a string is not closed");
      const char e = s_[pos_++];
      switch (e) {
        case '\\':
        case '\'':
        case '"':
          v.text += e;
          break;
        case 'n':
          v.text += '\n';
          break;
        case 't':
          v.text += '\t';
          break;
        case 'r':
          v.text += '\r';
          break;
        case '0':
          v.text += '\0';
          break;
        default:  // Python keeps unknown escapes as written
          v.text += '\\';
          v.text += e;
      }
    }
    return v;
  }

  PyValue integer() {
    PyValue v;
    v.kind = PyValue::Kind::Int;
    if (s_[pos_] == '-' || s_[pos_] == '+') v.negative = s_[pos_++] == '-';
    const size_t start = pos_;
    uint64_t n = 0;
    bool fits = true;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const auto digit = static_cast<uint64_t>(s_[pos_] - '0');
      if (__builtin_mul_overflow(n, uint64_t{10}, &n) || __builtin_add_overflow(n, digit, &n)) fits = false;
      ++pos_;
    }
    if (pos_ == start) fail_at("a sign without a number");
    const std::string_view digits = s_.substr(start, pos_ - start);
    // Python 3 refuses leading zeros ("007") except in zero itself ("00").
    if (digits.size() > 1 && digits[0] == '0' && digits.find_first_not_of('0') != std::string_view::npos)
      fail_at("the integer ", quote_bounded(digits), " has a leading zero");
    // Headers written by NumPy under Python 2 may spell integers as longs: "3L".
    if (python2_longs_ && pos_ < s_.size() && (s_[pos_] == 'L' || s_[pos_] == 'l')) ++pos_;
    if (pos_ < s_.size() && (is_word_char(s_[pos_]) || s_[pos_] == '.'))
      fail_at("a number that is not an integer (", token_here(), " follows ", quote_bounded(digits), ")");
    v.text = digits;
    if (fits) v.magnitude = n;
    return v;
  }

  PyValue container(int depth) {
    const char open = s_[pos_++];
    const char close = open == '(' ? ')' : open == '[' ? ']' : '}';
    PyValue v;
    v.kind = open == '(' ? PyValue::Kind::Tuple : open == '[' ? PyValue::Kind::List : PyValue::Kind::Dict;
    bool comma = false;  // whether the items were separated by a comma: "(5)" is 5, "(5,)" a tuple
    while (true) {
      if (take(close)) break;
      v.items.push_back(value(depth + 1));
      if (v.kind == PyValue::Kind::Dict) {
        if (!take(':')) fail_at("expected ':' after a key but found ", token_here());
        v.items.push_back(value(depth + 1));
      }
      if (take(close)) break;
      if (!take(',')) fail_at("expected ',' or '", close, "' but found ", token_here());
      comma = true;
    }
    if (v.kind == PyValue::Kind::Tuple && v.items.size() == 1 && !comma) {
      PyValue inner = std::move(v.items[0]);
      return inner;
    }
    return v;
  }

  std::string_view s_;
  const std::string& context_;
  bool python2_longs_;
  size_t pos_ = 0;
};

// A short text form of a parsed value for messages ("(2, -1)", "[('a', '<f4')]").
std::string repr_of(const PyValue& v, size_t budget = 120) {
  std::string out;
  switch (v.kind) {
    case PyValue::Kind::Str:
      return quote_bounded(v.text);
    case PyValue::Kind::Int:
      return (v.negative ? "-" : "") + (v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text);
    case PyValue::Kind::Bool:
      return v.truth ? "True" : "False";
    case PyValue::Kind::None:
      return "None";
    default:
      break;
  }
  const bool dict = v.kind == PyValue::Kind::Dict;
  out += v.kind == PyValue::Kind::Tuple ? '(' : v.kind == PyValue::Kind::List ? '[' : '{';
  for (size_t i = 0; i < v.items.size(); ++i) {
    if (out.size() > budget) {
      out += "...";
      break;
    }
    if (i) out += dict && i % 2 ? ": " : ", ";
    out += repr_of(v.items[i], budget);
  }
  if (v.kind == PyValue::Kind::Tuple && v.items.size() == 1) out += ',';
  out += v.kind == PyValue::Kind::Tuple ? ')' : v.kind == PyValue::Kind::List ? ']' : '}';
  return out;
}

struct NpyHeader {
  Dtype dtype;
  bool big_endian = false;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  std::string descr;  // as written, for messages
};

// What NumPy calls the dtypes ember lacks, for the message that refuses them.
std::string numpy_name_of(char kind, std::string_view size) {
  const std::string bits = size.empty() ? "" : std::to_string(std::atoi(std::string(size).c_str()) * 8);
  switch (kind) {
    case 'c':
      return "complex" + bits;
    case 'u':
      return "uint" + bits;
    case 'i':
      return "int" + bits;
    case 'f':
      return size == "16" || size == "12" ? "longdouble" : "float" + bits;
    case 'b':
      return "bool";
    case 'O':
      return "object: Python objects stored as a pickle, which ember never reads";
    case 'U':
      return "a unicode string";
    case 'S':
    case 'a':
      return "a byte string";
    case 'V':
      return "void (raw bytes)";
    case 'M':
      return "datetime64";
    case 'm':
      return "timedelta64";
    default:
      return "";
  }
}

void parse_descr(const std::string& descr, NpyHeader& h, const std::string& context) {
  std::string_view s = descr;
  char order = '=';
  if (!s.empty() && (s[0] == '<' || s[0] == '>' || s[0] == '=' || s[0] == '|')) {
    order = s[0];
    s.remove_prefix(1);
  }
  for (const NpyType& t : kNpyTypes) {
    if (s == t.code) {
      h.dtype = t.dtype;
      h.big_endian = order == '>' && element_size(t.dtype) > 1;
      return;
    }
  }
  const std::string name = s.empty() ? "" : numpy_name_of(s[0], s.substr(1, std::min<size_t>(s.size() - 1, 3)));
  if (name.empty())
    detail::fail(context, ": the header's 'descr' ", quote_bounded(descr), " is not a NumPy dtype ember knows; ",
                 kSupportedText);
  std::string hint;
  if (s[0] == 'u') hint = "; convert it in NumPy first, e.g. a.astype(np.int64)";
  if (s[0] == 'c') hint = "; store its real and imaginary parts as two arrays";
  detail::fail(context, ": the array's dtype ", quote_bounded(descr), " (", name, ") is not supported; ",
               kSupportedText, hint);
}

NpyHeader interpret_header(const PyValue& dict, const std::string& context) {
  EMBER_CHECK(dict.kind == PyValue::Kind::Dict, context, ": the header is ", kind_name(dict.kind),
              ", not a dict (not a .npy file?)");
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  std::string keys;
  bool bad_keys = false;
  for (size_t i = 0; i < dict.items.size(); i += 2) {
    const PyValue& k = dict.items[i];
    keys += (i ? ", " : "") + repr_of(k, 40);
    const PyValue** slot = nullptr;
    if (k.kind == PyValue::Kind::Str) {
      slot = k.text == "descr" ? &descr : k.text == "fortran_order" ? &fortran : k.text == "shape" ? &shape : nullptr;
    }
    if (slot == nullptr) {
      bad_keys = true;
      continue;
    }
    EMBER_CHECK(*slot == nullptr, context, ": the header has the key ", quote_bounded(k.text), " twice");
    *slot = &dict.items[i + 1];
  }
  if (bad_keys || !descr || !fortran || !shape)
    detail::fail(context, ": the header's keys are {", keys, "}; a .npy header has exactly 'descr', 'fortran_order' ",
                 "and 'shape'");

  NpyHeader h;
  if (shape->kind != PyValue::Kind::Tuple)
    detail::fail(context, ": the header's 'shape' is ", repr_of(*shape), ", not a tuple of integers");
  EMBER_CHECK(shape->items.size() <= kMaxDims, context, ": the shape has ", shape->items.size(),
              " dimensions, more than NumPy's limit of ", kMaxDims);
  for (const PyValue& d : shape->items) {
    if (d.kind != PyValue::Kind::Int)
      detail::fail(context, ": the header's 'shape' ", repr_of(*shape), " holds ", kind_name(d.kind),
                   ", not only integers");
    if (d.negative && (!d.magnitude || *d.magnitude != 0))
      detail::fail(context, ": the header's 'shape' ", repr_of(*shape), " has a negative dimension");
    if (!d.magnitude || *d.magnitude > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      detail::fail(context, ": the header's 'shape' ", repr_of(*shape), " has the dimension ", repr_of(d),
                   ", which is too large");
    h.shape.push_back(static_cast<int64_t>(*d.magnitude));
  }
  if (fortran->kind != PyValue::Kind::Bool)
    detail::fail(context, ": the header's 'fortran_order' is ", repr_of(*fortran), ", not True or False");
  h.fortran_order = fortran->truth;
  if (descr->kind == PyValue::Kind::List)
    detail::fail(context, ": the array has a structured dtype ", repr_of(*descr),
                 ", which ember does not support (read each field as its own array in NumPy and save those); ",
                 kSupportedText);
  if (descr->kind != PyValue::Kind::Str)
    detail::fail(context, ": the header's 'descr' is ", repr_of(*descr), ", not a dtype string such as '<f4'");
  h.descr = descr->text;
  parse_descr(h.descr, h, context);
  return h;
}

void byteswap_elements(uint8_t* p, uint64_t nbytes, size_t item) {
  for (uint64_t i = 0; i + item <= nbytes; i += item) std::reverse(p + i, p + i + item);
}

Tensor read_npy(const internal::ByteSource& src, const std::string& ctx) {
  const uint64_t file_size = src.size();
  constexpr uint64_t kMinPreamble = 10;  // magic, version, 2-byte header length
  std::array<uint8_t, 12> pre{};
  src.read(0, pre.data(), std::min<uint64_t>(file_size, pre.size()));
  const std::string_view head(reinterpret_cast<const char*>(pre.data()), std::min<uint64_t>(file_size, pre.size()));
  if (internal::ZipReader::looks_like_zip(std::span<const uint8_t>(pre.data(), head.size())))
    detail::fail(ctx, ": this is a ZIP archive, not a .npy file (an .npz file? read it with load_npz)");
  if (!head.starts_with(kMagic)) {
    EMBER_CHECK(!kMagic.starts_with(head), ctx, ": the file is ", file_size,
                " bytes long, too short for a .npy file (truncated?)");
    detail::fail(ctx, ": the file does not start with NumPy's magic string \"\\x93NUMPY\" (not a .npy file?)");
  }
  EMBER_CHECK(file_size >= kMinPreamble, ctx, ": the file is ", file_size,
              " bytes long, too short for a .npy file's magic, version and header length (truncated?)");
  const int major = pre[6];
  const int minor = pre[7];
  EMBER_CHECK((major == 1 || major == 2 || major == 3) && minor == 0, ctx, ": the file has .npy format version ", major,
              ".", minor, "; ember reads versions 1.0, 2.0 and 3.0");
  uint64_t header_len = 0;
  uint64_t preamble = kMinPreamble;
  if (major == 1) {
    header_len = pre[8] | (uint64_t{pre[9]} << 8);
  } else {
    preamble = 12;
    EMBER_CHECK(file_size >= preamble, ctx, ": the file is ", file_size,
                " bytes long, too short for a .npy file's magic, version and header length (truncated?)");
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | pre[8 + i];
  }
  EMBER_CHECK(header_len <= kNpyMaxHeaderBytes, ctx, ": the header is ", header_len, " bytes long, over the limit of ",
              kNpyMaxHeaderBytes, " (numpy.load's default max_header_size)");
  EMBER_CHECK(header_len <= file_size - preamble, ctx, ": the header is ", header_len, " bytes long but only ",
              file_size - preamble, " bytes follow its length (truncated file?)");

  std::string text(header_len, '\0');
  src.read(preamble, text.data(), text.size());
  if (const size_t nul = text.find('\0'); nul != std::string::npos)
    detail::fail(ctx, ": the header holds a NUL byte at offset ", nul, " (corrupt file?)");
  const PyValue dict = LiteralParser(text, ctx, major <= 2).parse();
  const NpyHeader h = interpret_header(dict, ctx);

  const std::optional<uint64_t> need = bytes_needed(h.dtype, h.shape);
  EMBER_CHECK(need.has_value(), ctx, ": the shape ", shape_repr(h.shape), " with dtype ", quote_bounded(h.descr),
              " is too large to address with 64-bit sizes");
  const uint64_t data_start = preamble + header_len;
  EMBER_CHECK(*need <= file_size - data_start, ctx, ": the shape ", shape_repr(h.shape), " with dtype ",
              quote_bounded(h.descr), " needs ", *need, " bytes of data, but only ", file_size - data_start,
              " bytes follow the header (truncated file?)");

  // Only now, with the size backed by bytes of the file, is memory allocated for the data.
  // A 0-dim tensor's shape is an empty vector, whose data() may be null; Dims copies sizes with
  // memcpy, which must not get a null pointer even for 0 bytes.
  static constexpr int64_t kNoSizes[1] = {0};
  const IntList sizes = h.shape.empty() ? IntList(kNoSizes, 0) : IntList(h.shape);
  Tensor t;
  if (h.fortran_order && h.shape.size() > 1) {
    // Column-major: the first index varies fastest. Read the bytes as they lie, then copy.
    std::vector<int64_t> strides(h.shape.size());
    int64_t stride = 1;
    for (size_t i = 0; i < h.shape.size(); ++i) {
      strides[i] = stride;
      stride *= std::max<int64_t>(h.shape[i], 1);  // within `span` of bytes_needed: no overflow
    }
    t = empty_strided(sizes, IntList(strides), TensorOptions(h.dtype));
  } else {
    t = empty(sizes, TensorOptions(h.dtype));
  }
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  if (*need) src.read(data_start, p, *need);
  if (h.big_endian) byteswap_elements(p, *need, element_size(h.dtype));
  if (h.dtype == kBool) {
    // A byte other than 0 or 1 is not a valid C++ bool; read it as true, as NumPy's nonzero does.
    for (uint64_t i = 0; i < *need; ++i) p[i] = p[i] != 0;
  }
  return t.is_contiguous() ? t : t.contiguous();
}

NamedTensors read_npz(const internal::ZipReader& zip) {
  const std::string& ctx = zip.context();
  NamedTensors out;
  out.reserve(zip.entries().size());
  for (const internal::ZipEntry& entry : zip.entries()) {
    const std::string entry_ctx = concat(ctx, ": entry ", quote_bounded(entry.name));
    constexpr std::string_view kSuffix = ".npy";
    EMBER_CHECK(entry.name.size() > kSuffix.size() && entry.name.ends_with(kSuffix), entry_ctx,
                " is not a .npy array (an .npz archive holds only '<name>.npy' entries)");
    // The reader has checked the entry's place and sizes against the archive's size (and a
    // deflated entry's declared size against deflate's largest expansion).
    const std::vector<uint8_t> bytes = zip.read_bytes(entry, std::numeric_limits<uint64_t>::max());
    out.emplace_back(entry.name.substr(0, entry.name.size() - kSuffix.size()),
                     read_npy(internal::MemorySource(bytes, entry_ctx), entry_ctx));
  }
  return out;
}

// A .npy file passed for an archive gets a hint; any other non-archive, ZipReader's own message.
void check_not_npy(std::span<const uint8_t> head, const std::string& ctx) {
  if (std::string_view(reinterpret_cast<const char*>(head.data()), std::min(head.size(), kMagic.size())) == kMagic)
    detail::fail(ctx, ": this is a .npy file, not an .npz archive (read it with load_npy)");
}

std::string source_context(const char* function, const std::filesystem::path& path) {
  return concat(function, "(", quote_bounded(path.string()), ")");
}

}  // namespace

Tensor load_npy(const std::filesystem::path& path) {
  const std::string ctx = source_context("load_npy", path);
  return read_npy(internal::FileSource(path, ctx), ctx);
}

Tensor load_npy_from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  const std::string ctx = concat("load_npy_from_bytes(", source, ")");
  return read_npy(internal::MemorySource(bytes, ctx), ctx);
}

void save_npy(const std::filesystem::path& path, const Tensor& tensor) {
  const std::string context = source_context("save_npy", path);
  EMBER_CHECK(!path.empty(), "save_npy: the path is empty");
  // Everything that can be checked is checked before the disk is touched.
  writable_type(tensor, context);
  AtomicFileWriter file(path, context);
  emit_npy(tensor, context, [&](const void* data, size_t n) { file.write(data, n); });
  file.commit();
}

std::vector<uint8_t> save_npy_to_bytes(const Tensor& tensor) { return npy_bytes(tensor, "save_npy_to_bytes"); }

NamedTensors load_npz(const std::filesystem::path& path) {
  const std::string ctx = source_context("load_npz", path);
  check_not_npy(internal::read_head(path, kMagic.size(), ctx), ctx);
  return read_npz(internal::ZipReader::open(path, ctx));
}

NamedTensors load_npz_from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  const std::string ctx = concat("load_npz_from_bytes(", source, ")");
  check_not_npy(bytes, ctx);
  return read_npz(internal::ZipReader::from_bytes(bytes, ctx));
}

void save_npz(const std::filesystem::path& path, const NamedTensors& tensors) {
  const std::string context = source_context("save_npz", path);
  EMBER_CHECK(!path.empty(), "save_npz: the path is empty");
  check_npz_input(tensors, context);
  AtomicFileWriter file(path, context);
  write_npz(tensors, context, [&](const void* data, size_t n) { file.write(data, n); });
  file.commit();
}

std::vector<uint8_t> save_npz_to_bytes(const NamedTensors& tensors) {
  const std::string context = "save_npz_to_bytes";
  check_npz_input(tensors, context);
  std::vector<uint8_t> out;
  write_npz(tensors, context, [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  });
  return out;
}

}  // namespace ember::io
