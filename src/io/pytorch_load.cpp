// torch_load: torch.save's ZIP archive (data.pkl plus one record per storage) read with an
// allow-list of globals, as torch.load(weights_only=True) does: no code from the file runs.
#include <algorithm>
#include <unordered_map>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/device.h"
#include "ember/factories.h"
#include "ember/io/pytorch.h"
#include "io/byte_source.h"
#include "io/pickle.h"
#include "io/pytorch_format.h"
#include "io/zip_archive.h"

namespace ember::io {

using detail::concat;
using detail::fail;
using internal::PickleNode;
using internal::PickleNodePtr;

namespace {

// data.pkl of a state_dict is a few bytes per tensor; a larger pickle is not a checkpoint.
constexpr uint64_t kMaxPickleBytes = uint64_t{1} << 30;

struct LoadedStorage {
  Dtype dtype;
  Tensor data;  // 1-D, contiguous, on the target device
};

class TorchUnpicklePolicy final : public internal::UnpicklePolicy {
 public:
  TorchUnpicklePolicy(const internal::ZipReader& zip, std::string prefix, bool big_endian,
                      const TorchLoadOptions& options, std::shared_ptr<internal::MappedFile> mapped)
      : zip_(zip), prefix_(std::move(prefix)), big_endian_(big_endian), options_(options), mapped_(std::move(mapped)) {}

  PickleNodePtr find_class(const std::string& module, const std::string& name) override {
    if (module == "torch") {
      if (auto d = internal::dtype_from_torch_name(name)) return PickleNode::make_leaf(Value(*d));
      if (internal::is_unsupported_torch_dtype(name))
        fail(context(), ": the file holds the dtype torch.", name, ", which ember does not have (",
             internal::supported_dtypes_text(), ")");
      if (internal::storage_dtype(name) || name == "device" || name == "Size" || name == "Tensor")
        return global(module, name);
      if (name.size() > 7 && name.ends_with("Storage"))
        fail(context(), ": the file holds a tensor stored as torch.", name, ", a dtype ember does not have (",
             internal::supported_dtypes_text(), ")");
    }
    if ((module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_tensor" ||
                                      name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")) ||
        (module == "torch._tensor" && name == "_rebuild_from_type_v2") ||
        (module == "torch.nn.parameter" && name == "Parameter") || (module == "collections" && name == "OrderedDict") ||
        (module == "_codecs" && name == "encode") ||
        ((module == "__builtin__" || module == "builtins") && name == "bytes"))
      return global(module, name);
    refuse(module, name);
  }

  PickleNodePtr call(const PickleNode& f, const PickleNode& args) override {
    const std::string fn = f.module + "." + f.name;
    const auto& a = args.items;
    if (fn == "collections.OrderedDict") {
      auto dict = PickleNode::make(PickleNode::Kind::Dict);
      dict->ordered = true;
      if (a.size() == 1 && a[0]->kind == PickleNode::Kind::List) {
        for (const PickleNodePtr& pair : a[0]->items) {
          if (pair->kind != PickleNode::Kind::Tuple || pair->items.size() != 2)
            fail(context(), ": OrderedDict(...) takes (key, value) pairs");
          dict->keys.push_back(pair->items[0]);
          dict->items.push_back(pair->items[1]);
        }
      } else if (!a.empty()) {
        fail(context(), ": OrderedDict called with arguments ember does not understand");
      }
      return dict;
    }
    if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
      const size_t expected = fn.ends_with("v2") ? 6 : 4;
      if (a.size() < expected || a.size() > expected + 1)
        fail(context(), ": ", f.name, " called with ", a.size(), " arguments, not ", expected);
      Tensor t = rebuild_tensor(*a[0], *a[1], *a[2], *a[3]);
      if (expected == 6) set_requires_grad(t, bool_arg(*a[4], "requires_grad"));
      return PickleNode::make_leaf(Value(std::move(t)));
    }
    if (fn == "torch._utils._rebuild_parameter" || fn == "torch._utils._rebuild_parameter_with_state") {
      if (a.size() < 3 || !a[0]->leaf.is_tensor()) fail(context(), ": ", f.name, " needs a tensor and requires_grad");
      Tensor t = a[0]->leaf.to_tensor();
      set_requires_grad(t, bool_arg(*a[1], "requires_grad"));
      return PickleNode::make_leaf(Value(std::move(t)));
    }
    if (fn == "torch._tensor._rebuild_from_type_v2") {
      // (function, type, args, state): a Tensor or Parameter rebuilt by `function`, then its
      // Python attributes (`state`) set; ember has no Python attributes to set.
      if (a.size() != 4 || a[0]->kind != PickleNode::Kind::Global || a[1]->kind != PickleNode::Kind::Global ||
          a[2]->kind != PickleNode::Kind::Tuple)
        fail(context(), ": malformed _rebuild_from_type_v2 call");
      const std::string type = a[1]->module + "." + a[1]->name;
      if (type != "torch.Tensor" && type != "torch.nn.parameter.Parameter")
        fail(context(), ": the file holds a tensor subclass ", type, ", which ember does not read");
      if (!is_empty_state(*a[3]))
        fail(context(), ": the file holds a tensor with Python attributes set on it, which ember cannot keep");
      return call(*a[0], *a[2]);
    }
    if (fn == "torch.nn.parameter.Parameter") {  // Parameter(data[, requires_grad])
      if (a.empty() || !a[0]->leaf.is_tensor()) fail(context(), ": Parameter(...) needs a tensor");
      Tensor t = a[0]->leaf.to_tensor();
      set_requires_grad(t, a.size() > 1 ? bool_arg(*a[1], "requires_grad") : true);
      return PickleNode::make_leaf(Value(std::move(t)));
    }
    if (fn == "torch.device") {
      std::string spec;
      if (!a.empty() && a[0]->leaf.kind() == Value::Kind::String) spec = a[0]->leaf.to_string();
      if (a.size() == 2 && a[1]->leaf.kind() == Value::Kind::Int) spec += concat(":", a[1]->leaf.to_int());
      if (spec.empty() || a.size() > 2) fail(context(), ": malformed torch.device(...) in the file");
      return PickleNode::make_leaf(Value(Device(spec)));
    }
    if (fn == "torch.Size") {
      if (a.size() != 1 || a[0]->kind != PickleNode::Kind::Tuple) fail(context(), ": malformed torch.Size(...)");
      return a[0];
    }
    if (fn == "_codecs.encode") {
      if (a.size() != 2 || a[0]->leaf.kind() != Value::Kind::String || a[1]->leaf.kind() != Value::Kind::String ||
          (a[1]->leaf.to_string() != "latin1" && a[1]->leaf.to_string() != "latin-1"))
        fail(context(), ": _codecs.encode(...) is allowed only as protocol 2's form of bytes (latin1 text)");
      return PickleNode::make_leaf(Value::bytes(latin1_bytes(a[0]->leaf.to_string())));
    }
    if (fn == "__builtin__.bytes" || fn == "builtins.bytes") {
      if (!a.empty()) fail(context(), ": bytes(...) with arguments is not supported");
      return PickleNode::make_leaf(Value::bytes(""));
    }
    fail(context(), ": the file calls ", fn, ", which ember does not allow");
  }

  void build(PickleNode& object, const PickleNode& state) override {
    if (is_empty_state(state)) return;
    // A state_dict is an OrderedDict with a `_metadata` attribute: each module's version, which
    // PyTorch's load_state_dict passes to modules that changed their layout (BatchNorm's
    // num_batches_tracked). ember's modules have one layout each, so it is dropped.
    if (object.kind == PickleNode::Kind::Dict && state.kind == PickleNode::Kind::Dict &&
        std::all_of(state.keys.begin(), state.keys.end(), [](const PickleNodePtr& k) {
          return k->kind == PickleNode::Kind::Leaf && k->leaf.kind() == Value::Kind::String &&
                 k->leaf.to_string() == "_metadata";
        }))
      return;
    fail(context(), ": the file sets Python state on a ", object.describe(), ", which ember cannot keep");
  }

  PickleNodePtr persistent_load(const PickleNode& pid) override {
    // ('storage', torch.<Type>Storage, key, location, numel)
    const auto& p = pid.items;
    if (pid.kind != PickleNode::Kind::Tuple || p.size() != 5 || p[0]->leaf.kind() != Value::Kind::String ||
        p[0]->leaf.to_string() != "storage" || p[1]->kind != PickleNode::Kind::Global ||
        p[2]->leaf.kind() != Value::Kind::String || p[3]->leaf.kind() != Value::Kind::String ||
        p[4]->leaf.kind() != Value::Kind::Int)
      fail(context(), ": malformed persistent id in data.pkl (expected ('storage', type, key, location, numel))");
    const std::optional<Dtype> dtype = internal::storage_dtype(p[1]->name);
    if (p[1]->module != "torch" || !dtype)
      fail(context(), ": a storage of unknown type ", p[1]->module, ".", p[1]->name);
    const std::string& key = p[2]->leaf.to_string();
    const int64_t numel = p[4]->leaf.to_int();
    auto it = storages_.find(key);
    if (it == storages_.end())
      it = storages_.emplace(key, load_storage(key, *dtype, numel, p[3]->leaf.to_string())).first;
    if (it->second.dtype != *dtype)
      fail(context(), ": storage ", key, " is read as both ", dtype_name(it->second.dtype), " and ", dtype_name(*dtype),
           ", which ember does not support");
    auto node = PickleNode::make(PickleNode::Kind::Opaque);
    node->module = "torch";
    node->name = p[1]->name;
    node->leaf = Value(key);  // rebuild_tensor finds the storage by its key
    return node;
  }

  const std::string& context() const { return zip_.context(); }

 private:
  static PickleNodePtr global(const std::string& module, const std::string& name) {
    auto n = PickleNode::make(PickleNode::Kind::Global);
    n->module = module;
    n->name = name;
    return n;
  }

  [[noreturn]] void refuse(const std::string& module, const std::string& name) const {
    const std::string full = module + "." + name;
    if (module == "numpy" || module.starts_with("numpy."))
      fail(context(), ": the file holds a NumPy value (", full,
           "); ember reads tensors: convert it with torch.from_numpy(...) or torch.tensor(...) before torch.save");
    if (module.starts_with("torch.nn.modules") || module == "__main__" || module.starts_with("torch.nn."))
      fail(context(), ": the file holds a pickled object of class ", full,
           " (torch.save(model) pickles the whole module, code and all); save model.state_dict() instead and "
           "load it with io::to_state_dict");
    if (module == "torch.optim" || module.starts_with("torch.optim."))
      fail(context(), ": the file holds a pickled ", full, " object; save optimizer.state_dict() instead");
    fail(context(), ": the file holds an object of class ", full,
         ", which ember does not read (ember reads what torch.load(weights_only=True) reads: None, bool, int, float, "
         "str, bytes, list, tuple, dict, OrderedDict, tensors, dtypes and devices; nothing from the file runs)");
  }

  static bool is_empty_state(const PickleNode& s) {
    if (s.kind == PickleNode::Kind::Leaf) return s.leaf.is_none();
    if (s.kind == PickleNode::Kind::Dict) return s.keys.empty();
    if (s.kind == PickleNode::Kind::Tuple)
      return std::all_of(s.items.begin(), s.items.end(), [](const PickleNodePtr& x) { return is_empty_state(*x); });
    return false;
  }

  std::string latin1_bytes(const std::string& utf8) const {
    std::string out;
    for (size_t i = 0; i < utf8.size(); ++i) {
      const auto c = static_cast<unsigned char>(utf8[i]);
      if (c < 0x80) {
        out += static_cast<char>(c);
      } else if ((c == 0xc2 || c == 0xc3) && i + 1 < utf8.size()) {
        out += static_cast<char>(((c & 0x1f) << 6) | (static_cast<unsigned char>(utf8[++i]) & 0x3f));
      } else {
        fail(context(), ": _codecs.encode(..., 'latin1') of text outside latin-1");
      }
    }
    return out;
  }

  bool bool_arg(const PickleNode& flag, const char* what) const {
    if (flag.kind != PickleNode::Kind::Leaf || flag.leaf.kind() != Value::Kind::Bool)
      fail(context(), ": ", what, " must be a bool");
    return flag.leaf.to_bool();
  }

  void set_requires_grad(Tensor& t, bool requires_grad) const {
    if (!requires_grad) return;
    if (!is_floating_point(t.dtype()))
      fail(context(), ": a ", dtype_name(t.dtype()),
           " tensor is marked requires_grad; only floating-point tensors can be");
    t.requires_grad_(true);
  }

  Device target_device(const std::string& location) const {
    if (options_.map_location) return *options_.map_location;
    Device saved;
    try {
      saved = Device(location);
    } catch (const Error&) {
      fail(context(), ": a storage was saved on the unknown device '", location, "'");
    }
    if (saved.is_cuda()) {
      if (!cuda::is_available())
        fail(context(),
             ": attempting to deserialize object on a CUDA device but ember::cuda::is_available() is false (",
             cuda::unavailable_reason(), "). If you are running on a CPU-only machine, pass TorchLoadOptions{",
             ".map_location = ember::Device(\"cpu\")} to map the storages to the CPU");
      const int index = saved.has_index() ? saved.index() : 0;
      if (index >= cuda::device_count())
        fail(context(), ": attempting to deserialize object on CUDA device ", index,
             " but ember::cuda::device_count() is ", cuda::device_count(),
             ". Pass TorchLoadOptions::map_location to map the storages to an existing device");
    }
    return saved;
  }

  LoadedStorage load_storage(const std::string& key, Dtype dtype, int64_t numel, const std::string& location) const {
    const std::string record = prefix_ + "data/" + key;
    const internal::ZipEntry* entry = zip_.find(record);
    if (!entry) fail(context(), ": data.pkl refers to storage '", key, "' but the archive has no record ", record);
    const auto item = static_cast<int64_t>(element_size(dtype));
    if (numel < 0 || numel > std::numeric_limits<int64_t>::max() / item ||
        static_cast<uint64_t>(numel * item) != entry->size)
      fail(context(), ": storage '", key, "' should hold ", numel, " ", dtype_name(dtype),
           " elements but its record has ", entry->size, " bytes");
    const Device device = target_device(location);
    if (mapped_ && device.is_cpu() && entry->method == 0 && !(big_endian_ && item > 1)) {
      const uint64_t offset = zip_.data_offset(*entry);
      if (offset % static_cast<uint64_t>(item) == 0)
        return {dtype, ember::detail::make_tensor_over(
                           std::make_shared<ember::detail::Storage>(mapped_->data() + offset, entry->size, mapped_),
                           Dims{numel}, Dims{1}, 0, dtype)};
    }
    Tensor data = empty({numel}, TensorOptions(dtype));
    zip_.read(*entry, data.data_ptr());
    if (big_endian_ && item > 1) {
      auto* bytes = static_cast<uint8_t*>(data.data_ptr());
      for (int64_t i = 0; i < numel; ++i) std::reverse(bytes + i * item, bytes + (i + 1) * item);
    }
    if (!device.is_cpu()) {
      try {
        data = data.to(device);
      } catch (const Error& e) {
        fail(context(), ": cannot put storage '", key, "' (saved on ", location, ") on ", device.str(), ": ", e.what(),
             options_.map_location
                 ? ""
                 : ". Pass TorchLoadOptions{.map_location = ember::Device(\"cpu\")} to load it on the CPU");
      }
    }
    return {dtype, std::move(data)};
  }

  Tensor rebuild_tensor(const PickleNode& storage, const PickleNode& offset, const PickleNode& size,
                        const PickleNode& stride) const {
    if (storage.kind != PickleNode::Kind::Opaque) fail(context(), ": a tensor's storage is not a storage");
    const LoadedStorage& s = storages_.at(storage.leaf.to_string());
    auto ints = [&](const PickleNode& t, const char* what) {
      if (t.kind != PickleNode::Kind::Tuple) fail(context(), ": a tensor's ", what, " is not a tuple");
      std::vector<int64_t> out;
      for (const PickleNodePtr& x : t.items) {
        if (x->kind != PickleNode::Kind::Leaf || x->leaf.kind() != Value::Kind::Int)
          fail(context(), ": a tensor's ", what, " holds a non-integer");
        if (x->leaf.to_int() < 0)
          fail(context(), ": a tensor's ", what, " holds the negative value ", x->leaf.to_int());
        out.push_back(x->leaf.to_int());
      }
      return out;
    };
    const std::vector<int64_t> sizes = ints(size, "size"), strides = ints(stride, "stride");
    if (sizes.size() != strides.size())
      fail(context(), ": a tensor has ", sizes.size(), " sizes but ", strides.size(), " strides");
    if (offset.kind != PickleNode::Kind::Leaf || offset.leaf.kind() != Value::Kind::Int || offset.leaf.to_int() < 0)
      fail(context(), ": a tensor's storage offset is not a non-negative integer");
    const int64_t off = offset.leaf.to_int();
    // The elements it reaches must lie inside the storage.
    int64_t numel = 1, last = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (__builtin_mul_overflow(numel, sizes[i], &numel)) fail(context(), ": a tensor's size overflows 64 bits");
      int64_t reach = 0;
      if (sizes[i] > 0 &&
          (__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach) || __builtin_add_overflow(last, reach, &last)))
        fail(context(), ": a tensor's strides overflow 64 bits");
    }
    const int64_t storage_numel = s.data.numel();
    if (numel > 0 && (off > storage_numel || last >= storage_numel - off))
      fail(context(), ": a tensor of size ", shape_text(sizes), " with strides ", shape_text(strides), " at offset ",
           off, " reaches past its storage of ", storage_numel, " elements");
    return ember::detail::make_tensor_over(s.data.impl().storage, IntList(sizes), IntList(strides), off, s.dtype);
  }

  static std::string shape_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += concat(i ? ", " : "", v[i]);
    return s + "]";
  }

  const internal::ZipReader& zip_;
  std::string prefix_;
  bool big_endian_;
  const TorchLoadOptions& options_;
  std::shared_ptr<internal::MappedFile> mapped_;  // with TorchLoadOptions::mmap
  std::unordered_map<std::string, LoadedStorage> storages_;
};

Value load_archive(const internal::ZipReader& zip, const TorchLoadOptions& options,
                   std::shared_ptr<internal::MappedFile> mapped = nullptr) {
  const std::string& context = zip.context();
  // Every record sits under one folder (the archive's name); data.pkl names it.
  for (const internal::ZipEntry& e : zip.entries())
    if (e.name.ends_with("/constants.pkl") || e.name.find("/code/") != std::string::npos)
      fail(context,
           ": this is a TorchScript archive (torch.jit.save), not a torch.save file; ember reads torch.save "
           "files: in Python, torch.save(torch.jit.load(path).state_dict(), 'weights.pt')");
  const internal::ZipEntry* pickle = nullptr;
  for (const internal::ZipEntry& e : zip.entries()) {
    const size_t slash = e.name.find('/');
    if (slash != std::string::npos && e.name.substr(slash + 1) == "data.pkl") {
      pickle = &e;
      break;
    }
  }
  if (!pickle) {
    if (zip.entries().size() > 0 &&
        std::all_of(zip.entries().begin(), zip.entries().end(), [](const auto& e) { return e.name.ends_with(".npy"); }))
      fail(context, ": this is a NumPy .npz archive, not a torch.save file; read it with io::load_npz");
    fail(context, ": a ZIP archive without data.pkl: not a file written by torch.save");
  }
  const std::string prefix = pickle->name.substr(0, pickle->name.size() - std::string_view("data.pkl").size());

  bool big_endian = false;
  if (const internal::ZipEntry* order = zip.find(prefix + "byteorder")) {
    const std::vector<uint8_t> b = zip.read_bytes(*order, 16);
    const std::string text(b.begin(), b.end());
    if (text == "big")
      big_endian = true;
    else if (text != "little")
      fail(context, ": unknown byte order '", text, "' in the archive's byteorder record");
  }
  const std::vector<uint8_t> pkl = zip.read_bytes(*pickle, kMaxPickleBytes);
  TorchUnpicklePolicy policy(zip, prefix, big_endian, options, std::move(mapped));
  internal::PickleGraph graph;
  internal::unpickle(pkl, policy, context, graph);
  return internal::to_value(graph.root, context, std::max<size_t>(size_t{1} << 20, pkl.size() * 4));
}

// Files that are not ZIP archives get a message saying what they are instead.
void check_is_zip(std::span<const uint8_t> head, const std::string& context) {
  if (head.size() < 4 || internal::ZipReader::looks_like_zip(head.first(4))) return;  // the reader says the rest
  // The pre-1.6 format is a sequence of pickles starting with a magic number as a LONG1.
  if (head[0] == 0x80 && head[1] <= 5)
    fail(context,
         ": this file uses torch.save's legacy format (PyTorch before 1.6, or "
         "_use_new_zipfile_serialization=False), which ember does not read; re-save it with a recent PyTorch: "
         "torch.save(torch.load(path), path)");
  fail(context, ": not a torch.save file (it is not a ZIP archive)");
}

}  // namespace

Value torch_load(const std::filesystem::path& path, const TorchLoadOptions& options) {
  const std::string context = concat("torch_load('", path.string(), "')");
  check_is_zip(internal::read_head(path, 4, context), context);
  if (options.mmap) {
    // The archive's directory and the pickle are read through the mapping too.
    std::shared_ptr<internal::MappedFile> mapped = internal::MappedFile::open(path, context);
    const auto bytes = std::span<const uint8_t>(mapped->data(), mapped->size());
    return load_archive(internal::ZipReader::from_bytes(bytes, context), options, std::move(mapped));
  }
  return load_archive(internal::ZipReader::open(path, context), options);
}

Value torch_load_from_bytes(std::span<const uint8_t> bytes, std::string_view source, const TorchLoadOptions& options) {
  const std::string context = concat("torch_load_from_bytes(", source, ")");
  if (options.mmap)
    fail(context, ": TorchLoadOptions::mmap maps a file; bytes already in memory have nothing to map (use torch_load)");
  check_is_zip(bytes, context);
  return load_archive(internal::ZipReader::from_bytes(bytes, context), options);
}

}  // namespace ember::io
