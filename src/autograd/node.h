#pragma once
// The recorded graph: nodes, edges, saved tensors, and the helper every op uses to record.
//
// A node is one differentiable op application. Its backward function maps the gradient of the
// op's output to the gradients of its inputs; `record` then sums them down to each input's
// broadcast shape and casts them to its dtype, so backward functions never deal with either.
// Leaves get an accumulator node that adds into their grad().
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "ember/autograd.h"
#include "ember/tensor.h"

namespace ember {

namespace autograd {

struct Node;

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
};

struct InputMeta {
  Dims sizes;
  Dtype dtype = kFloat32;
};

using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

struct Node {
  std::string name;             // "MulBackward0", as PyTorch names it; "AccumulateGrad" for leaves
  std::vector<Edge> next;       // one per input, in order
  std::vector<InputMeta> inputs;
  BackwardFn backward;          // empty once released
  bool released = false;
  bool accumulates = false;                // an AccumulateGrad node of a leaf
  std::weak_ptr<detail::TensorImpl> leaf;  // the leaf it accumulates into
  uint64_t sequence_nr = 0;     // creation order: later nodes run first when both are ready
};

/// A tensor kept for backward, with the version it had when saved, so that an in-place change
/// before backward is an error instead of a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  Tensor get() const;

 private:
  Tensor tensor_;
  uint32_t version_ = 0;
};

/// True when grad mode is on and any input requires grad.
bool needs_grad(std::initializer_list<const Tensor*> inputs);
bool needs_grad(const std::vector<Tensor>& inputs);

/// Makes `output` the result of a node named `name` over `inputs` with `backward`.
void record(Tensor& output, const char* name, const std::vector<const Tensor*>& inputs, BackwardFn backward);

/// Sums `grad` down to `sizes` (undoing broadcasting).
Tensor sum_to(const Tensor& grad, IntList sizes);

}  // namespace autograd

/// Autograd state of a tensor (TensorImpl::autograd).
struct AutogradMeta {
  bool requires_grad = false;  // set on leaves by requires_grad_()
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;      // set on results of recorded ops
  std::weak_ptr<autograd::Node> accumulator;    // a leaf's AccumulateGrad, shared by all its uses
  std::vector<std::pair<uint64_t, PostAccumulateGradHook>> post_accumulate_hooks;  // by registration id
};

}  // namespace ember
