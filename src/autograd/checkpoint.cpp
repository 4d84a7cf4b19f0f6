// autograd::checkpoint (include/ember/autograd.h): the forward pass runs the block unrecorded;
// the one recorded node re-runs it recorded when backward reaches it and runs a nested
// backward() through the second run. The engine keeps its per-pass state on the stack and
// scopes its thread-locals, so a backward pass inside a backward function is an ordinary one.
#include <optional>
#include <utility>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "core/check.h"
#include "ember/autograd.h"
#include "ember/cuda.h"
#include "ember/factories.h"
#include "ember/warning.h"

namespace ember::autograd {

namespace {

/// The generators' states a block may draw from: the CPU's always, and one GPU's (the first
/// input's), as PyTorch's checkpoint stashes them.
struct RngStates {
  Tensor cpu;
  std::optional<std::pair<int, Tensor>> cuda;

  static RngStates take(const std::vector<Tensor>& inputs) {
    RngStates states{get_rng_state(), std::nullopt};
    for (const Tensor& t : inputs) {
      if (t.defined() && t.device().is_cuda()) {
        const int index = t.device().index();
        states.cuda.emplace(index, cuda::get_rng_state(index));
        break;
      }
    }
    return states;
  }
  void restore() const {
    set_rng_state(cpu);
    if (cuda) cuda::set_rng_state(cuda->second, cuda->first);
  }
};

}  // namespace

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& inputs) {
  EMBER_CHECK(fn != nullptr, "checkpoint: the function is empty");
  if (!GradMode::is_enabled()) return fn(inputs);  // nothing would be recorded anyway
  const RngStates before = RngStates::take(inputs);
  const amp::detail::State autocast_state = amp::detail::current_state();  // the second run's too
  Tensor out;
  {
    NoGradGuard no_grad;
    out = fn(inputs);
  }
  EMBER_CHECK(out.defined(), "checkpoint: the function returned an undefined tensor");
  if (!needs_grad(inputs)) {
    warn("None of the inputs have requires_grad=True. Gradients will be None");
    return out;
  }
  std::vector<SavedTensor> saved;
  std::vector<const Tensor*> recorded_inputs;
  for (const Tensor& t : inputs) {
    saved.emplace_back(t);
    recorded_inputs.push_back(&t);
  }
  record(out, "CheckpointFunctionBackward", recorded_inputs,
         [fn, saved = std::move(saved), before, autocast_state](const Tensor& grad) {
           EMBER_CHECK(!in_grad_call(),
                       "Checkpointing is not compatible with autograd::grad(); call backward() instead, or "
                       "compute the block without checkpoint");
           EMBER_CHECK(!GradMode::is_enabled(),
                       "checkpoint: a backward pass with create_graph cannot go through a checkpointed block (its "
                       "second run is back-propagated without recording); compute the block without checkpoint");
           std::vector<Tensor> detached;
           for (const SavedTensor& s : saved) {
             const Tensor t = s.get();
             Tensor d = t.defined() ? t.detach() : Tensor();
             if (d.defined() && t.requires_grad()) d.requires_grad_();
             detached.push_back(d);
           }
           // The second run draws what the first drew; afterwards the generators go on from
           // where they were, as if it had not run.
           const RngStates now = RngStates::take(detached);
           before.restore();
           Tensor again;
           {
             EnableGradGuard enable_grad;
             amp::detail::StateGuard autocast(autocast_state);
             again = fn(detached);
           }
           now.restore();
           std::vector<Tensor> grads(detached.size());
           if (again.requires_grad()) {
             ember::backward({again}, {grad});
             for (size_t i = 0; i < detached.size(); ++i) {
               if (detached[i].defined() && detached[i].requires_grad()) grads[i] = detached[i].grad();
             }
           }
           return grads;
         });
  return out;
}

}  // namespace ember::autograd
