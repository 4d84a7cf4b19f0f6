// Fuzzes io::torch_load_from_bytes: a ZIP archive holding a pickle and storage records, as
// torch.save writes them. An accepted file must give well-formed values whose tensors lie inside
// their storages, and ember's writer must reproduce it: saving what was read and reading that back
// gives the same structure, values, geometry and storage sharing, and a second save gives the
// very same bytes.
#include <cstring>
#include <map>
#include <string>

#include "ember/io/pytorch.h"
#include "fuzz_common.h"

namespace ember::fuzz {
namespace {

/// Reads every element of a tensor through its own strides (so a view past its storage's end
/// is a sanitizer report), and checks its geometry.
void touch_view(const Tensor& t) {
  expect(t.defined(), "a reader returned an undefined tensor");
  expect(t.is_cpu(), "a reader returned a tensor that is not on the CPU");
  int64_t numel = 1, last = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    expect(t.size(d) >= 0, "a negative size");
    expect(t.stride(d) >= 0, "a negative stride");
    expect(!__builtin_mul_overflow(numel, t.size(d), &numel), "the sizes overflow int64_t");
    if (t.size(d) > 0) last += (t.size(d) - 1) * t.stride(d);
  }
  expect(numel == t.numel(), "numel() is not the product of the sizes");
  expect(t.storage_offset() >= 0, "a negative storage offset");
  if (numel > 0) {
    const uint64_t end = static_cast<uint64_t>(t.storage_offset() + last + 1) * t.element_size();
    expect(end <= t.impl().storage->nbytes(), "a tensor reaches past its storage");
  }
  touch(t.contiguous());
}

void walk(const io::Value& v, int depth) {
  expect(depth < 10000, "a value nested deeper than 10000");
  switch (v.kind()) {
    case io::Value::Kind::Tensor:
      touch_view(v.to_tensor());
      break;
    case io::Value::Kind::List:
    case io::Value::Kind::Tuple:
      for (const io::Value& item : v.items()) walk(item, depth + 1);
      break;
    case io::Value::Kind::Dict:
      for (const auto& [key, value] : v.dict_items()) {
        walk(key, depth + 1);
        walk(value, depth + 1);
      }
      break;
    default:
      break;
  }
}

struct Same {
  std::map<const void*, const void*> a_to_b, b_to_a;

  void check(const io::Value& a, const io::Value& b) {
    expect(a.kind() == b.kind(), "a value changed kind through a save and a load");
    switch (a.kind()) {
      case io::Value::Kind::Float: {
        const double x = a.to_double(), y = b.to_double();
        expect(std::memcmp(&x, &y, sizeof x) == 0, "a float changed through a save and a load");
        break;
      }
      case io::Value::Kind::Tensor: {
        const Tensor &x = a.to_tensor(), &y = b.to_tensor();
        expect(same_tensor(x.contiguous(), y.contiguous()), "a tensor changed through a save and a load");
        expect(x.storage_offset() == y.storage_offset() && x.strides().vec() == y.strides().vec(),
               "a tensor's geometry changed through a save and a load");
        expect(x.requires_grad() == y.requires_grad(), "requires_grad changed through a save and a load");
        const void* sx = x.impl().storage.get();
        const void* sy = y.impl().storage.get();
        auto [i, new_a] = a_to_b.emplace(sx, sy);
        auto [j, new_b] = b_to_a.emplace(sy, sx);
        expect(new_a == new_b && i->second == sy && j->second == sx,
               "storage sharing changed through a save and a load");
        break;
      }
      case io::Value::Kind::List:
      case io::Value::Kind::Tuple:
        expect(a.items().size() == b.items().size(), "a sequence changed length through a save and a load");
        for (size_t i = 0; i < a.items().size(); ++i) check(a.items()[i], b.items()[i]);
        break;
      case io::Value::Kind::Dict:
        expect(a.is_ordered_dict() == b.is_ordered_dict(), "a dict changed type through a save and a load");
        expect(a.dict_items().size() == b.dict_items().size(), "a dict changed size through a save and a load");
        for (size_t i = 0; i < a.dict_items().size(); ++i) {
          check(a.dict_items()[i].first, b.dict_items()[i].first);
          check(a.dict_items()[i].second, b.dict_items()[i].second);
        }
        break;
      default:
        expect(a == b, "a value changed through a save and a load");
    }
  }
};

}  // namespace

void torch_load_one_input(std::span<const uint8_t> bytes) {
  io::Value value;
  try {
    value = io::torch_load_from_bytes(bytes, "fuzz input");
  } catch (const Error&) {
    return;  // rejected, as bad input should be
  }
  accepted("reading and re-saving an accepted torch file", [&] {
    walk(value, 0);
    (void)value.summary();
    const std::vector<uint8_t> saved = io::torch_save_to_bytes(value);
    const io::Value again = io::torch_load_from_bytes(saved, "re-saved fuzz input");
    Same().check(value, again);
    const std::vector<uint8_t> saved_again = io::torch_save_to_bytes(again);
    expect(saved == saved_again, "saving the same value twice gave different bytes");
  });
}

}  // namespace ember::fuzz

EMBER_FUZZ_ENTRY(ember::fuzz::torch_load_one_input)
