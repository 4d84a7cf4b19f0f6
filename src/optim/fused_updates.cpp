// The optimizers' fused updates, gathered per Optimizer::step into multi-tensor backend calls.
#include "optim/fused_updates.h"

#include <exception>
#include <span>

#include "backend/backend.h"

namespace ember::optim::fusion {
namespace {

thread_local FusedUpdates* t_current = nullptr;

TensorView view_or_null(const Tensor& t) { return t.defined() ? view_of(t) : TensorView{}; }

bool same_skip(const Tensor& a, const Tensor& b) {
  return a.defined() == b.defined() && (!a.defined() || a.is_same(b));
}

/// Whether two updates go into one backend call: one rule, device, dtype and skip flag.
bool same_call(const FusedUpdates::Update& a, const FusedUpdates::Update& b) {
  return a.step.index() == b.step.index() && a.param.device() == b.param.device() &&
         a.param.dtype() == b.param.dtype() && same_skip(a.skip, b.skip);
}

void call(Backend& backend, std::span<const OptimTensors> tensors, std::span<const kernels::SgdStep> steps,
          const TensorView& skip) {
  backend.multi_tensor_sgd_step(tensors, steps, skip);
}
void call(Backend& backend, std::span<const OptimTensors> tensors, std::span<const kernels::AdamStep> steps,
          const TensorView& skip) {
  backend.multi_tensor_adam_step(tensors, steps, skip);
}
void call(Backend& backend, std::span<const OptimTensors> tensors, std::span<const kernels::AdadeltaStep> steps,
          const TensorView& skip) {
  backend.multi_tensor_adadelta_step(tensors, steps, skip);
}
void call(Backend& backend, std::span<const OptimTensors> tensors, std::span<const kernels::RmspropStep> steps,
          const TensorView& skip) {
  backend.multi_tensor_rmsprop_step(tensors, steps, skip);
}

/// One backend call for `group`, updates that same_call() puts together.
void run(std::span<const FusedUpdates::Update* const> group) {
  const FusedUpdates::Update& first = *group.front();
  std::vector<OptimTensors> tensors;
  tensors.reserve(group.size());
  for (const FusedUpdates::Update* u : group) {
    tensors.push_back(OptimTensors{view_of(u->param),
                                   view_of(u->grad),
                                   {view_or_null(u->state[0]), view_or_null(u->state[1]), view_or_null(u->state[2])}});
  }
  std::visit(
      [&]<typename S>(const S&) {
        std::vector<S> steps;
        steps.reserve(group.size());
        for (const FusedUpdates::Update* u : group) steps.push_back(std::get<S>(u->step));
        call(backend_for(first.param.device()), tensors, steps, view_or_null(first.skip));
      },
      first.step);
}

void submit(FusedUpdates::Update update) {
  if (FusedUpdates* batch = FusedUpdates::current()) {
    batch->add(std::move(update));
    return;
  }
  const FusedUpdates::Update* one[] = {&update};
  run(one);
}

}  // namespace

FusedUpdates::FusedUpdates() : previous_(t_current), uncaught_(std::uncaught_exceptions()) { t_current = this; }

FusedUpdates::~FusedUpdates() {
  t_current = previous_;
  if (!queued_.empty() && std::uncaught_exceptions() > uncaught_) {
    try {
      launch();
    } catch (...) {  // NOLINT(bugprone-empty-catch): the exception on its way out is the one to report
    }
  }
}

FusedUpdates* FusedUpdates::current() { return t_current; }

void FusedUpdates::launch() {
  const std::vector<Update> queued = std::move(queued_);
  queued_.clear();
  std::vector<bool> done(queued.size(), false);
  std::vector<const Update*> group;
  for (size_t i = 0; i < queued.size(); ++i) {
    if (done[i]) continue;
    group.clear();
    for (size_t j = i; j < queued.size(); ++j) {
      if (!done[j] && same_call(queued[i], queued[j])) {
        group.push_back(&queued[j]);
        done[j] = true;
      }
    }
    run(group);
  }
}

void fused_sgd_step(const Tensor& param, const Tensor& grad, const Tensor& momentum_buffer,
                    const kernels::SgdStep& step, const Tensor& skip) {
  submit({param, grad, {momentum_buffer, Tensor(), Tensor()}, step, skip});
}

void fused_adam_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const Tensor& max_exp_avg_sq, const kernels::AdamStep& step, const Tensor& skip) {
  submit({param, grad, {exp_avg, exp_avg_sq, max_exp_avg_sq}, step, skip});
}

void fused_adadelta_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& acc_delta,
                         const kernels::AdadeltaStep& step, const Tensor& skip) {
  submit({param, grad, {square_avg, acc_delta, Tensor()}, step, skip});
}

void fused_rmsprop_step(const Tensor& param, const Tensor& grad, const Tensor& square_avg, const Tensor& grad_avg,
                        const Tensor& momentum_buffer, const kernels::RmspropStep& step, const Tensor& skip) {
  submit({param, grad, {square_avg, grad_avg, momentum_buffer}, step, skip});
}

}  // namespace ember::optim::fusion
