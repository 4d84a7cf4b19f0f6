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
#include <string>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/io/atomic_file.h"
#include "io/byte_source.h"
#include "io/safetensors_header.h"

namespace ember::io {

// The format is little-endian; tensors are copied to and from the file as raw bytes.
static_assert(std::endian::native == std::endian::little, "ember's safetensors code assumes a little-endian host");

namespace {

using detail::concat;
using internal::errno_text;
using internal::quote_bounded;
using internal::safetensors_dtype;
using internal::SafetensorsEntry;
using internal::SafetensorsHeader;

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
    const int ra = safetensors_dtype(a.tensor->dtype()).reference_rank;
    const int rb = safetensors_dtype(b.tensor->dtype()).reference_rank;
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
    h += safetensors_dtype(p.tensor->dtype()).name;
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
  SafetensorsHeader parsed = internal::parse_safetensors_header(header, ctx);
  header = std::string();

  std::vector<SafetensorsEntry>& entries = parsed.entries;
  internal::check_safetensors_entries(entries, file_size - 8 - header_len, ctx);

  // Only now, with every size backed by bytes of the file, is memory allocated for the tensors.
  SafetensorsData out;
  out.metadata = std::move(parsed.metadata);
  out.tensors.reserve(entries.size());
  for (SafetensorsEntry& e : entries) {
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
