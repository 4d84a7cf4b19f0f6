// The safetensors header: a SAX reader of its JSON that accepts what the reference (the Rust
// `safetensors` crate, through serde_json) accepts, and the checks of the layout it describes.
#include "io/safetensors_header.h"

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/byte_source.h"

namespace ember::io::internal {

namespace {

// In Dtype order: safetensors_dtype() looks a dtype up by its value.
constexpr std::array<SafetensorsDtype, kNumDtypes> kDtypeNames = {{
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

std::string shape_text(const std::vector<int64_t>& shape) { return detail::shape_str(IntList(shape)); }

using Json = nlohmann::json;

// Builds only what the format needs from the JSON events, so memory stays proportional to the
// header whatever the JSON holds, and checks each value's type as it arrives.
class HeaderParser : public nlohmann::json_sax<Json> {
 public:
  explicit HeaderParser(const std::string& context) : context_(context) {}

  SafetensorsHeader take() { return std::move(out_); }

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
          current_ = SafetensorsEntry{std::move(key_), {}, {}, {}};
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
    for (const SafetensorsDtype& d : kDtypeNames)
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
  SafetensorsHeader out_;
  State state_ = State::Start;
  Field field_ = Field::Other;
  SafetensorsEntry current_;
  std::string key_;
  std::string metadata_key_;
  bool key_is_metadata_ = false;
  bool seen_metadata_ = false;
  int offset_count_ = 0;
  int skip_depth_ = 0;
};

}  // namespace

const SafetensorsDtype& safetensors_dtype(Dtype dtype) { return kDtypeNames[static_cast<size_t>(dtype)]; }

SafetensorsHeader parse_safetensors_header(std::string_view json, const std::string& context) {
  // nlohmann stops at a NUL byte as if the input ended there, so "{}\0garbage" would parse. Raw NUL
  // is valid nowhere in JSON (inside strings it must be escaped), and the reference rejects it.
  if (const size_t nul = json.find('\0'); nul != std::string_view::npos)
    detail::fail(context, ": the header is not valid JSON: it holds a NUL byte at offset ", nul);
  HeaderParser parser(context);
  // The parser throws on every problem; a false return would mean it stopped without saying why.
  EMBER_CHECK(Json::sax_parse(json.data(), json.data() + json.size(), &parser), context, ": malformed header");
  return parser.take();
}

void check_safetensors_entries(std::vector<SafetensorsEntry>& entries, uint64_t data_size, const std::string& context) {
  {
    std::vector<const std::string*> names;
    names.reserve(entries.size());
    for (const SafetensorsEntry& e : entries) names.push_back(&e.name);
    std::sort(names.begin(), names.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
    const auto dup = std::adjacent_find(names.begin(), names.end(),
                                        [](const std::string* a, const std::string* b) { return *a == *b; });
    if (dup != names.end()) detail::fail(context, ": the header describes tensor ", quote_bounded(**dup), " twice");
  }

  // As in the reference: in offset order the tensors must tile the data buffer exactly, from its
  // first byte to the file's last, each holding exactly the bytes its shape and dtype need.
  std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    if (*a.offsets != *b.offsets) return *a.offsets < *b.offsets;
    return a.name < b.name;
  });
  uint64_t expected = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& e : entries) {
    const auto [begin, end] = *e.offsets;
    EMBER_CHECK(end >= begin, context, ": tensor ", quote_bounded(e.name), " has data_offsets [", begin, ", ", end,
                "], which end before they begin");
    const std::optional<uint64_t> need = bytes_needed(*e.dtype, *e.shape);
    EMBER_CHECK(need.has_value(), context, ": tensor ", quote_bounded(e.name), " has shape ", shape_text(*e.shape),
                " and dtype ", safetensors_dtype(*e.dtype).name, ", too large to address with 64-bit sizes");
    EMBER_CHECK(end - begin == *need, context, ": tensor ", quote_bounded(e.name), " has shape ", shape_text(*e.shape),
                " and dtype ", safetensors_dtype(*e.dtype).name, ", which need ", *need,
                " bytes, but its data_offsets [", begin, ", ", end, "] span ", end - begin);
    if (begin < expected)
      detail::fail(context, ": tensor ", quote_bounded(e.name), " (data_offsets [", begin, ", ", end,
                   "]) overlaps tensor ", quote_bounded(previous->name), ", which ends at ", expected);
    if (begin > expected)
      detail::fail(context, ": bytes [", expected, ", ", begin,
                   ") of the data belong to no tensor (a gap before tensor ", quote_bounded(e.name), ")");
    // Each end is checked against the file before the next tensor's sizes are believed.
    EMBER_CHECK(end <= data_size, context, ": tensor ", quote_bounded(e.name), " (data_offsets [", begin, ", ", end,
                "]) runs past the end of the data, which is ", data_size, " bytes (truncated file?)");
    expected = end;
    previous = &e;
  }
  EMBER_CHECK(expected == data_size, context, ": bytes [", expected, ", ", data_size,
              ") of the data, after the last tensor, belong to no tensor (trailing bytes)");
}

}  // namespace ember::io::internal
