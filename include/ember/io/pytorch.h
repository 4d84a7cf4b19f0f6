#pragma once
/// PyTorch's own file format: what `torch.save` writes and `torch.load` reads (`.pt`, `.pth`,
/// `.bin`), in both directions, without Python and without running code from the file.
///
///   // A checkpoint written in Python by torch.save({"model": model.state_dict(),
///   //                                              "optimizer": opt.state_dict(), "epoch": 3}, path)
///   io::Value ckpt = io::torch_load("ckpt.pt");
///   model->load_state_dict(io::to_state_dict(ckpt["model"]));
///   io::load_optimizer_state(optimizer, ckpt["optimizer"]);
///   int64_t epoch = ckpt["epoch"].to_int();
///
///   // and back: torch.load(path) in Python gives the same dict
///   io::torch_save("ckpt.pt", io::Value::dict({{"model", io::to_value(model->state_dict())},
///                                              {"optimizer", io::optimizer_state(optimizer)},
///                                              {"epoch", epoch}}));
///
/// The format is a ZIP archive holding a pickle (`data.pkl`) and one record per tensor storage.
/// ember reads the pickle with an allow-list, as `torch.load(weights_only=True)` (PyTorch's
/// default since 2.6) does: None, booleans, integers, floats, strings, bytes, lists, tuples, dicts
/// and OrderedDicts, tensors and parameters, dtypes and devices. Anything else (a whole pickled
/// module, a NumPy array, a custom class) is refused with an error that names the class, and no
/// code from the file ever runs. Tensors that shared a storage in Python share one in ember (views
/// stay views), and ember saves shared storages once, as torch.save does.
///
/// Not read: the pre-1.6 format (`_use_new_zipfile_serialization=False`), TorchScript archives
/// (`torch.jit.save`), tensor subclasses with Python state, sparse and quantized tensors, and
/// dtypes ember lacks (complex, float8, uint16-64); each gets its own message.
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/nn/module.h"
#include "ember/optim/optimizer.h"
#include "ember/tensor.h"

namespace ember::io {

/// A Python value as torch.save and torch.load handle it. Containers hold their elements by
/// value; a dict keeps insertion order (as Python's dict and OrderedDict do) and its keys may be
/// any hashable value (strings in a state_dict, integers in an optimizer's "state").
class Value {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float, String, Bytes, Tensor, Dtype, Device, List, Tuple, Dict };
  using Items = std::vector<Value>;
  using DictItems = std::vector<std::pair<Value, Value>>;

  Value() = default;                                                    // None
  Value(bool v) : kind_(Kind::Bool), bool_(v) {}                        // NOLINT: implicit
  Value(int v) : kind_(Kind::Int), int_(v) {}                           // NOLINT
  Value(int64_t v) : kind_(Kind::Int), int_(v) {}                       // NOLINT
  Value(double v) : kind_(Kind::Float), float_(v) {}                    // NOLINT
  Value(std::string v) : kind_(Kind::String), string_(std::move(v)) {}  // NOLINT
  Value(std::string_view v) : Value(std::string(v)) {}                  // NOLINT
  Value(const char* v);                                                 // NOLINT
  Value(Tensor v);                                                      // NOLINT
  Value(Dtype v) : kind_(Kind::Dtype), dtype_(v) {}                     // NOLINT
  Value(Device v) : kind_(Kind::Device), device_(v) {}                  // NOLINT

  static Value bytes(std::string data);
  static Value list(Items items = {});
  static Value tuple(Items items = {});
  /// A dict (saved as Python's dict); keys must be unique.
  static Value dict(DictItems items = {});
  static Value dict(std::initializer_list<std::pair<std::string, Value>> items);
  /// A collections.OrderedDict, as state_dict() returns; otherwise like dict().
  static Value ordered_dict(DictItems items = {});

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  bool is_dict() const { return kind_ == Kind::Dict; }
  /// For a dict: whether it was an OrderedDict.
  bool is_ordered_dict() const { return kind_ == Kind::Dict && ordered_; }

  // Accessors throw ember::Error naming the expected and the actual kind.
  bool to_bool() const;
  int64_t to_int() const;
  /// A float, or an int converted (as Python's float() would).
  double to_double() const;
  /// A string (for Kind::String) or the raw bytes (for Kind::Bytes).
  const std::string& to_string() const;
  const Tensor& to_tensor() const;
  Dtype to_dtype() const;
  Device to_device() const;
  /// The elements of a list or a tuple.
  const Items& items() const;
  Items& items();
  /// The entries of a dict, in order.
  const DictItems& dict_items() const;
  DictItems& dict_items();

  /// Elements of a list or tuple, entries of a dict, characters of a string or bytes.
  size_t size() const;
  /// Dict lookup by string or integer key; throws ember::Error listing the keys there are.
  bool contains(const Value& key) const;
  const Value& operator[](const Value& key) const;
  const Value& operator[](const char* key) const { return (*this)[Value(key)]; }
  // Integer keys (an optimizer's "state" is keyed by parameter index); `v[0]` must not take the
  // const char* overload.
  const Value& operator[](int key) const { return (*this)[Value(key)]; }
  const Value& operator[](int64_t key) const { return (*this)[Value(key)]; }
  /// Inserts `key` or replaces its value, keeping its position.
  void set(Value key, Value value);

  /// Python's kind name ("dict", "int", "Tensor", ...), for messages.
  std::string_view type_name() const;
  /// A short Python-like rendering ({'epoch': 3, 'model': OrderedDict(...)}), tensors as
  /// tensor(float32, [2, 3]): for messages and debugging, not Python's repr.
  std::string summary(size_t max_chars = 200) const;

  /// Same kind and value; tensors are equal when they are the same tensor object (use
  /// ember::equal for contents). Int 1 and float 1.0 are different values here.
  friend bool operator==(const Value& a, const Value& b);

 private:
  /// The value under `key` in this dict, or nullptr.
  const Value* find(const Value& key) const;

  Kind kind_ = Kind::None;
  bool ordered_ = false;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::string string_;
  Tensor tensor_;
  Dtype dtype_ = kFloat32;
  Device device_;
  Items items_;
  DictItems dict_;
};

struct TorchLoadOptions {
  /// Where tensors go; by default the device each was saved from (as torch.load without
  /// map_location). A file saved from "cuda:1" on a machine without that GPU fails with
  /// PyTorch's advice to pass map_location.
  std::optional<Device> map_location;
  /// Maps the file instead of reading it, as torch.load(mmap=True): the load reads no tensor
  /// data, CPU tensors read their pages of the file on first use (so several processes share
  /// one copy in the page cache), and writes to them go to private copies that never reach the
  /// file. Records are then not CRC-checked (PyTorch checks none). Records that cannot be mapped
  /// (deflated, big-endian, misaligned for their dtype) and tensors bound for another device are
  /// read as without it. torch_load only: torch_load_from_bytes refuses it.
  bool mmap = false;
};

/// Reads a file written by torch.save. Malformed, truncated and disallowed contents are an
/// ember::Error naming the file and the problem.
Value torch_load(const std::filesystem::path& path, const TorchLoadOptions& options = {});
/// Reads torch.save's bytes already in memory; `source` names them in error messages.
Value torch_load_from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>",
                            const TorchLoadOptions& options = {});

/// Writes `value` as torch.save(value, path) does (format version 3, pickle protocol 2, records
/// aligned to 64 bytes), atomically: a failed or interrupted save leaves any earlier file intact.
/// Tensors may be on any device and in any layout; torch.load puts them back on that device.
/// The archive's folder is the file's stem, as in PyTorch.
void torch_save(const std::filesystem::path& path, const Value& value);
/// The bytes torch_save writes; `archive_name` is the archive's folder.
std::vector<uint8_t> torch_save_to_bytes(const Value& value, std::string_view archive_name = "archive");

/// A state_dict as torch's Module.state_dict() returns it: an OrderedDict of name -> tensor.
Value to_value(const nn::StateDict& state);
/// The state_dict in `value`: a dict or OrderedDict whose keys are strings and values tensors.
/// A checkpoint dict whose tensors sit one level down ({"model": {...}, "epoch": 3}) gets an
/// error listing its keys.
nn::StateDict to_state_dict(const Value& value);

/// The optimizer's state as torch.optim's Optimizer.state_dict() lays it out ({"state": {index:
/// {name: tensor}}, "param_groups": [{"lr": ..., "betas": (...), ..., "params": [indices]}]}), so
/// that PyTorch's optimizer.load_state_dict takes it. The keys PyTorch has and ember does not
/// ("foreach", "fused", "capturable", "differentiable") get PyTorch's defaults.
Value optimizer_state(const optim::Optimizer& optimizer);
/// Loads PyTorch's optimizer state_dict layout into `optimizer` (same group structure; the
/// hyper-parameters ember does not have must hold PyTorch's defaults, or this throws naming them).
void load_optimizer_state(optim::Optimizer& optimizer, const Value& state);

}  // namespace ember::io
