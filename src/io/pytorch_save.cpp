// torch_save: the archive torch.save writes (format version 3): data.pkl (pickle protocol 2),
// .format_version, .storage_alignment, byteorder, one record per storage under data/, version,
// .data/serialization_id, each record aligned to 64 bytes.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/io/atomic_file.h"
#include "ember/io/pytorch.h"
#include "io/pickle.h"
#include "io/pytorch_format.h"
#include "io/zip_archive.h"

namespace ember::io {

using detail::concat;
using detail::fail;

namespace {

// One storage record: the elements [0, numel) of a storage some saved tensors share.
struct StorageRecord {
  std::shared_ptr<ember::detail::Storage> storage;
  Dtype dtype;
  int64_t numel = 0;
  std::string key;
};

class SavePlan {
 public:
  explicit SavePlan(std::string context) : context_(std::move(context)) {}

  // Finds every tensor in the order the pickler meets them, checks it, and sizes its storage's
  // record to cover every saved tensor that shares it.
  void collect(const Value& v, int depth) {
    if (depth > 200) fail(context_, ": the value nests more than 200 levels deep");
    switch (v.kind()) {
      case Value::Kind::Tensor:
        return add(v.to_tensor());
      case Value::Kind::List:
      case Value::Kind::Tuple:
        for (const Value& item : v.items()) collect(item, depth + 1);
        return;
      case Value::Kind::Dict:
        for (const auto& [key, value] : v.dict_items()) {
          collect(key, depth + 1);
          collect(value, depth + 1);
        }
        return;
      default:
        return;
    }
  }

  static internal::Pickler::StorageRef storage_ref(void* self, const Tensor& t) {
    const SavePlan& plan = *static_cast<SavePlan*>(self);
    const StorageRecord& r = plan.records_[plan.index_.at(t.impl().storage.get())];
    const Device d = t.device();
    std::string location =
        d.is_cpu() ? std::string("cpu") : concat(device_type_name(d.type()), ":", d.has_index() ? d.index() : 0);
    return {std::string(internal::storage_type_name(r.dtype)), r.key, std::move(location), r.numel};
  }

  const std::vector<StorageRecord>& records() const { return records_; }

 private:
  void add(const Tensor& t) {
    if (t.requires_grad() && !t.is_leaf())
      fail(context_, ": refusing to save a non-leaf tensor that requires grad (", Value(t).summary(60),
           "): autograd history cannot be saved. To save its data, call .detach() on it first");
    const auto& impl = t.impl();
    const auto item = static_cast<int64_t>(element_size(t.dtype()));
    int64_t end = impl.offset;  // one past the last element it reaches
    if (t.numel() > 0) {
      for (int64_t d = 0; d < t.dim(); ++d)
        end += (impl.sizes[static_cast<size_t>(d)] - 1) * impl.strides[static_cast<size_t>(d)];
      end += 1;
    }
    if (static_cast<uint64_t>(end * item) > impl.storage->nbytes())
      fail(context_, ": internal error: a tensor reaches past its storage");
    auto [it, inserted] = index_.emplace(impl.storage.get(), records_.size());
    if (inserted) {
      records_.push_back({impl.storage, t.dtype(), end, std::to_string(records_.size())});
      return;
    }
    StorageRecord& r = records_[it->second];
    if (r.dtype != t.dtype())
      fail(context_, ": two saved tensors view the same memory as different dtypes (", dtype_name(r.dtype), " and ",
           dtype_name(t.dtype()), "), which PyTorch's format cannot hold");
    r.numel = std::max(r.numel, end);
  }

  std::string context_;
  std::vector<StorageRecord> records_;
  std::unordered_map<const ember::detail::Storage*, size_t> index_;
};

// A record's elements as a CPU tensor: the storage itself on the CPU, a copy from elsewhere.
Tensor record_on_host(const StorageRecord& r) {
  const Tensor t = ember::detail::make_tensor_over(r.storage, Dims{r.numel}, Dims{1}, 0, r.dtype);
  return t.device().is_cpu() ? t : t.to(Device(DeviceType::CPU));
}

// PyTorch writes a random 40-digit id; ember derives one from the contents, so that saving the
// same values twice gives the same file.
std::string serialization_id(uint64_t a, uint64_t b) {
  std::string id = concat(a % 10000000000000000000ull, b % 10000000000000000000ull);
  while (id.size() < 40) id.insert(id.begin(), '0');
  return id;
}

// `reserve`, when given, hears the archive's approximate size before the first byte.
void write_archive(const Value& value, std::string_view archive_name, const std::string& context,
                   const internal::ZipWriter::Sink& sink, const std::function<void(size_t)>& reserve = {}) {
  SavePlan plan(context);
  plan.collect(value, 0);
  if (reserve) {
    size_t total = 4096;
    for (const StorageRecord& r : plan.records())
      total += static_cast<size_t>(r.numel) * element_size(r.dtype) + 2 * archive_name.size() + 256;
    reserve(total);
  }
  internal::Pickler pickler(&SavePlan::storage_ref, &plan);
  const std::vector<uint8_t> pkl = pickler.dump(value);

  const std::string prefix = std::string(archive_name) + "/";
  internal::ZipWriter zip(sink, 64);
  zip.add(prefix + "data.pkl", pkl);
  zip.add(prefix + ".format_version", "1");
  zip.add(prefix + ".storage_alignment", "64");
  zip.add(prefix + "byteorder", "little");
  uint64_t h1 = internal::crc32_of(pkl), h2 = 0x9e3779b97f4a7c15ull ^ pkl.size();
  for (const StorageRecord& r : plan.records()) {
    const Tensor record = record_on_host(r);
    const auto bytes = std::span(static_cast<const uint8_t*>(record.data_ptr()), record.nbytes());
    const uint32_t crc = zip.add(prefix + "data/" + r.key, bytes);
    h1 = h1 * 1099511628211ull ^ crc;
    h2 = (h2 ^ crc) * 0xff51afd7ed558ccdull + bytes.size();
  }
  zip.add(prefix + "version", "3\n");
  zip.add(prefix + ".data/serialization_id", serialization_id(h1, h2));
  zip.finish();
}

std::string archive_name_for(const std::filesystem::path& path) {
  std::string stem = path.stem().string();
  return stem.empty() ? std::string("archive") : stem;
}

}  // namespace

void torch_save(const std::filesystem::path& path, const Value& value) {
  const std::string context = concat("torch_save('", path.string(), "')");
  EMBER_CHECK(!path.empty(), "torch_save: the path is empty");
  AtomicFileWriter file(path, context);
  write_archive(value, archive_name_for(path), context, [&](const void* data, size_t n) { file.write(data, n); });
  file.commit();
}

std::vector<uint8_t> torch_save_to_bytes(const Value& value, std::string_view archive_name) {
  EMBER_CHECK(!archive_name.empty() && archive_name.find('/') == std::string_view::npos,
              "torch_save_to_bytes: the archive name must be non-empty and hold no '/'");
  std::vector<uint8_t> out;
  write_archive(
      value, archive_name, "torch_save_to_bytes",
      [&](const void* data, size_t n) {
        const auto* p = static_cast<const uint8_t*>(data);
        out.insert(out.end(), p, p + n);
      },
      [&](size_t bytes) { out.reserve(bytes); });
  return out;
}

}  // namespace ember::io
