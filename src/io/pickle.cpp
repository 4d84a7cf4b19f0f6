// The pickle virtual machine for torch.load (a restricted unpickler: the policy decides what
// globals exist) and CPython's protocol-2 output for torch.save. Opcode meanings follow
// CPython's Lib/pickle.py and Lib/pickletools.py.
#include "io/pickle.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/check.h"
#include "io/pytorch_format.h"

namespace ember::io::internal {

using ember::detail::concat;
using ember::detail::fail;

PickleNodePtr PickleNode::make_leaf(Value v) {
  auto n = std::make_shared<PickleNode>();
  n->leaf = std::move(v);
  return n;
}

PickleNodePtr PickleNode::make(Kind kind) {
  auto n = std::make_shared<PickleNode>();
  n->kind = kind;
  return n;
}

std::string PickleNode::describe() const {
  switch (kind) {
    case Kind::Leaf:
      return std::string(leaf.type_name());
    case Kind::List:
      return "list";
    case Kind::Tuple:
      return "tuple";
    case Kind::Dict:
      return ordered ? "collections.OrderedDict" : "dict";
    case Kind::Global:
      return concat("the class or function ", module, ".", name);
    case Kind::Opaque:
      return concat(module, ".", name);
  }
  return "object";
}

namespace {

// A dict key's identity, for the leaf kinds (Python's 1, 1.0 and True share a slot).
std::optional<std::string> key_signature(const PickleNode& k) {
  if (k.kind != PickleNode::Kind::Leaf) return std::nullopt;
  return dict_key_identity(k.leaf);
}

class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> data, UnpicklePolicy& policy, const std::string& context,
            std::vector<PickleNodePtr>& containers)
      : data_(data), policy_(policy), context_(context), containers_(containers) {}

  PickleNodePtr run() {
    while (true) {
      if (pos_ >= data_.size()) fail(context_, ": the pickle ends without a STOP opcode (truncated data.pkl?)");
      op_at_ = pos_;
      const uint8_t op = data_[pos_++];
      switch (op) {
        case 0x80: {  // PROTO
          const uint8_t proto = byte();
          if (proto > 5) bad(concat("pickle protocol ", int{proto}, " is newer than any Python writes (at most 5)"));
          break;
        }
        case 0x95:
          take(8);
          break;     // FRAME: a length hint only
        case '.': {  // STOP
          PickleNodePtr result = pop();
          return result;
        }
        case '(':
          marks_.push_back(stack_.size());
          break;
        case '0':  // POP
          if (!marks_.empty() && marks_.back() == stack_.size())
            marks_.pop_back();
          else
            pop();
          break;
        case '1':
          pop_mark();
          break;  // POP_MARK
        case '2':
          push(top());
          break;  // DUP
        case 'N':
          push_leaf(Value());
          break;
        case 0x88:
          push_leaf(Value(true));
          break;
        case 0x89:
          push_leaf(Value(false));
          break;
        case 'I': {  // INT, text (protocol 0); "01" and "00" are True and False
          const std::string line = read_line();
          if (line == "01" || line == "00")
            push_leaf(Value(line == "01"));
          else
            push_leaf(Value(parse_int(line)));
          break;
        }
        case 'L': {  // LONG, text
          std::string line = read_line();
          if (!line.empty() && line.back() == 'L') line.pop_back();
          push_leaf(Value(parse_int(line)));
          break;
        }
        case 'F': {  // FLOAT, text
          const std::string line = read_line();
          char* end = nullptr;
          const double d = std::strtod(line.c_str(), &end);
          if (line.empty() || end != line.c_str() + line.size()) bad("malformed FLOAT");
          push_leaf(Value(d));
          break;
        }
        case 'J':
          push_leaf(Value(int64_t{static_cast<int32_t>(le(4))}));
          break;  // BININT
        case 'K':
          push_leaf(Value(static_cast<int64_t>(byte())));
          break;  // BININT1
        case 'M':
          push_leaf(Value(static_cast<int64_t>(le(2))));
          break;  // BININT2
        case 0x8a:
          push_leaf(Value(read_long(byte())));
          break;  // LONG1
        case 0x8b:
          push_leaf(Value(read_long(le(4))));
          break;     // LONG4
        case 'G': {  // BINFLOAT, big-endian
          const uint8_t* p = take(8);
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
          push_leaf(Value(std::bit_cast<double>(bits)));
          break;
        }
        case 'X':
          push_leaf(Value(read_text(le(4))));
          break;  // BINUNICODE
        case 0x8c:
          push_leaf(Value(read_text(byte())));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push_leaf(Value(read_text(le(8))));
          break;  // BINUNICODE8
        case 'T':
          push_leaf(Value(read_string(le(4))));
          break;  // BINSTRING (Python 2 str)
        case 'U':
          push_leaf(Value(read_string(byte())));
          break;  // SHORT_BINSTRING
        case 'B':
          push_leaf(Value::bytes(read_string(le(4))));
          break;  // BINBYTES
        case 'C':
          push_leaf(Value::bytes(read_string(byte())));
          break;    // SHORT_BINBYTES
        case 0x8e:  // BINBYTES8
        case 0x96:
          push_leaf(Value::bytes(read_string(le(8))));
          break;  // BYTEARRAY8
        case ')':
          push(PickleNode::make(PickleNode::Kind::Tuple));
          break;
        case 't':
          push_tuple(pop_mark());
          break;
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          const size_t n = op - 0x84u;
          if (stack_size_above_mark() < n) bad("TUPLE needs more items than the stack holds");
          std::vector<PickleNodePtr> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
          stack_.resize(stack_.size() - n);
          push_tuple(std::move(items));
          break;
        }
        case ']':
          push(PickleNode::make(PickleNode::Kind::List));
          break;
        case 'l': {  // LIST
          auto list = PickleNode::make(PickleNode::Kind::List);
          list->items = pop_mark();
          push(list);
          break;
        }
        case 'a': {  // APPEND
          PickleNodePtr item = pop();
          append(top(), {item});
          break;
        }
        case 'e': {  // APPENDS
          std::vector<PickleNodePtr> items = pop_mark();
          append(top(), items);
          break;
        }
        case '}':
          push(PickleNode::make(PickleNode::Kind::Dict));
          break;
        case 'd': {  // DICT
          auto dict = PickleNode::make(PickleNode::Kind::Dict);
          set_items(*dict, pop_mark());
          push(dict);
          break;
        }
        case 's': {  // SETITEM
          PickleNodePtr value = pop();
          PickleNodePtr key = pop();
          set_items(*top(), {key, value});
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<PickleNodePtr> kv = pop_mark();
          set_items(*top(), kv);
          break;
        }
        case 'c': {  // GLOBAL
          const std::string module = read_line();
          const std::string name = read_line();
          push(policy_.find_class(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PickleNodePtr name = pop(), module = pop();
          if (!is_string(*name) || !is_string(*module)) bad("STACK_GLOBAL needs two strings");
          push(policy_.find_class(module->leaf.to_string(), name->leaf.to_string()));
          break;
        }
        case 'R':     // REDUCE
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args), the same for the classes allowed here
          PickleNodePtr args = pop(), callable = pop();
          if (callable->kind != PickleNode::Kind::Global)
            bad(concat("REDUCE calls ", callable->describe(), ", which is not a class or function"));
          if (args->kind != PickleNode::Kind::Tuple) bad("REDUCE needs a tuple of arguments");
          push(policy_.call(*callable, *args));
          break;
        }
        case 0x92: {  // NEWOBJ_EX
          PickleNodePtr kwargs = pop(), args = pop(), cls = pop();
          if (cls->kind != PickleNode::Kind::Global || args->kind != PickleNode::Kind::Tuple ||
              kwargs->kind != PickleNode::Kind::Dict || !kwargs->keys.empty())
            bad("NEWOBJ_EX with keyword arguments is not supported");
          push(policy_.call(*cls, *args));
          break;
        }
        case 'b': {  // BUILD
          PickleNodePtr state = pop();
          policy_.build(*top(), *state);
          break;
        }
        case 'Q': {  // BINPERSID
          PickleNodePtr pid = pop();
          push(policy_.persistent_load(*pid));
          break;
        }
        case 'h':
          push(memo_get(byte()));
          break;  // BINGET
        case 'j':
          push(memo_get(le(4)));
          break;  // LONG_BINGET
        case 'g':
          push(memo_get(parse_memo_index(read_line())));
          break;  // GET
        case 'q':
          memo_put(byte());
          break;  // BINPUT
        case 'r':
          memo_put(le(4));
          break;  // LONG_BINPUT
        case 'p':
          memo_put(parse_memo_index(read_line()));
          break;  // PUT
        case 0x94:
          memo_put(memo_.size());
          break;  // MEMOIZE
        case 0x8f:
        case 0x90:
        case 0x91:
          bad("a Python set or frozenset; ember reads None, numbers, strings, bytes, lists, tuples, dicts and tensors");
        case 0x97:
        case 0x98:
          bad("out-of-band buffers (pickle protocol 5) are not supported");
        case 0x82:
        case 0x83:
        case 0x84:
          bad("the copyreg extension registry (EXT opcodes) is not supported");
        default:
          bad(concat("unsupported pickle opcode 0x", hex(op)));
      }
    }
  }

 private:
  [[noreturn]] void bad(const std::string& what) const { fail(context_, ": data.pkl at byte ", op_at_, ": ", what); }
  static std::string hex(uint8_t b) {
    static constexpr char kHex[] = "0123456789abcdef";
    return {kHex[b >> 4], kHex[b & 15]};
  }

  const uint8_t* take(uint64_t n) {
    if (n > data_.size() - pos_)
      bad(concat("an opcode needs ", n, " bytes but the pickle has ", data_.size() - pos_, " left"));
    const uint8_t* p = data_.data() + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  uint8_t byte() { return *take(1); }
  uint64_t le(int n) {
    const uint8_t* p = take(static_cast<uint64_t>(n));
    uint64_t v = 0;
    for (int i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  std::string read_string(uint64_t n) {
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
  }
  // A str: UTF-8 as Python decodes it (errors="surrogatepass": encoded surrogates pass).
  std::string read_text(uint64_t n) {
    std::string s = read_string(n);
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    for (size_t i = 0; i < s.size();) {
      const unsigned char c = p[i];
      size_t len = 0;
      uint32_t min = 0, cp = 0;
      if (c < 0x80) {
        ++i;
        continue;
      } else if ((c & 0xe0) == 0xc0) {
        len = 2, min = 0x80, cp = c & 0x1f;
      } else if ((c & 0xf0) == 0xe0) {
        len = 3, min = 0x800, cp = c & 0x0f;
      } else if ((c & 0xf8) == 0xf0) {
        len = 4, min = 0x10000, cp = c & 0x07;
      } else {
        bad("a string is not valid UTF-8");
      }
      if (i + len > s.size()) bad("a string is not valid UTF-8 (it ends inside a character)");
      for (size_t k = 1; k < len; ++k) {
        if ((p[i + k] & 0xc0) != 0x80) bad("a string is not valid UTF-8");
        cp = (cp << 6) | (p[i + k] & 0x3f);
      }
      if (cp < min || cp > 0x10ffff) bad("a string is not valid UTF-8 (overlong or out of range)");
      i += len;
    }
    return s;
  }
  std::string read_line() {
    const auto* begin = data_.data() + pos_;
    const auto* end = std::find(begin, data_.data() + data_.size(), uint8_t{'\n'});
    if (end == data_.data() + data_.size()) bad("a text argument has no end of line");
    pos_ += static_cast<size_t>(end - begin) + 1;
    return std::string(reinterpret_cast<const char*>(begin), static_cast<size_t>(end - begin));
  }
  int64_t parse_int(const std::string& text) const {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size()) bad("malformed INT");
    if (errno == ERANGE) bad(concat("the integer ", text, " does not fit in 64 bits"));
    return v;
  }
  uint64_t parse_memo_index(const std::string& text) const {
    const int64_t v = parse_int(text);
    if (v < 0) bad("negative memo index");
    return static_cast<uint64_t>(v);
  }
  // LONG1/LONG4: little-endian two's complement of n bytes.
  int64_t read_long(uint64_t n) {
    const uint8_t* p = take(n);
    if (n == 0) return 0;
    // Drop redundant sign bytes so that Python's longer encodings of small numbers still fit.
    uint64_t len = n;
    while (len > 1 && ((p[len - 1] == 0x00 && !(p[len - 2] & 0x80)) || (p[len - 1] == 0xff && (p[len - 2] & 0x80))))
      --len;
    if (len > 8) bad("an integer does not fit in 64 bits; ember holds Python ints as int64");
    uint64_t v = (p[len - 1] & 0x80) ? ~uint64_t{0} : 0;
    for (uint64_t i = len; i-- > 0;) v = (v << 8) | p[i];
    return static_cast<int64_t>(v);
  }

  void push(PickleNodePtr n) {
    // Every container passes through here on its way into the graph (the policy's too).
    if (n->kind == PickleNode::Kind::List || n->kind == PickleNode::Kind::Tuple || n->kind == PickleNode::Kind::Dict)
      containers_.push_back(n);
    stack_.push_back(std::move(n));
  }
  void push_leaf(Value v) { push(PickleNode::make_leaf(std::move(v))); }
  size_t stack_size_above_mark() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  PickleNodePtr pop() {
    if (stack_size_above_mark() == 0) bad("the opcode needs an object but the stack is empty");
    PickleNodePtr n = std::move(stack_.back());
    stack_.pop_back();
    return n;
  }
  const PickleNodePtr& top() const {
    if (stack_size_above_mark() == 0) bad("the opcode needs an object but the stack is empty");
    return stack_.back();
  }
  std::vector<PickleNodePtr> pop_mark() {
    if (marks_.empty()) bad("the opcode needs a MARK but there is none");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<PickleNodePtr> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void push_tuple(std::vector<PickleNodePtr> items) {
    auto t = PickleNode::make(PickleNode::Kind::Tuple);
    t->items = std::move(items);
    push(t);
  }
  static bool is_string(const PickleNode& n) {
    return n.kind == PickleNode::Kind::Leaf && n.leaf.kind() == Value::Kind::String;
  }
  void append(const PickleNodePtr& list, const std::vector<PickleNodePtr>& items) {
    if (list->kind != PickleNode::Kind::List) bad(concat("APPEND to ", list->describe(), ", not a list"));
    list->items.insert(list->items.end(), items.begin(), items.end());
  }
  void set_items(PickleNode& dict, const std::vector<PickleNodePtr>& kv) {
    if (dict.kind != PickleNode::Kind::Dict) bad(concat("SETITEM on ", dict.describe(), ", not a dict"));
    if (kv.size() % 2) bad("SETITEMS needs key-value pairs");
    for (size_t i = 0; i < kv.size(); i += 2) {
      const PickleNodePtr& key = kv[i];
      if (key->kind == PickleNode::Kind::List || key->kind == PickleNode::Kind::Dict)
        bad(concat("a dict key is a ", key->describe(), ", which Python cannot hash"));
      const std::optional<std::string> sig = key_signature(*key);
      auto& index = dict_index_[&dict];
      if (sig) {
        auto [it, inserted] = index.emplace(*sig, dict.keys.size());
        if (!inserted) {
          dict.items[it->second] = kv[i + 1];  // Python keeps the first key and the last value
          continue;
        }
      }
      dict.keys.push_back(key);
      dict.items.push_back(kv[i + 1]);
    }
  }
  PickleNodePtr memo_get(uint64_t index) const {
    auto it = memo_.find(index);
    if (it == memo_.end()) bad(concat("memo entry ", index, " was never stored"));
    return it->second;
  }
  void memo_put(uint64_t index) { memo_[index] = top(); }

  std::span<const uint8_t> data_;
  UnpicklePolicy& policy_;
  const std::string& context_;
  std::vector<PickleNodePtr>& containers_;
  size_t pos_ = 0;
  size_t op_at_ = 0;
  std::vector<PickleNodePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleNodePtr> memo_;
  std::unordered_map<const PickleNode*, std::unordered_map<std::string, size_t>> dict_index_;
};

class ValueBuilder {
 public:
  ValueBuilder(const std::string& context, size_t max_nodes) : context_(context), budget_(max_nodes) {}

  Value build(const PickleNodePtr& n, int depth) {
    constexpr int kMaxDepth = 200;
    if (depth > kMaxDepth) fail(context_, ": the saved object nests more than ", kMaxDepth, " levels deep");
    if (budget_-- == 0) fail(context_, ": the saved object expands to too many values (shared sub-objects repeated?)");
    switch (n->kind) {
      case PickleNode::Kind::Leaf:
        return n->leaf;
      case PickleNode::Kind::Global:
        fail(context_, ": the file holds ", n->describe(), " itself; ember reads values, not classes or functions");
      case PickleNode::Kind::Opaque:
        fail(context_, ": the file holds a bare ", n->describe(),
             "; ember reads tensors (save tensors, not their untyped storages)");
      default:
        break;
    }
    if (!on_path_.insert(n.get()).second)
      fail(context_, ": the saved object contains itself (a recursive ", n->describe(), "), which ember cannot hold");
    Value out;
    if (n->kind == PickleNode::Kind::Dict) {
      Value::DictItems items;
      items.reserve(n->keys.size());
      for (size_t i = 0; i < n->keys.size(); ++i)
        items.emplace_back(build(n->keys[i], depth + 1), build(n->items[i], depth + 1));
      out = n->ordered ? Value::ordered_dict(std::move(items)) : Value::dict(std::move(items));
    } else {
      Value::Items items;
      items.reserve(n->items.size());
      for (const PickleNodePtr& item : n->items) items.push_back(build(item, depth + 1));
      out = n->kind == PickleNode::Kind::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    on_path_.erase(n.get());
    return out;
  }

 private:
  const std::string& context_;
  size_t budget_;
  std::unordered_set<const PickleNode*> on_path_;
};

}  // namespace

PickleGraph::~PickleGraph() {
  for (const PickleNodePtr& n : containers) {
    n->items.clear();
    n->keys.clear();
  }
}

void unpickle(std::span<const uint8_t> data, UnpicklePolicy& policy, const std::string& context, PickleGraph& graph) {
  graph.root = Unpickler(data, policy, context, graph.containers).run();
}

Value to_value(const PickleNodePtr& root, const std::string& context, size_t max_nodes) {
  return ValueBuilder(context, max_nodes).build(root, 0);
}

// ---------------------------------------------------------------------------------------------
// Pickler.

namespace {
constexpr uint8_t kMark = '(', kStop = '.', kBinPut = 'q', kLongBinPut = 'r', kBinGet = 'h', kLongBinGet = 'j';
constexpr uint8_t kEmptyTuple = ')', kTuple = 't', kTuple1 = 0x85, kEmptyList = ']', kAppend = 'a', kAppends = 'e';
constexpr uint8_t kEmptyDict = '}', kSetItem = 's', kSetItems = 'u', kReduce = 'R', kBinPersId = 'Q';
constexpr size_t kBatchSize = 1000;  // CPython's _BATCHSIZE
}  // namespace

void Pickler::put_bytes(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out_.insert(out_.end(), b, b + n);
}

void Pickler::memoize(const void* identity, std::string key) {
  const uint32_t index = memo_next_++;
  if (identity) memo_by_object_.emplace(identity, index);
  if (!key.empty()) memo_by_name_.emplace(std::move(key), index);
  if (index < 256) {
    put_opcode(kBinPut);
    out_.push_back(static_cast<uint8_t>(index));
  } else {
    put_opcode(kLongBinPut);
    put_bytes(&index, 4);
  }
}

namespace {
void put_get(std::vector<uint8_t>& out, uint32_t index) {
  if (index < 256) {
    out.push_back(kBinGet);
    out.push_back(static_cast<uint8_t>(index));
  } else {
    out.push_back(kLongBinGet);
    const auto* b = reinterpret_cast<const uint8_t*>(&index);
    out.insert(out.end(), b, b + 4);
  }
}
}  // namespace

void Pickler::save_str(std::string_view s, bool memoize_by_content) {
  const std::string key = memoize_by_content ? concat("str:", s) : std::string();
  if (memoize_by_content) {
    if (auto it = memo_by_name_.find(key); it != memo_by_name_.end()) return put_get(out_, it->second);
  }
  put_opcode('X');  // BINUNICODE
  const auto n = static_cast<uint32_t>(s.size());
  if (s.size() > std::numeric_limits<uint32_t>::max()) fail("torch_save: a string of ", s.size(), " bytes is too long");
  put_bytes(&n, 4);
  put_bytes(s.data(), s.size());
  memoize(nullptr, key);
}

void Pickler::save_int(int64_t v) {
  if (v >= 0 && v <= 0xff) {
    put_opcode('K');
    out_.push_back(static_cast<uint8_t>(v));
  } else if (v >= 0 && v <= 0xffff) {
    put_opcode('M');
    const auto u = static_cast<uint16_t>(v);
    put_bytes(&u, 2);
  } else if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
    put_opcode('J');
    const auto i = static_cast<int32_t>(v);
    put_bytes(&i, 4);
  } else {
    // LONG1: the shortest little-endian two's complement form, as pickle.encode_long.
    uint8_t bytes[8];
    std::memcpy(bytes, &v, 8);
    size_t n = 8;
    while (n > 1 &&
           ((bytes[n - 1] == 0x00 && !(bytes[n - 2] & 0x80)) || (bytes[n - 1] == 0xff && (bytes[n - 2] & 0x80))))
      --n;
    put_opcode(0x8a);
    out_.push_back(static_cast<uint8_t>(n));
    put_bytes(bytes, n);
  }
}

void Pickler::save_global(std::string_view module, std::string_view name) {
  const std::string key = concat("global:", module, ".", name);
  if (auto it = memo_by_name_.find(key); it != memo_by_name_.end()) return put_get(out_, it->second);
  put_opcode('c');
  put_bytes(module.data(), module.size());
  out_.push_back('\n');
  put_bytes(name.data(), name.size());
  out_.push_back('\n');
  memoize(nullptr, key);
}

// A tuple of n items as CPython writes it: () alone, 1-3 items then TUPLE1-3, more between MARK
// and TUPLE; non-empty tuples are memoized.
void Pickler::begin_tuple(size_t n) {
  if (n > 3) put_opcode(kMark);
}

void Pickler::end_tuple(size_t n) {
  if (n == 0) return put_opcode(kEmptyTuple);
  put_opcode(n > 3 ? kTuple : static_cast<uint8_t>(kTuple1 + n - 1));
  memoize();
}

void Pickler::save_int_tuple(IntList ints) {
  begin_tuple(ints.size());
  for (int64_t v : ints) save_int(v);
  end_tuple(ints.size());
}

void Pickler::save_tensor(const Tensor& t) {
  const void* identity = &t.impl();
  if (auto it = memo_by_object_.find(identity); it != memo_by_object_.end()) return put_get(out_, it->second);
  const StorageRef ref = storage_fn_(self_, t);
  // _rebuild_tensor_v2(storage, offset, sizes, strides, requires_grad, backward_hooks)
  save_global("torch._utils", "_rebuild_tensor_v2");
  begin_tuple(6);
  // The persistent id: ('storage', torch.<Type>Storage, key, location, numel).
  begin_tuple(5);
  save_str("storage", true);
  save_global("torch", ref.storage_type);
  save_str(ref.key);
  save_str(ref.location, true);
  save_int(ref.numel);
  end_tuple(5);
  put_opcode(kBinPersId);
  save_int(t.storage_offset());
  save_int_tuple(t.sizes());
  save_int_tuple(t.strides());
  put_opcode(t.requires_grad() ? 0x88 : 0x89);
  // backward_hooks: an empty OrderedDict.
  save_global("collections", "OrderedDict");
  end_tuple(0);
  put_opcode(kReduce);
  memoize();
  end_tuple(6);
  put_opcode(kReduce);
  memoize(identity);
}

void Pickler::save(const Value& v, int depth) {
  constexpr int kMaxDepth = 200;
  if (depth > kMaxDepth) fail("torch_save: the value nests more than ", kMaxDepth, " levels deep");
  switch (v.kind()) {
    case Value::Kind::None:
      return put_opcode('N');
    case Value::Kind::Bool:
      return put_opcode(v.to_bool() ? 0x88 : 0x89);
    case Value::Kind::Int:
      return save_int(v.to_int());
    case Value::Kind::Float: {
      put_opcode('G');
      const auto bits = std::bit_cast<uint64_t>(v.to_double());
      for (int i = 7; i >= 0; --i) out_.push_back(static_cast<uint8_t>(bits >> (8 * i)));
      return;
    }
    case Value::Kind::String:
      return save_str(v.to_string());
    case Value::Kind::Bytes: {
      // Protocol 2 has no bytes opcode: CPython writes _codecs.encode(latin-1 text, 'latin1')
      // (and bytes() for b'', which torch.load's weights-only mode refuses; the encode form of
      // '' gives b'' too and is allowed).
      const std::string& b = v.to_string();
      save_global("_codecs", "encode");
      std::string latin1;
      for (char c : b) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x80) {
          latin1 += c;
        } else {
          latin1 += static_cast<char>(0xc0 | (u >> 6));
          latin1 += static_cast<char>(0x80 | (u & 0x3f));
        }
      }
      begin_tuple(2);
      save_str(latin1);
      save_str("latin1", true);
      end_tuple(2);
      put_opcode(kReduce);
      return memoize();
    }
    case Value::Kind::Tensor:
      return save_tensor(v.to_tensor());
    case Value::Kind::Dtype:
      return save_global("torch", dtype_name(v.to_dtype()).substr(6));  // "torch.float32"
    case Value::Kind::Device: {
      const Device d = v.to_device();
      save_global("torch", "device");
      const size_t n = d.has_index() ? 2 : 1;
      begin_tuple(n);
      save_str(device_type_name(d.type()), true);
      if (d.has_index()) save_int(d.index());
      end_tuple(n);
      put_opcode(kReduce);
      return memoize();
    }
    case Value::Kind::Tuple: {
      const Value::Items& items = v.items();
      begin_tuple(items.size());
      for (const Value& item : items) save(item, depth + 1);
      return end_tuple(items.size());
    }
    case Value::Kind::List: {
      put_opcode(kEmptyList);
      memoize();
      const Value::Items& items = v.items();
      for (size_t i = 0; i < items.size(); i += kBatchSize) {
        const size_t n = std::min(kBatchSize, items.size() - i);
        if (n > 1) put_opcode(kMark);
        for (size_t j = i; j < i + n; ++j) save(items[j], depth + 1);
        put_opcode(n > 1 ? kAppends : kAppend);
      }
      return;
    }
    case Value::Kind::Dict: {
      if (v.is_ordered_dict()) {
        save_global("collections", "OrderedDict");
        end_tuple(0);
        put_opcode(kReduce);
      } else {
        put_opcode(kEmptyDict);
      }
      memoize();
      const Value::DictItems& items = v.dict_items();
      for (size_t i = 0; i < items.size(); i += kBatchSize) {
        const size_t n = std::min(kBatchSize, items.size() - i);
        if (n > 1) put_opcode(kMark);
        for (size_t j = i; j < i + n; ++j) {
          save(items[j].first, depth + 1);
          save(items[j].second, depth + 1);
        }
        put_opcode(n > 1 ? kSetItems : kSetItem);
      }
      return;
    }
  }
}

std::vector<uint8_t> Pickler::dump(const Value& value) {
  out_.clear();
  put_opcode(0x80);
  out_.push_back(2);
  save(value, 0);
  put_opcode(kStop);
  return std::move(out_);
}

}  // namespace ember::io::internal
