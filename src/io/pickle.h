#pragma once
// Python's pickle format, the part torch.save uses: an unpickler that builds a graph of plain
// values and lets its caller decide what each global, REDUCE and persistent id may produce (no
// code from the file runs), and a pickler that writes protocol 2 as CPython's pickler does for
// the same values. Internal to ember (src/io).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ember/io/pytorch.h"

namespace ember::io::internal {

// A node of the unpickled graph. Containers are shared (Python objects are references: the memo
// hands out the same list again, and APPENDS after BINPUT must show through it); Value, which
// holds everything by value, is built from the finished graph.
struct PickleNode;
using PickleNodePtr = std::shared_ptr<PickleNode>;

struct PickleNode {
  enum class Kind : uint8_t {
    Leaf,    // None, bool, int, float, str, bytes, Tensor, dtype, device: in `leaf`
    List,    // `items`
    Tuple,   // `items`
    Dict,    // `keys` and `items`, in order; `ordered` for an OrderedDict
    Global,  // a class or function named `module`.`name`, allowed by the caller
    Opaque,  // something the caller made (a storage): `handle`
  };
  Kind kind = Kind::Leaf;
  Value leaf;
  std::vector<PickleNodePtr> items;
  std::vector<PickleNodePtr> keys;
  bool ordered = false;
  std::string module, name;
  int64_t handle = -1;

  static PickleNodePtr make_leaf(Value v);
  static PickleNodePtr make(Kind kind);
  /// "collections.OrderedDict", "list", "int", ...: for messages.
  std::string describe() const;
};

/// What an unpickler may build; everything not granted here fails with the caller's message.
class UnpicklePolicy {
 public:
  virtual ~UnpicklePolicy() = default;
  /// GLOBAL / STACK_GLOBAL: a Global node for an allowed name, or throws.
  virtual PickleNodePtr find_class(const std::string& module, const std::string& name) = 0;
  /// REDUCE and NEWOBJ: `callable` (a Global node this policy returned) applied to `args` (a tuple).
  virtual PickleNodePtr call(const PickleNode& callable, const PickleNode& args) = 0;
  /// BUILD: sets `state` on `object`; most objects accept no state.
  virtual void build(PickleNode& object, const PickleNode& state) = 0;
  /// BINPERSID: the object a persistent id stands for.
  virtual PickleNodePtr persistent_load(const PickleNode& pid) = 0;
};

/// An unpickled graph. Containers may refer to each other in cycles (`l = []; l.append(l)`), which
/// shared_ptr alone would never free; the graph keeps every container it saw and empties them all
/// when it goes away.
class PickleGraph {
 public:
  PickleGraph() = default;
  PickleGraph(const PickleGraph&) = delete;
  PickleGraph& operator=(const PickleGraph&) = delete;
  ~PickleGraph();

  PickleNodePtr root;
  std::vector<PickleNodePtr> containers;
};

/// Runs the pickle in `data` into `graph` (its root object). `context` starts every error message.
/// Limits against hostile input: lengths are checked against the data left, the memo and the
/// stack are bounded by the data's size, and the result's nesting is limited.
void unpickle(std::span<const uint8_t> data, UnpicklePolicy& policy, const std::string& context, PickleGraph& graph);

/// Converts a finished graph to a Value. Shared sub-objects are copied (tensors stay shared);
/// a cycle or a graph that would expand past `max_nodes` copies is an error.
Value to_value(const PickleNodePtr& root, const std::string& context, size_t max_nodes);

/// Protocol 2 output as CPython's pickler writes it: memo entries for strings, tuples, lists,
/// dicts, globals and REDUCE results, SETITEMS/APPENDS in batches of 1000.
class Pickler {
 public:
  /// A persistent id's fields for a tensor's storage, filled in by the caller.
  struct StorageRef {
    std::string storage_type;  // "FloatStorage", ...
    std::string key;           // the record's name under data/
    std::string location;      // "cpu", "cuda:0"
    int64_t numel = 0;
  };
  /// Called for each tensor: its storage's persistent id.
  using StorageFn = StorageRef (*)(void* self, const Tensor& t);

  Pickler(StorageFn storage_fn, void* self) : storage_fn_(storage_fn), self_(self) {}

  /// Pickles `value` (PROTO 2 ... STOP).
  std::vector<uint8_t> dump(const Value& value);

 private:
  void save(const Value& v, int depth);
  void save_tensor(const Tensor& t);
  void save_str(std::string_view s, bool memoize_by_content = false);
  void save_int(int64_t v);
  void save_global(std::string_view module, std::string_view name);
  void begin_tuple(size_t n);
  void end_tuple(size_t n);
  void save_int_tuple(IntList ints);
  void memoize(const void* identity = nullptr, std::string key = {});
  void put_opcode(uint8_t op) { out_.push_back(op); }
  void put_bytes(const void* p, size_t n);

  StorageFn storage_fn_;
  void* self_;
  std::vector<uint8_t> out_;
  uint32_t memo_next_ = 0;
  std::unordered_map<std::string, uint32_t> memo_by_name_;    // globals and constant strings
  std::unordered_map<const void*, uint32_t> memo_by_object_;  // tensors saved twice
};

}  // namespace ember::io::internal
