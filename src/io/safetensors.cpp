// The safetensors format: a writer that matches the reference implementation (the Rust
// `safetensors` crate behind Python's safetensors.torch) byte for byte, and a reader that checks a
// hostile file completely against its own size before it allocates anything for the tensors.
#include "ember/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/io/atomic_file.h"
#include "io/byte_source.h"

namespace ember::io {

// The format is little-endian; tensors are copied to and from the file as raw bytes.
static_assert(std::endian::native == std::endian::little, "ember's safetensors code assumes a little-endian host");

namespace {

using detail::concat;
using internal::bytes_needed;
using internal::errno_text;
using internal::quote_bounded;

// ---------------------------------------------------------------------------------------------
// Dtypes: ember's ten, with their safetensors names and their position in the reference's dtype
// enum, which decides the order tensors are written in (largest first).
struct DtypeName {
  Dtype dtype;
  std::string_view name;
  int reference_rank;
};
constexpr std::array<DtypeName, kNumDtypes> kDtypeNames = {{
    {kBool, "BOOL", 0},
    {kUInt8, "U8", 1},
    {kInt8, "I8", 2},
    {kInt16, "I16", 3},
    {kInt32, "I32", 6},
    {kInt64, "I64", 9},
    {kFloat16, "F16", 4},
    {kBFloat16, "BF16", 5},
    {kFloat32, "F32", 7},
    {kFloat64, "F64", 8},
}};
// Valid safetensors dtypes that ember cannot hold, so that such files get a precise message.
constexpr std::array<std::string_view, 10> kUnsupportedDtypeNames = {"U16",     "U32", "U64",     "F8_E5M2", "F8_E4M3",
                                                                     "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64"};

const DtypeName& dtype_entry(Dtype d) { return kDtypeNames[static_cast<size_t>(d)]; }

std::string shape_text(const std::vector<int64_t>& shape) { return detail::shape_str(IntList(shape)); }

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF), as JSON readers require.
bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    uint32_t min;
    if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += len;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Writing.

// A JSON string exactly as serde_json (the reference's serialiser) writes it: UTF-8 kept as is,
// only '"', '\\' and control characters escaped, with lowercase hex.
void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c >= 0x20) {
      out += ch;
    } else if (const size_t k = std::string_view("\b\f\n\r\t").find(ch); k != std::string_view::npos) {
      out += '\\';
      out += "bfnrt"[k];
    } else {
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
}

struct PlannedTensor {
  const std::string* name;
  const Tensor* tensor;
  uint64_t nbytes;
};

struct WritePlan {
  std::string header;                  // the JSON, padded; its length is the 8-byte prefix
  std::vector<PlannedTensor> tensors;  // in file order
  uint64_t data_bytes = 0;
};

// Checks the input and lays the file out as the reference does; `context` starts each message.
WritePlan plan_write(const std::vector<std::pair<const std::string*, const Tensor*>>& items,
                     const SafetensorsMetadata& metadata, const std::string& context) {
  WritePlan plan;
  plan.tensors.reserve(items.size());
  for (const auto& [name, tensor] : items) {
    EMBER_CHECK(tensor->defined(), context, ": tensor ", quote_bounded(*name), " is undefined");
    EMBER_CHECK(*name != "__metadata__", context,
                ": a tensor cannot be called '__metadata__' (the format reserves that key for metadata)");
    EMBER_CHECK(is_valid_utf8(*name), context, ": tensor name ", quote_bounded(*name), " is not valid UTF-8");
    plan.tensors.push_back({name, tensor, static_cast<uint64_t>(tensor->nbytes())});
  }
  for (const auto& [key, value] : metadata) {
    EMBER_CHECK(is_valid_utf8(key), context, ": metadata key ", quote_bounded(key), " is not valid UTF-8");
    EMBER_CHECK(is_valid_utf8(value), context, ": the metadata value for ", quote_bounded(key), " is not valid UTF-8");
  }
  // The reference's order: larger dtypes (by its enum) first, then names in byte order.
  std::stable_sort(plan.tensors.begin(), plan.tensors.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    const int ra = dtype_entry(a.tensor->dtype()).reference_rank;
    const int rb = dtype_entry(b.tensor->dtype()).reference_rank;
    if (ra != rb) return ra > rb;
    return *a.name < *b.name;
  });
  {
    std::vector<const std::string*> names;
    names.reserve(plan.tensors.size());
    for (const PlannedTensor& p : plan.tensors) names.push_back(p.name);
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    const auto dup = std::adjacent_find(names.begin(), names.end(),
                                        [](const std::string* a, const std::string* b) { return *a == *b; });
    EMBER_CHECK(dup == names.end(), context, ": two tensors are called ",
                quote_bounded(dup == names.end() ? "" : **dup));
  }

  std::string& h = plan.header;
  h += '{';
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) h += ',';
      first = false;
      append_json_string(h, key);
      h += ':';
      append_json_string(h, value);
    }
    h += '}';
  }
  uint64_t offset = 0;
  for (const PlannedTensor& p : plan.tensors) {
    if (h.size() > 1) h += ',';
    append_json_string(h, *p.name);
    h += ":{\"dtype\":\"";
    h += dtype_entry(p.tensor->dtype()).name;
    h += "\",\"shape\":[";
    for (int64_t d = 0; d < p.tensor->dim(); ++d) {
      if (d) h += ',';
      h += std::to_string(p.tensor->size(d));
    }
    h += "],\"data_offsets\":[";
    h += std::to_string(offset);
    h += ',';
    offset += p.nbytes;
    h += std::to_string(offset);
    h += "]}";
  }
  h += '}';
  // Padding to a multiple of 8 aligns the data buffer; with the widest dtypes first, every tensor
  // then starts at a multiple of its element size in a mapped file.
  h.append((8 - h.size() % 8) % 8, ' ');
  EMBER_CHECK(h.size() <= kSafetensorsMaxHeaderBytes, context, ": the header would be ", h.size(), " bytes, over the ",
              kSafetensorsMaxHeaderBytes, "-byte limit that safetensors readers accept");
  plan.data_bytes = offset;
  return plan;
}

std::array<uint8_t, 8> le_bytes(uint64_t v) {
  std::array<uint8_t, 8> b{};
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return b;
}

// The bytes of `t` as the file stores them: a contiguous CPU tensor (a copy only when needed).
Tensor host_contiguous(const Tensor& t) {
  Tensor c = t.detach();
  if (!c.is_cpu()) c = c.cpu();
  return c.contiguous();
}

template <typename Emit>
void emit_file(const WritePlan& plan, Emit&& emit) {
  const auto prefix = le_bytes(plan.header.size());
  emit(prefix.data(), prefix.size());
  emit(plan.header.data(), plan.header.size());
  for (const PlannedTensor& p : plan.tensors) {
    if (p.nbytes == 0) continue;
    const Tensor c = host_contiguous(*p.tensor);
    emit(c.data_ptr(), p.nbytes);
  }
}

std::vector<std::pair<const std::string*, const Tensor*>> items_of(const NamedTensors& tensors) {
  std::vector<std::pair<const std::string*, const Tensor*>> items;
  items.reserve(tensors.size());
  for (const auto& [name, t] : tensors) items.emplace_back(&name, &t);
  return items;
}

std::vector<std::pair<const std::string*, const Tensor*>> items_of(const std::map<std::string, Tensor>& tensors) {
  std::vector<std::pair<const std::string*, const Tensor*>> items;
  items.reserve(tensors.size());
  for (const auto& [name, t] : tensors) items.emplace_back(&name, &t);
  return items;
}

void save_items(const std::filesystem::path& path,
                const std::vector<std::pair<const std::string*, const Tensor*>>& items,
                const SafetensorsMetadata& metadata) {
  const std::string dest = path.string();
  const std::string context = concat("save_safetensors(", quote_bounded(dest), ")");
  EMBER_CHECK(!dest.empty(), "save_safetensors: the path is empty");
  // Everything that can be checked is checked before the disk is touched.
  const WritePlan plan = plan_write(items, metadata, context);
  AtomicFileWriter file(path, context);
  emit_file(plan, [&](const void* data, size_t n) { file.write(data, n); });
  file.commit();
}

std::vector<uint8_t> save_items_to_bytes(const std::vector<std::pair<const std::string*, const Tensor*>>& items,
                                         const SafetensorsMetadata& metadata) {
  const WritePlan plan = plan_write(items, metadata, "save_safetensors_to_bytes");
  std::vector<uint8_t> out;
  out.reserve(8 + plan.header.size() + plan.data_bytes);
  emit_file(plan, [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out.insert(out.end(), p, p + n);
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading.

struct HeaderEntry {
  std::string name;
  std::optional<Dtype> dtype;
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::pair<uint64_t, uint64_t>> offsets;
};

struct ParsedHeader {
  std::vector<HeaderEntry> entries;
  SafetensorsMetadata metadata;
};

using Json = nlohmann::json;

// Builds only what the format needs from the JSON events, so memory stays proportional to the
// header whatever the JSON holds, and checks each value's type as it arrives.
class HeaderParser : public nlohmann::json_sax<Json> {
 public:
  explicit HeaderParser(const std::string& context) : context_(context) {}

  ParsedHeader take() { return std::move(out_); }

  bool null() override { return scalar("null"); }
  bool boolean(bool) override { return scalar("a boolean"); }
  bool number_integer(number_integer_t v) override {
    if (state_ == State::Shape || state_ == State::Offsets) {
      // nlohmann reports "-0" here too; serde_json (the reference) rejects it as well.
      fail_here("holds the negative number ", v == 0 ? "-0" : std::to_string(v));
    }
    return scalar("a number");
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (state_ == State::Shape) {
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail_here("has the dimension ", v, ", which is too large");
      current_.shape->push_back(static_cast<int64_t>(v));
      return true;
    }
    if (state_ == State::Offsets) {
      if (offset_count_ == 0)
        current_.offsets->first = v;
      else if (offset_count_ == 1)
        current_.offsets->second = v;
      else
        fail_here("has more than two offsets");
      ++offset_count_;
      return true;
    }
    return scalar("a number");
  }
  bool number_float(number_float_t, const string_t& text) override {
    if (state_ == State::Shape || state_ == State::Offsets)
      fail_here("holds ", quote_bounded(text), ", which is not a 64-bit unsigned integer");
    return scalar("a number");
  }
  bool binary(binary_t&) override { return scalar("binary data"); }

  bool string(string_t& v) override {
    switch (state_) {
      case State::MetadataValue:
        out_.metadata.emplace(std::move(metadata_key_), std::move(v));
        state_ = State::Metadata;
        return true;
      case State::TensorValue:
        if (field_ == Field::Dtype) {
          current_.dtype = parse_dtype(v);
          state_ = State::Tensor;
          return true;
        }
        break;
      default:
        break;
    }
    return scalar("a string");
  }

  bool start_object(std::size_t) override {
    switch (state_) {
      case State::Start:
        state_ = State::Root;
        return true;
      case State::RootValue:
        if (key_is_metadata_) {
          state_ = State::Metadata;
        } else {
          current_ = HeaderEntry{std::move(key_), {}, {}, {}};
          state_ = State::Tensor;
        }
        return true;
      case State::TensorValue:
        if (field_ == Field::Other) return skip_open();
        break;
      case State::Skip:
        return skip_open();
      default:
        break;
    }
    return scalar("an object");
  }

  bool start_array(std::size_t) override {
    switch (state_) {
      case State::TensorValue:
        if (field_ == Field::Shape) {
          current_.shape.emplace();
          state_ = State::Shape;
          return true;
        }
        if (field_ == Field::Offsets) {
          current_.offsets.emplace(0, 0);
          offset_count_ = 0;
          state_ = State::Offsets;
          return true;
        }
        if (field_ == Field::Other) return skip_open();
        break;
      case State::Skip:
        return skip_open();
      default:
        break;
    }
    return scalar("a list");
  }

  bool key(string_t& k) override {
    switch (state_) {
      case State::Root:
        key_is_metadata_ = k == "__metadata__";
        if (key_is_metadata_) {
          if (seen_metadata_) detail::fail(context_, ": the header has '__metadata__' twice");
          seen_metadata_ = true;
        }
        key_ = std::move(k);
        state_ = State::RootValue;
        return true;
      case State::Metadata:
        if (out_.metadata.count(k)) detail::fail(context_, ": the metadata has the key ", quote_bounded(k), " twice");
        metadata_key_ = std::move(k);
        state_ = State::MetadataValue;
        return true;
      case State::Tensor: {
        field_ = k == "dtype"          ? Field::Dtype
                 : k == "shape"        ? Field::Shape
                 : k == "data_offsets" ? Field::Offsets
                                       : Field::Other;
        const bool seen = (field_ == Field::Dtype && current_.dtype) || (field_ == Field::Shape && current_.shape) ||
                          (field_ == Field::Offsets && current_.offsets);
        if (seen)
          detail::fail(context_, ": the entry of tensor ", quote_bounded(current_.name), " has ", quote_bounded(k),
                       " twice");
        state_ = State::TensorValue;
        return true;
      }
      case State::Skip:
        return true;
      default:
        // Keys arrive only inside objects, and every object state is handled above.
        detail::fail(context_, ": malformed header");
    }
  }

  bool end_object() override {
    switch (state_) {
      case State::Root:
        state_ = State::Done;
        return true;
      case State::Metadata:
        state_ = State::Root;
        return true;
      case State::Tensor:
        finish_tensor();
        state_ = State::Root;
        return true;
      case State::Skip:
        return skip_close();
      default:
        detail::fail(context_, ": malformed header");
    }
  }

  bool end_array() override {
    switch (state_) {
      case State::Shape:
        state_ = State::Tensor;
        return true;
      case State::Offsets:
        if (offset_count_ != 2)
          detail::fail(context_, ": 'data_offsets' of tensor ", quote_bounded(current_.name),
                       " must hold two numbers [begin, end], not ", offset_count_);
        state_ = State::Tensor;
        return true;
      case State::Skip:
        return skip_close();
      default:
        detail::fail(context_, ": malformed header");
    }
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    // nlohmann's text starts with "[json.exception.parse_error.101] "; its "last read" part can
    // quote a huge or binary token, so the message is cut short.
    std::string what = ex.what();
    if (const size_t p = what.find("] "); p != std::string::npos) what.erase(0, p + 2);
    constexpr size_t kMaxShown = 300;
    if (what.size() > kMaxShown) what = what.substr(0, kMaxShown) + "...";
    detail::fail(context_, ": the header is not valid JSON: ", what);
  }

 private:
  enum class State { Start, Root, RootValue, Metadata, MetadataValue, Tensor, TensorValue, Shape, Offsets, Skip, Done };
  enum class Field { Dtype, Shape, Offsets, Other };

  // The deepest nesting the reference (serde_json, through its flattened header struct) accepts.
  static constexpr int kMaxDepth = 127;

  template <typename... Parts>
  [[noreturn]] void fail_here(const Parts&... parts) {
    const char* what = state_ == State::Shape ? "the shape" : "'data_offsets'";
    detail::fail(context_, ": ", what, " of tensor ", quote_bounded(current_.name), " ", parts...);
  }

  // Any value not handled by a caller above lands here: either it is an unknown field's value,
  // which the reference ignores too, or it has the wrong type.
  bool scalar(const char* kind) {
    switch (state_) {
      case State::Start:
        detail::fail(context_, ": the header must be a JSON object, not ", kind);
      case State::RootValue:
        if (key_is_metadata_) {
          if (std::string_view(kind) == "null") {
            state_ = State::Root;
            return true;
          }
          detail::fail(context_, ": '__metadata__' must be an object of strings, not ", kind);
        }
        detail::fail(context_, ": the entry of tensor ", quote_bounded(key_), " must be an object, not ", kind);
      case State::MetadataValue:
        detail::fail(context_, ": the metadata value for ", quote_bounded(metadata_key_), " must be a string, not ",
                     kind);
      case State::TensorValue:
        if (field_ == Field::Other) {
          state_ = State::Tensor;
          return true;
        }
        detail::fail(context_, ": ", field_name(), " of tensor ", quote_bounded(current_.name), " must be ",
                     field_ == Field::Dtype ? "a string" : "a list of integers", ", not ", kind);
      case State::Shape:
      case State::Offsets:
        fail_here("must hold only non-negative integers, not ", kind);
      case State::Skip:
        return true;
      default:
        detail::fail(context_, ": malformed header");
    }
  }

  const char* field_name() const {
    return field_ == Field::Dtype ? "'dtype'" : field_ == Field::Shape ? "'shape'" : "'data_offsets'";
  }

  bool skip_open() {
    if (state_ != State::Skip) {
      state_ = State::Skip;
      skip_depth_ = 0;
    }
    // Root and tensor entry are two levels already.
    if (++skip_depth_ + 2 > kMaxDepth)
      detail::fail(context_, ": the header's JSON is nested more than ", kMaxDepth, " levels deep");
    return true;
  }

  bool skip_close() {
    if (--skip_depth_ == 0) state_ = State::Tensor;
    return true;
  }

  Dtype parse_dtype(const std::string& name) const {
    for (const DtypeName& d : kDtypeNames)
      if (d.name == name) return d.dtype;
    for (std::string_view u : kUnsupportedDtypeNames)
      if (u == name)
        detail::fail(context_, ": tensor ", quote_bounded(current_.name), " has the safetensors dtype ",
                     quote_bounded(name), ", which ember does not support");
    detail::fail(context_, ": tensor ", quote_bounded(current_.name), " has the unknown dtype ", quote_bounded(name));
  }

  void finish_tensor() {
    const char* missing = !current_.dtype     ? "dtype"
                          : !current_.shape   ? "shape"
                          : !current_.offsets ? "data_offsets"
                                              : nullptr;
    if (missing)
      detail::fail(context_, ": the entry of tensor ", quote_bounded(current_.name), " has no '", missing, "'");
    out_.entries.push_back(std::move(current_));
  }

  const std::string& context_;
  ParsedHeader out_;
  State state_ = State::Start;
  Field field_ = Field::Other;
  HeaderEntry current_;
  std::string key_;
  std::string metadata_key_;
  bool key_is_metadata_ = false;
  bool seen_metadata_ = false;
  int offset_count_ = 0;
  int skip_depth_ = 0;
};

// `mapped`: the file's mapping, when the caller asked for one; tensors then view it.
SafetensorsData load_from(const internal::ByteSource& src,
                          const std::shared_ptr<internal::MappedFile>& mapped = nullptr) {
  const std::string& ctx = src.context();
  const uint64_t file_size = src.size();
  EMBER_CHECK(file_size >= 8, ctx, ": the file is ", file_size,
              " bytes long, too short for the 8-byte header length of a safetensors file");
  std::array<uint8_t, 8> prefix{};
  src.read(0, prefix.data(), 8);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | prefix[i];
  EMBER_CHECK(header_len <= kSafetensorsMaxHeaderBytes, ctx, ": the header length is ", header_len,
              " bytes, over the limit of ", kSafetensorsMaxHeaderBytes, " (not a safetensors file?)");
  EMBER_CHECK(header_len <= file_size - 8, ctx, ": the header length is ", header_len, " bytes but only ",
              file_size - 8, " bytes follow it (truncated file, or not a safetensors file?)");

  std::string header(header_len, '\0');
  src.read(8, header.data(), header.size());
  // nlohmann stops at a NUL byte as if the input ended there, so "{}\0garbage" would parse. Raw NUL
  // is valid nowhere in JSON (inside strings it must be escaped), and the reference rejects it.
  if (const size_t nul = header.find('\0'); nul != std::string::npos)
    detail::fail(ctx, ": the header is not valid JSON: it holds a NUL byte at offset ", nul);
  HeaderParser parser(ctx);
  // The parser throws on every problem; a false return would mean it stopped without saying why.
  EMBER_CHECK(Json::sax_parse(header.data(), header.data() + header.size(), &parser), ctx, ": malformed header");
  ParsedHeader parsed = parser.take();
  header = std::string();

  std::vector<HeaderEntry>& entries = parsed.entries;
  {
    std::vector<const std::string*> names;
    names.reserve(entries.size());
    for (const HeaderEntry& e : entries) names.push_back(&e.name);
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    const auto dup = std::adjacent_find(names.begin(), names.end(),
                                        [](const std::string* a, const std::string* b) { return *a == *b; });
    if (dup != names.end()) detail::fail(ctx, ": the header describes tensor ", quote_bounded(**dup), " twice");
  }

  // As in the reference: in offset order the tensors must tile the data buffer exactly, from its
  // first byte to the file's last, each holding exactly the bytes its shape and dtype need.
  std::sort(entries.begin(), entries.end(), [](const HeaderEntry& a, const HeaderEntry& b) {
    if (*a.offsets != *b.offsets) return *a.offsets < *b.offsets;
    return a.name < b.name;
  });
  const uint64_t data_size = file_size - 8 - header_len;
  uint64_t expected = 0;
  const HeaderEntry* previous = nullptr;
  for (const HeaderEntry& e : entries) {
    const auto [begin, end] = *e.offsets;
    EMBER_CHECK(end >= begin, ctx, ": tensor ", quote_bounded(e.name), " has data_offsets [", begin, ", ", end,
                "], which end before they begin");
    const std::optional<uint64_t> need = bytes_needed(*e.dtype, *e.shape);
    EMBER_CHECK(need.has_value(), ctx, ": tensor ", quote_bounded(e.name), " has shape ", shape_text(*e.shape),
                " and dtype ", dtype_entry(*e.dtype).name, ", too large to address with 64-bit sizes");
    EMBER_CHECK(end - begin == *need, ctx, ": tensor ", quote_bounded(e.name), " has shape ", shape_text(*e.shape),
                " and dtype ", dtype_entry(*e.dtype).name, ", which need ", *need, " bytes, but its data_offsets [",
                begin, ", ", end, "] span ", end - begin);
    if (begin < expected)
      detail::fail(ctx, ": tensor ", quote_bounded(e.name), " (data_offsets [", begin, ", ", end, "]) overlaps tensor ",
                   quote_bounded(previous->name), ", which ends at ", expected);
    if (begin > expected)
      detail::fail(ctx, ": bytes [", expected, ", ", begin, ") of the data belong to no tensor (a gap before tensor ",
                   quote_bounded(e.name), ")");
    // Each end is checked against the file before the next tensor's sizes are believed.
    EMBER_CHECK(end <= data_size, ctx, ": tensor ", quote_bounded(e.name), " (data_offsets [", begin, ", ", end,
                "]) runs past the end of the data, which is ", data_size, " bytes (truncated file?)");
    expected = end;
    previous = &e;
  }
  EMBER_CHECK(expected == data_size, ctx, ": bytes [", expected, ", ", data_size,
              ") of the data, after the last tensor, belong to no tensor (trailing bytes)");

  // Only now, with every size backed by bytes of the file, is memory allocated for the tensors.
  SafetensorsData out;
  out.metadata = std::move(parsed.metadata);
  out.tensors.reserve(entries.size());
  for (HeaderEntry& e : entries) {
    // A 0-dim tensor's shape is an empty vector, whose data() may be null; Dims copies sizes with
    // memcpy, and memcpy from a null pointer is undefined even for 0 bytes (UBSan, found by fuzzing).
    static constexpr int64_t kNoSizes[1] = {0};
    const IntList sizes = e.shape->empty() ? IntList(kNoSizes, 0) : IntList(*e.shape);
    const uint64_t n = e.offsets->second - e.offsets->first;
    const uint64_t at = 8 + header_len + e.offsets->first;
    if (mapped && n && *e.dtype != kBool && at % element_size(*e.dtype) == 0) {
      out.tensors.emplace_back(
          std::move(e.name), detail::make_tensor_over(std::make_shared<detail::Storage>(mapped->data() + at, n, mapped),
                                                      sizes, detail::contiguous_strides(sizes), 0, *e.dtype));
      continue;
    }
    Tensor t = empty(sizes, TensorOptions(*e.dtype));
    if (n) src.read(at, t.data_ptr(), n);
    if (*e.dtype == kBool) {
      // A byte other than 0 or 1 is not a valid C++ bool; read it as true, as numpy's nonzero would.
      auto* p = static_cast<uint8_t*>(t.data_ptr());
      for (uint64_t i = 0; i < n; ++i) p[i] = p[i] != 0;
    }
    out.tensors.emplace_back(std::move(e.name), std::move(t));
  }
  return out;
}

}  // namespace

bool SafetensorsData::contains(std::string_view name) const {
  return std::any_of(tensors.begin(), tensors.end(), [&](const auto& p) { return p.first == name; });
}

const Tensor& SafetensorsData::at(std::string_view name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  detail::fail("SafetensorsData::at: no tensor called ", quote_bounded(name));
}

std::vector<std::string> SafetensorsData::names() const {
  std::vector<std::string> out;
  out.reserve(tensors.size());
  for (const auto& p : tensors) out.push_back(p.first);
  return out;
}

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata) {
  save_items(path, items_of(tensors), metadata);
}

void save_safetensors(const std::filesystem::path& path, const std::map<std::string, Tensor>& tensors,
                      const SafetensorsMetadata& metadata) {
  save_items(path, items_of(tensors), metadata);
}

std::vector<uint8_t> save_safetensors_to_bytes(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  return save_items_to_bytes(items_of(tensors), metadata);
}

std::vector<uint8_t> save_safetensors_to_bytes(const std::map<std::string, Tensor>& tensors,
                                               const SafetensorsMetadata& metadata) {
  return save_items_to_bytes(items_of(tensors), metadata);
}

SafetensorsData load_safetensors(const std::filesystem::path& path, const SafetensorsLoadOptions& options) {
  std::string context = concat("load_safetensors(", quote_bounded(path.string()), ")");
  if (options.mmap) {
    const std::shared_ptr<internal::MappedFile> mapped = internal::MappedFile::open(path, context);
    return load_from(internal::MemorySource({mapped->data(), mapped->size()}, std::move(context)), mapped);
  }
  return load_from(internal::FileSource(path, std::move(context)));
}

SafetensorsData load_safetensors_from_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  return load_from(internal::MemorySource(bytes, concat("load_safetensors_from_bytes(", source, ")")));
}

SafetensorsData load_safetensors_from_bytes(std::string_view bytes, std::string_view source) {
  return load_safetensors_from_bytes(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), source);
}

}  // namespace ember::io
