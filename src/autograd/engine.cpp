// The backward pass: find every node reachable from the outputs, count how many gradients each
// waits for, then run them in dependency order, accumulating into leaves.
#include <algorithm>
#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ember/warning.h"

namespace ember {

namespace {
std::atomic<bool> g_anomaly_enabled{false};
std::atomic<uint64_t> g_sequence{0};
std::atomic<uint64_t> g_hook_ids{1};
// The callbacks queued during the backward() running on this thread; null outside backward.
thread_local std::vector<std::function<void()>>* g_final_callbacks = nullptr;
// The node whose backward function is running on this thread, for SavedTensor::output.
thread_local autograd::Node* g_running_node = nullptr;
// Whether the innermost pass running on this thread is a grad() (targets, no accumulation).
thread_local bool g_in_grad_call = false;
}  // namespace

bool AnomalyMode::is_enabled() { return g_anomaly_enabled.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled) { g_anomaly_enabled.store(enabled, std::memory_order_relaxed); }

namespace autograd {

namespace {
// What a SavedTensor keeps of `t`. Every form shares t's storage, and so its version counter.
// - A tensor that needs no gradient: a detached alias. That is always the case for the op's own
//   output, which is saved before record() gives it its grad_fn; keeping the output itself
//   would make a cycle (output -> node -> closure -> output).
// - A leaf that requires grad: the leaf itself, whose accumulator its gradient must reach.
// - The result of another op: an alias holding the grad_fn t has now. Keeping t itself could
//   make a cycle once a later in-place write gives t, or the base t is a view of, a history
//   that leads back to the saving node (h.mul_(h); a buffer row saved by one op, then the
//   buffer written through another row). Such a graph fails the version check at backward,
//   but without the cycle it is still freed when nobody runs it.
Tensor saved_form(const Tensor& t) {
  if (!t.defined()) return t;
  if (!t.requires_grad()) return t.detach();
  const std::shared_ptr<Node>& history = grad_fn_of(t);
  if (!history) return t;
  Tensor alias = t.detach();
  set_grad_fn(alias, history);
  return alias;
}
}  // namespace

SavedTensor::SavedTensor(const Tensor& t)
    : tensor_(saved_form(t)), version_(t.defined() ? t.impl().storage->version() : 0) {}

SavedTensor SavedTensor::output(const Tensor& t) {
  SavedTensor saved(t);
  saved.is_output_ = true;
  return saved;
}

Tensor SavedTensor::get() const {
  if (is_output_ && GradMode::is_enabled() && g_running_node != nullptr) {
    // create_graph: the output again, as a tensor produced by the node now running.
    Tensor attached = checked().detach();
    set_grad_fn(attached, g_running_node->shared_from_this());
    return attached;
  }
  return checked();
}

Tensor SavedTensor::checked() const {
  if (tensor_.defined() && tensor_.impl().storage->version() != version_) {
    std::string sizes;
    for (int64_t i = 0; i < tensor_.dim(); ++i) sizes += (i ? ", " : "") + std::to_string(tensor_.size(i));
    detail::fail("one of the variables needed for gradient computation has been modified by an inplace operation: [",
                 scalar_type_name(tensor_.dtype()), " [", sizes, "]] is at version ", tensor_.impl().storage->version(),
                 "; expected version ", version_,
                 " instead. Hint: avoid in-place ops (x.add_(..), x += ..) on tensors that an op saved for backward.");
  }
  return tensor_;
}

bool needs_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

std::shared_ptr<Node> gradient_node(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return nullptr;
  if (auto fn = grad_fn_of(t)) return fn;
  AutogradMeta& meta = *t.impl().autograd;
  if (auto acc = meta.accumulator.lock()) return acc;
  auto acc = std::make_shared<Node>();
  acc->name = "AccumulateGrad";
  acc->accumulates = true;
  acc->leaf = t.impl_ptr();
  acc->sequence_nr = g_sequence.fetch_add(1);
  meta.accumulator = acc;
  return acc;
}

std::shared_ptr<Node> make_node(const char* name, std::span<const Tensor* const> inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->backward = std::move(backward);
  node->sequence_nr = g_sequence.fetch_add(1);
  node->next.reserve(inputs.size());
  node->inputs.reserve(inputs.size());
  for (const Tensor* t : inputs) {
    node->next.push_back({gradient_node(*t)});
    node->inputs.push_back(t->defined() ? InputMeta{Dims(t->sizes()), t->dtype(), t->device()} : InputMeta{});
  }
  return node;
}

void set_grad_fn(const Tensor& t, std::shared_ptr<Node> fn) {
  detail::TensorImpl& impl = t.impl();
  if (!impl.autograd) impl.autograd = std::make_shared<AutogradMeta>();
  AutogradMeta& meta = *impl.autograd;
  if (meta.retains_grad) {
    // retain_grad follows the tensor to its new history (an in-place write, a view rebuilt).
    if (meta.grad_fn) meta.grad_fn->retains_grad_of.reset();
    if (fn) fn->retains_grad_of = t.impl_ptr();
  }
  meta.grad_fn = std::move(fn);
}

void record_view(Tensor& output, const char* name, std::span<const Tensor* const> inputs, BackwardFn backward) {
  set_grad_fn(output, make_node(name, inputs, std::move(backward)));
}

Tensor record_view_of(Tensor out, const Tensor& self, const char* name, std::function<Tensor(const Tensor&)> grad_of) {
  if (needs_grad({&self})) {
    const Tensor* inputs[] = {&self};
    record_view(out, name, inputs, [f = std::move(grad_of)](const Tensor& g) { return std::vector<Tensor>{f(g)}; });
  }
  return out;
}

void record(Tensor& output, const char* name, std::span<const Tensor* const> inputs, BackwardFn backward) {
  detail::forget_base(output);
  record_view(output, name, inputs, std::move(backward));
}

void record_pieces(std::vector<Tensor>& pieces, const char* name, const Tensor& self, GatherBackwardFn gather) {
  if (pieces.size() <= 1) {
    // One piece is all of self: a plain view node, whose gather sees a single slot.
    if (pieces.empty()) return;
    const Tensor* inputs[] = {&self};
    record_view(pieces[0], name, inputs, [gather](const Tensor& g) {
      std::vector<Tensor> slot_grads{g};
      return gather(slot_grads);
    });
    return;
  }
  auto collector = make_node(name, {&self}, nullptr);
  collector->slots = static_cast<uint32_t>(pieces.size());
  collector->gather = std::move(gather);
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto node = std::make_shared<Node>();
    node->name = name;
    node->sequence_nr = g_sequence.fetch_add(1);
    node->next.push_back({collector, static_cast<uint32_t>(i)});
    node->inputs.push_back(InputMeta{Dims(pieces[i].sizes()), pieces[i].dtype(), pieces[i].device()});
    node->backward = [](const Tensor& g) { return std::vector<Tensor>{g}; };
    set_grad_fn(pieces[i], std::move(node));
  }
}

Tensor sum_to(const Tensor& grad, IntList sizes) {
  if (same_dims(grad.sizes(), sizes)) return grad;
  const int64_t lead = grad.dim() - static_cast<int64_t>(sizes.size());
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < grad.dim(); ++d) {
    if (d < lead || (sizes[d - lead] == 1 && grad.size(d) != 1)) dims.push_back(d);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.reshape(sizes);
}

namespace {

/// Runs the tensor hooks of the tensor `node` receives gradients for (a leaf's, through its
/// accumulator, or the non-leaf's that `node` produced), then fills a retained grad().
Tensor apply_tensor_hooks(const Node& node, Tensor grad) {
  std::vector<std::pair<uint64_t, TensorHook>> hooks;  // a copy: a hook may remove hooks
  std::shared_ptr<detail::TensorImpl> leaf;
  if (node.accumulates) {
    leaf = node.leaf.lock();
    if (leaf && leaf->autograd) hooks = leaf->autograd->tensor_hooks;
  } else {
    hooks = node.tensor_hooks;
  }
  for (const auto& [id, hook] : hooks) {
    Tensor replaced = hook(grad);
    if (!replaced.defined()) continue;
    EMBER_CHECK(same_dims(replaced.sizes(), grad.sizes()), "hook 'hook' has changed the size of value: it returned ",
                detail::shape_str(replaced.sizes()), " for a gradient of size ", detail::shape_str(grad.sizes()));
    EMBER_CHECK(replaced.dtype() == grad.dtype(), "hook 'hook' has changed the type of value (was ",
                dtype_name(grad.dtype()), " got ", dtype_name(replaced.dtype()), ")");
    EMBER_CHECK(replaced.device() == grad.device(), "hook 'hook' has changed the device of value (was ", grad.device(),
                " got ", replaced.device(), ")");
    grad = std::move(replaced);
  }
  if (auto retained = node.retains_grad_of.lock()) {
    // PyTorch's retain_grad hook, run after the others: a copy first, a sum afterwards.
    AutogradMeta& meta = *retained->autograd;
    meta.grad = meta.grad.defined() ? meta.grad + grad : grad.clone();
  }
  return grad;
}

// Adds g to the gradient buffered for a node's input. In place when the buffer holds the only
// reference to its elements (a fresh gradient from a backward formula, the common case) and the
// pass records nothing: a parameter used at each of 29 decoding steps then sums its 29 weight
// gradients into one buffer instead of allocating 28 more. Out of place otherwise, so that a
// tensor another buffer, a saved value or a returned gradient shares is never changed.
void accumulate_into_buffer(Tensor& slot, const Tensor& g) {
  if (!slot.defined()) {
    slot = g;
    return;
  }
  const bool owned = !GradMode::is_enabled() && slot.impl_ptr().use_count() == 1 &&
                     slot.impl().storage.use_count() == 1 && slot.is_contiguous() &&
                     same_dims(slot.sizes(), g.sizes()) && slot.dtype() == g.dtype() && slot.device() == g.device();
  if (owned) {
    slot.add_(g);
  } else {
    slot = slot + g;
  }
}

void accumulate_into_leaf(const Node& node, Tensor grad) {
  auto impl = node.leaf.lock();
  if (!impl) return;  // the leaf is gone; nobody can read its gradient
  Tensor leaf(impl);
  AutogradMeta& meta = *impl->autograd;
  if (!meta.grad.defined()) {
    // Take the incoming tensor when nothing else refers to it; otherwise copy, so the leaf's
    // gradient never aliases another tensor.
    const bool unique = grad.impl_ptr().use_count() == 1 && grad.impl().storage.use_count() == 1 &&
                        grad.is_contiguous() && same_dims(grad.sizes(), leaf.sizes());
    meta.grad = unique ? grad : grad.expand(leaf.sizes()).clone();
  } else if (GradMode::is_enabled()) {
    // create_graph: out of place, so that the graph of the gradient accumulated before stays valid.
    meta.grad = meta.grad + grad;
  } else {
    meta.grad.add_(grad);
  }
  if (meta.post_accumulate_hooks.empty()) return;
  // A copy: a hook may register or remove hooks.
  const auto hooks = meta.post_accumulate_hooks;
  for (const auto& [id, hook] : hooks) hook(leaf);
}

// Anomaly mode: the first backward function whose results hold a NaN is named, with the input
// each result is the gradient for, since that is what a user can find in their forward code.
void check_for_nan(const Node& node, const std::vector<Tensor>& input_grads) {
  for (size_t i = 0; i < input_grads.size(); ++i) {
    const Tensor& g = input_grads[i];
    if (!g.defined() || !g.is_floating_point()) continue;
    if (isnan(g).sum().item<int64_t>() == 0) continue;
    const InputMeta& meta = node.inputs[i];
    detail::fail("Function '", node.name, "' returned nan values in its ", i, "th output (the gradient for its input ",
                 i, " of shape ", detail::shape_str(meta.sizes), ", ", dtype_name(meta.dtype),
                 "). Look at that op's inputs in the forward pass: 0/0, log or sqrt of values <= 0, or overflow.");
  }
}

// What a backward pass is asked for: accumulate into every reachable leaf (backward()), or
// return the gradients of some tensors (grad()), running only the nodes that lead to them.
struct Targets {
  std::vector<Node*> nodes;  // one per requested tensor, in order; empty for backward()
  bool empty() const { return nodes.empty(); }
};

// The nodes a pass runs and the edges each waits for. backward() runs every node reachable
// from the roots; grad() only those on a path to a target.
struct GraphTask {
  bool all = true;
  std::unordered_set<Node*> is_target;
  std::unordered_set<Node*> needed;             // when !all
  std::unordered_map<Node*, int> dependencies;  // edges into the node from nodes that run

  bool needs(Node* n) const { return all || needed.contains(n); }

  GraphTask(const std::vector<std::shared_ptr<Node>>& roots, const Targets& targets)
      : all(targets.empty()), is_target(targets.nodes.begin(), targets.nodes.end()) {
    // Depth-first, children before parents, so that a node is known to be needed once any of
    // its children is.
    std::unordered_set<Node*> seen;
    std::vector<std::pair<Node*, size_t>> stack;  // a node, and its next edge to visit
    for (const auto& r : roots) {
      if (seen.insert(r.get()).second) stack.emplace_back(r.get(), 0);
      while (!stack.empty()) {
        Node* node = stack.back().first;
        size_t& edge = stack.back().second;
        if (edge < node->next.size()) {
          Node* child = node->next[edge++].node.get();
          if (child && seen.insert(child).second) stack.emplace_back(child, 0);  // invalidates `edge`
          continue;
        }
        stack.pop_back();
        if (all) continue;
        bool need = is_target.contains(node);
        for (const Edge& e : node->next) need = need || (e.node && needed.contains(e.node.get()));
        if (need) needed.insert(node);
      }
    }
    for (Node* n : seen) {
      if (!needs(n)) continue;
      for (const Edge& e : n->next) {
        if (e.node && needs(e.node.get())) ++dependencies[e.node.get()];
      }
    }
  }
};

// The one backward pass behind backward() and grad(). `captured`, for grad(), receives each
// target's gradient (undefined when none reached it).
void run_backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs, bool keep_graph,
                  bool create_graph, const Targets& targets, std::vector<Tensor>* captured) {
  EMBER_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "backward: got ", grad_outputs.size(),
              " gradients for ", outputs.size(), " outputs");
  AutoGradMode grad_mode(create_graph);  // on exactly when the pass records itself
  // Each backward op runs in its forward op's dtypes, which its inputs already have; autocast
  // would cast them again (a float32 sum of a float16 gradient, say).
  amp::detail::NoAutocastGuard no_autocast;
  // A pass run inside a backward function (a checkpointed block's second run) queues its
  // callbacks onto the pass that contains it: "backward has finished" means the outermost one.
  std::vector<std::function<void()>> final_callbacks;
  struct CallbacksScope {
    std::vector<std::function<void()>>* previous;
    explicit CallbacksScope(std::vector<std::function<void()>>* mine) : previous(g_final_callbacks) {
      g_final_callbacks = mine;
    }
    ~CallbacksScope() { g_final_callbacks = previous; }
  } callbacks_scope(g_final_callbacks != nullptr ? g_final_callbacks : &final_callbacks);
  struct GradCallScope {
    bool previous;
    explicit GradCallScope(bool mine) : previous(g_in_grad_call) { g_in_grad_call = mine; }
    ~GradCallScope() { g_in_grad_call = previous; }
  } grad_call_scope(captured != nullptr);
  std::unordered_map<Node*, Tensor> buffers;
  std::unordered_map<Node*, std::vector<Tensor>> slot_buffers;  // of gather nodes
  std::vector<std::shared_ptr<Node>> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    detail::check_defined(out, "backward");
    EMBER_CHECK(out.requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      EMBER_CHECK(out.numel() == 1, "grad can be implicitly created only for scalar outputs");
      g = ones_like(out);
    } else {
      EMBER_CHECK(same_dims(g.sizes(), out.sizes()), "Mismatch in shape: grad_output[", i, "] has a shape of ",
                  detail::shape_str(g.sizes()), " and output[", i, "] has a shape of ", detail::shape_str(out.sizes()),
                  ".");
    }
    std::shared_ptr<Node> node = gradient_node(out);
    Tensor& slot = buffers[node.get()];
    slot = slot.defined() ? slot + g : g;
    roots.push_back(std::move(node));
  }

  GraphTask task(roots, targets);
  std::unordered_map<Node*, Tensor> target_grads;
  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  std::unordered_set<Node*> queued;
  for (const auto& r : roots) {
    if (task.needs(r.get()) && task.dependencies[r.get()] == 0 && queued.insert(r.get()).second) {
      ready.push(r.get());
    }
  }
  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    Tensor grad;
    std::vector<Tensor> slot_grads;
    if (node->slots > 1) {
      if (auto it = slot_buffers.find(node); it != slot_buffers.end()) {
        slot_grads = std::move(it->second);
        slot_buffers.erase(it);
      }
    } else if (auto it = buffers.find(node); it != buffers.end()) {
      grad = std::move(it->second);
      buffers.erase(it);
    }
    const bool is_target = task.is_target.contains(node);
    // grad() never accumulates, and runs a node only when a target lies beyond it.
    const bool has_grad = node->slots > 1 ? !slot_grads.empty() : grad.defined();
    bool runs = has_grad && (targets.empty() || !node->accumulates);
    if (runs && !targets.empty()) {
      runs = std::any_of(node->next.begin(), node->next.end(),
                         [&](const Edge& e) { return e.node && task.needs(e.node.get()); });
    }
    if (grad.defined() && (runs || is_target)) grad = apply_tensor_hooks(*node, std::move(grad));
    if (is_target) target_grads[node] = grad;
    std::vector<Tensor> input_grads;
    if (runs) {
      if (node->accumulates) {
        accumulate_into_leaf(*node, std::move(grad));
      } else {
        EMBER_CHECK(!node->released,
                    "Trying to backward through the graph a second time (or directly access saved tensors after they "
                    "have already been freed). Saved intermediate values of the graph are freed when you call "
                    ".backward(). Specify retain_graph=true if you need to backward through the graph a second time.");
        struct RunningScope {
          Node* previous;
          explicit RunningScope(Node* mine) : previous(g_running_node) { g_running_node = mine; }
          ~RunningScope() { g_running_node = previous; }
        } running(node);
        input_grads = node->slots > 1 ? node->gather(slot_grads) : node->backward(grad);
        EMBER_CHECK(input_grads.size() == node->next.size(), "[autograd] ", node->name, " returned ",
                    input_grads.size(), " gradients for ", node->next.size(), " inputs");
        if (AnomalyMode::is_enabled()) check_for_nan(*node, input_grads);
      }
    }
    if (!keep_graph && !node->accumulates && (runs || targets.empty())) {
      node->backward = nullptr;
      node->gather = nullptr;
      node->released = true;
    }
    for (size_t i = 0; i < node->next.size(); ++i) {
      Node* next = node->next[i].node.get();
      if (!next || !task.needs(next)) continue;
      if (i < input_grads.size() && input_grads[i].defined()) {
        const InputMeta& meta = node->inputs[i];
        Tensor g = sum_to(input_grads[i], meta.sizes);
        if (g.device() != meta.device) {
          // Only a 0-dim CPU operand of a GPU op gets a gradient from another device; anything
          // else is a backward formula that made its result on the wrong device.
          EMBER_CHECK(meta.device.is_cpu() && meta.sizes.empty(), "Function ", node->name,
                      " returned an invalid gradient at index ", i, " - expected device ", meta.device, " but got ",
                      g.device());
          g = g.to(meta.device);
        }
        if (g.dtype() != meta.dtype) g = g.to(meta.dtype);
        Tensor* slot = nullptr;
        if (next->slots > 1) {
          std::vector<Tensor>& slots = slot_buffers[next];
          if (slots.empty()) slots.resize(next->slots);
          slot = &slots[node->next[i].slot];
        } else {
          slot = &buffers[next];
        }
        accumulate_into_buffer(*slot, g);
      }
      if (--task.dependencies[next] == 0) ready.push(next);
    }
  }
  // Callbacks may queue further callbacks; those run too.
  for (size_t i = 0; i < final_callbacks.size(); ++i) {
    auto callback = std::move(final_callbacks[i]);
    callback();
  }
  if (captured) {
    captured->clear();
    for (Node* n : targets.nodes) {
      auto it = target_grads.find(n);
      captured->push_back(it == target_grads.end() ? Tensor() : it->second);
    }
  }
}

}  // namespace

bool in_grad_call() { return g_in_grad_call; }

void queue_callback(std::function<void()> callback) {
  EMBER_CHECK(g_final_callbacks != nullptr,
              "queue_callback: no backward pass is running on this thread; call it from a backward function or a "
              "gradient hook");
  g_final_callbacks->push_back(std::move(callback));
}

}  // namespace autograd

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  autograd::run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, {}, nullptr);
}

std::vector<Tensor> autograd::grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                                   bool create_graph, std::optional<bool> allow_unused_arg, bool materialize_grads) {
  EMBER_CHECK(!(materialize_grads && allow_unused_arg == false),
              "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
              "allow_unused=False.");
  const bool allow_unused = allow_unused_arg.value_or(materialize_grads);
  EMBER_CHECK(!inputs.empty(), "grad requires one or more inputs");
  Targets targets;
  std::vector<std::shared_ptr<Node>> keep_alive;  // a leaf's accumulator lives only while referenced
  for (size_t i = 0; i < inputs.size(); ++i) {
    detail::check_defined(inputs[i], "grad");
    EMBER_CHECK(inputs[i].requires_grad(), "One of the differentiated Tensors does not require grad (input ", i, ")");
    keep_alive.push_back(gradient_node(inputs[i]));
    targets.nodes.push_back(keep_alive.back().get());
  }
  std::vector<Tensor> grads;
  run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, targets, &grads);
  for (size_t i = 0; i < grads.size(); ++i) {
    EMBER_CHECK(grads[i].defined() || allow_unused,
                "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True "
                "if this is the desired behavior. (input ",
                i, ")");
    if (!grads[i].defined() && materialize_grads) grads[i] = zeros_like(inputs[i]).requires_grad_();
  }
  return grads;
}

// ---- Tensor's autograd methods ----

bool Tensor::requires_grad() const {
  const auto& meta = impl().autograd;
  if (meta && meta->requires_grad) return true;
  if (impl().view_base) return autograd::grad_fn_of(*this) != nullptr;  // may have gained one through its base
  return meta && meta->grad_fn;
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  EMBER_CHECK(!requires_grad || is_floating_point(),
              "only Tensors of floating point and complex dtype can require gradients (got ", dtype_name(dtype()), ")");
  if (!is_leaf()) {
    EMBER_CHECK(requires_grad,
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().");
    return *this;
  }
  if (!impl().autograd) impl().autograd = std::make_shared<AutogradMeta>();
  impl().autograd->requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const { return autograd::grad_fn_of(*this) == nullptr; }

Tensor Tensor::grad() const {
  const auto& meta = impl().autograd;
  if (meta && meta->grad.defined()) return meta->grad;
  if (meta && !meta->retains_grad && !is_leaf()) {
    warn(
        "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be "
        "populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf "
        "Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure "
        "you access the leaf Tensor instead.");
  }
  return Tensor();
}

void Tensor::retain_grad() const {
  detail::check_defined(*this, "retain_grad");
  EMBER_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf()) return;  // a leaf's gradient is kept anyway
  const std::shared_ptr<autograd::Node>& fn = autograd::grad_fn_of(*this);
  impl().autograd->retains_grad = true;
  fn->retains_grad_of = impl_ptr();
}

bool Tensor::retains_grad() const { return impl().autograd && impl().autograd->retains_grad && !is_leaf(); }

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined()) {
    EMBER_CHECK(same_dims(grad.sizes(), sizes()),
                "assigned grad has data of a different size: ", detail::shape_str(grad.sizes()), " vs ",
                detail::shape_str(sizes()));
    EMBER_CHECK(grad.dtype() == dtype(), "assigned grad has data of a different type: ", dtype_name(grad.dtype()),
                " vs ", dtype_name(dtype()));
    EMBER_CHECK(grad.device() == device(), "assigned grad has data located on a different device: ", grad.device(),
                " vs ", device());
  }
  if (!impl().autograd) impl().autograd = std::make_shared<AutogradMeta>();
  impl().autograd->grad = grad;
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph) const {
  ember::backward({*this}, {gradient}, retain_graph, create_graph);
}

void HookHandle::remove() {
  if (remover_) std::exchange(remover_, nullptr)();
}

HookHandle register_post_accumulate_grad_hook(const Tensor& leaf, PostAccumulateGradHook hook) {
  detail::check_defined(leaf, "register_post_accumulate_grad_hook");
  EMBER_CHECK(leaf.requires_grad(),
              "cannot register a hook on a tensor that doesn't require gradient; call requires_grad_() first");
  EMBER_CHECK(leaf.is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
  EMBER_CHECK(hook != nullptr, "register_post_accumulate_grad_hook: the hook is empty");
  const uint64_t id = g_hook_ids.fetch_add(1);
  leaf.impl().autograd->post_accumulate_hooks.emplace_back(id, std::move(hook));
  return HookHandle([meta = std::weak_ptr<AutogradMeta>(leaf.impl().autograd), id] {
    if (auto m = meta.lock())
      std::erase_if(m->post_accumulate_hooks, [&](const auto& entry) { return entry.first == id; });
  });
}

HookHandle register_hook(const Tensor& tensor, TensorHook hook) {
  detail::check_defined(tensor, "register_hook");
  EMBER_CHECK(tensor.requires_grad(),
              "cannot register a hook on a tensor that doesn't require gradient; call requires_grad_() first");
  EMBER_CHECK(hook != nullptr, "register_hook: the hook is empty");
  const uint64_t id = g_hook_ids.fetch_add(1);
  auto erase = [id](std::vector<std::pair<uint64_t, TensorHook>>& hooks) {
    std::erase_if(hooks, [&](const auto& entry) { return entry.first == id; });
  };
  if (tensor.is_leaf()) {
    tensor.impl().autograd->tensor_hooks.emplace_back(id, std::move(hook));
    return HookHandle([meta = std::weak_ptr<AutogradMeta>(tensor.impl().autograd), erase] {
      if (auto m = meta.lock()) erase(m->tensor_hooks);
    });
  }
  const std::shared_ptr<autograd::Node>& fn = autograd::grad_fn_of(tensor);
  fn->tensor_hooks.emplace_back(id, std::move(hook));
  return HookHandle([node = std::weak_ptr<autograd::Node>(fn), erase] {
    if (auto n = node.lock()) erase(n->tensor_hooks);
  });
}

std::string Tensor::grad_fn_name() const {
  const auto& fn = autograd::grad_fn_of(*this);
  return fn ? std::string(fn->name) : std::string();
}

}  // namespace ember
