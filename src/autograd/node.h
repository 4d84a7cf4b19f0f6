#pragma once
// The recorded graph: nodes, edges, saved tensors, and the helper every op uses to record.
//
// A node is one differentiable op application. Its backward function maps the gradient of the
// op's output to the gradients of its inputs; `record` then sums them down to each input's
// broadcast shape and casts them to its dtype, so backward functions never deal with either.
// Leaves get an accumulator node that adds into their grad().
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember {

namespace autograd {

struct Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
  uint32_t slot = 0;           // which of node's gradient slots this edge feeds (see Node::slots)
};

struct InputMeta {
  Dims sizes;
  Dtype dtype = kFloat32;
  Device device;  // differs from the op's only for a 0-dim CPU operand of a GPU op
};

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
/// A gather node's backward: one gradient per slot (undefined where none arrived) in, one per
/// input out.
using GatherBackwardFn = std::function<std::vector<Tensor>(std::vector<Tensor>& slot_grads)>;

/// A vector with room for N elements inside it, so that a node over one or two inputs (nearly
/// every op) records without allocating its per-input lists. Past N it moves to the heap.
template <typename T, size_t N>
class InlineVector {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return spilled_ ? heap_.data() : inline_.data(); }
  const T* data() const { return spilled_ ? heap_.data() : inline_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  void reserve(size_t n) {
    if (n <= N && !spilled_) return;
    spill(n);
    heap_.reserve(n);
  }
  void push_back(T value) {
    if (!spilled_ && size_ < N) {
      inline_[size_++] = std::move(value);
      return;
    }
    spill(size_ + 1);
    heap_.push_back(std::move(value));
    ++size_;
  }

 private:
  void spill(size_t capacity) {
    if (spilled_) return;
    heap_.reserve(capacity > 2 * N ? capacity : 2 * N);
    for (size_t i = 0; i < size_; ++i) {
      heap_.push_back(std::move(inline_[i]));
      inline_[i] = T();
    }
    spilled_ = true;
  }

  std::array<T, N> inline_{};
  std::vector<T> heap_;
  size_t size_ = 0;
  bool spilled_ = false;
};

struct Node : std::enable_shared_from_this<Node> {
  const char* name = "";       // "MulBackward0", as PyTorch names it; "AccumulateGrad" for leaves
  InlineVector<Edge, 2> next;  // one per input, in order
  InlineVector<InputMeta, 2> inputs;
  BackwardFn backward;  // empty once released
  // A gather node (slots > 1) receives its gradients in separate slots instead of one sum and
  // runs `gather` on them once: the shared node behind the pieces of one split (unbind, split,
  // chunk), which builds the whole input's gradient in one pass rather than adding up one
  // input-sized gradient per piece. No tensor has a gather node as its grad_fn.
  uint32_t slots = 1;
  GatherBackwardFn gather;  // empty once released
  bool released = false;
  bool accumulates = false;                // an AccumulateGrad node of a leaf
  std::weak_ptr<detail::TensorImpl> leaf;  // the leaf it accumulates into
  uint64_t sequence_nr = 0;                // creation order: later nodes run first when both are ready
  // The hooks of the tensor this node produced (register_hook on a non-leaf), by registration
  // id, and the tensor whose grad() the gradient arriving here fills (retain_grad). Leaves keep
  // theirs in AutogradMeta, since their accumulator is made afresh for each graph.
  std::vector<std::pair<uint64_t, TensorHook>> tensor_hooks;
  std::weak_ptr<detail::TensorImpl> retains_grad_of;
};

/// A tensor kept for backward, with the version it had when saved, so that an in-place change
/// before backward is an error instead of a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  /// The op's own result, saved before record() gives it its node. It is kept detached (keeping
  /// it whole would make a cycle: output -> node -> closure -> output); when a backward pass with
  /// create_graph reads it, get() reattaches it to the node that is running, so that the
  /// gradient formulas reading it (exp, tanh, softmax, ...) differentiate through it.
  static SavedTensor output(const Tensor& t);
  Tensor get() const;

 private:
  Tensor checked() const;  // tensor_, after the in-place check

  Tensor tensor_;
  uint32_t version_ = 0;
  bool is_output_ = false;
};

/// True when grad mode is on and any input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

/// Makes `output` the result of a node named `name` (a string literal: the node keeps the
/// pointer) over `inputs` with `backward`. The output becomes a tensor of its own: if the op
/// built it as a view of an internal temporary (mm's squeeze of a batched product), it stops
/// being a view, so that an in-place write to it is recorded on it and not on the temporary
/// (PyTorch's _unsafe_view). View ops record with record_view instead.
void record(Tensor& output, const char* name, std::span<const Tensor* const> inputs, BackwardFn backward);
/// record() for the result of a view op, which stays a view of its base.
void record_view(Tensor& output, const char* name, std::span<const Tensor* const> inputs, BackwardFn backward);
/// Records a view (or copy) op of one input: `grad_of` maps the output's gradient to self's.
/// Returns `out`, with its history when self needs a gradient.
Tensor record_view_of(Tensor out, const Tensor& self, const char* name, std::function<Tensor(const Tensor&)> grad_of);
inline void record(Tensor& output, const char* name, std::initializer_list<const Tensor*> inputs, BackwardFn backward) {
  record(output, name, std::span<const Tensor* const>(inputs.begin(), inputs.size()), std::move(backward));
}
inline void record(Tensor& output, const char* name, const std::vector<const Tensor*>& inputs, BackwardFn backward) {
  record(output, name, std::span<const Tensor* const>(inputs), std::move(backward));
}

/// Records `pieces`, views of `self` that split it along one dimension (unbind, split, chunk):
/// each piece gets a node named `name` that hands its gradient on to its own slot of one gather
/// node over self, whose `gather` builds self's gradient from the pieces' gradients at once.
void record_pieces(std::vector<Tensor>& pieces, const char* name, const Tensor& self, GatherBackwardFn gather);

/// A node named `name` over `inputs`, not yet attached to any tensor.
std::shared_ptr<Node> make_node(const char* name, std::span<const Tensor* const> inputs, BackwardFn backward);
inline std::shared_ptr<Node> make_node(const char* name, std::initializer_list<const Tensor*> inputs,
                                       BackwardFn backward) {
  return make_node(name, std::span<const Tensor* const>(inputs.begin(), inputs.size()), std::move(backward));
}

/// The node that receives gradients for `t`: its grad_fn, its leaf accumulator (made on first
/// use), or null when t needs no gradient.
std::shared_ptr<Node> gradient_node(const Tensor& t);

/// t's grad_fn (null for a leaf). For a view whose storage was written in place since its
/// grad_fn was set, the grad_fn is first rebuilt as a view of its base's current history.
/// The reference stays valid until t's grad_fn next changes.
const std::shared_ptr<Node>& grad_fn_of(const Tensor& t);
/// Sets t's grad_fn, giving t its autograd state first if it has none.
void set_grad_fn(const Tensor& t, std::shared_ptr<Node> fn);

// In-place writes (src/autograd/inplace.cpp). An op that writes into `self` while recording
// (grad mode on, and self or an operand requiring grad) calls check_inplace before the write
// and rebase_history after it.

/// PyTorch's check_inplace: refuses a write into a leaf that requires grad, into a view of one,
/// and into a view made in no-grad mode.
void check_inplace(const Tensor& self);
/// Makes `history` (the node whose output is self's new value) self's grad_fn. Through a view,
/// the base's grad_fn becomes a CopySlices node over the base's old history and `history`.
void rebase_history(const Tensor& self, std::shared_ptr<Node> history);

/// Where a tensor's elements lie in its storage.
struct Geometry {
  Dims sizes;
  Dims strides;
  int64_t offset = 0;
  static Geometry of(const Tensor& t);
};

/// The gradient for `input` of input.as_strided(output geometry): each element of `grad` goes
/// to the storage position it was read from, and each input element takes what reached its
/// own position (so elements read twice add up, and positions outside the input are dropped).
Tensor as_strided_backward(const Tensor& grad, const Geometry& input, const Geometry& output);

/// Sums `grad` down to `sizes` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, IntList sizes);

/// True inside a backward function run by autograd::grad (which must not accumulate into any
/// grad()), false inside one run by backward().
bool in_grad_call();

}  // namespace autograd

/// Autograd state of a tensor (TensorImpl::autograd).
struct AutogradMeta {
  bool requires_grad = false;  // set on leaves by requires_grad_()
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;    // set on results of recorded ops
  std::weak_ptr<autograd::Node> accumulator;  // a leaf's AccumulateGrad, shared by all its uses
  std::vector<std::pair<uint64_t, PostAccumulateGradHook>> post_accumulate_hooks;  // by registration id
  std::vector<std::pair<uint64_t, TensorHook>> tensor_hooks;  // a leaf's register_hook hooks, by id
  bool retains_grad = false;                                  // retain_grad() was called (non-leaf)
};

}  // namespace ember
