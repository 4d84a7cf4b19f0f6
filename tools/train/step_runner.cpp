#include "train/step_runner.h"

#include <cmath>

#include "train/job.h"

namespace ember::train {

namespace {

// Under --nan-policy skip, the first skips of an epoch are printed; later ones only counted.
constexpr int64_t kReportedSkips = 10;

// Copies of the module's buffers (BatchNorm's running statistics): a training-mode forward
// updates them, so they are part of the state before a step. Empty for models without any.
nn::StateDict copy_buffers(const nn::Module& model) {
  nn::StateDict copy;
  for (const auto& [name, buffer] : model.named_buffers()) copy.insert(name, buffer.clone());
  return copy;
}

}  // namespace

StepRunner::StepRunner(TrainingSetup& setup, EpochStats& stats, const RunConfig& config, const TrainOptions& runtime,
                       StopAt stop_at)
    : setup_(setup),
      stats_(stats),
      config_(config),
      runtime_(runtime),
      stop_at_(std::move(stop_at)),
      verdicts_(setup.device(), setup.ranks() > 1) {}

void StepRunner::start_epoch(int64_t epoch, Progress& progress) {
  epoch_ = epoch;
  progress_ = &progress;
}

std::optional<std::string> StepRunner::first_non_finite(const Tensor& loss) const {
  // One fused check of the loss and every gradient (ember::all_finite) first; the exact search
  // below runs only when something is not finite.
  const auto& params = setup_.named_params();
  if (all_finite(loss_and_grads(loss)).item<bool>()) return std::nullopt;
  auto count = [](const Tensor& t) { return logical_not(isfinite(t)).sum().item<int64_t>(); };
  if (const int64_t bad = count(loss.detach()); bad > 0)
    return "the loss is " + std::string(std::isnan(loss.item<double>()) ? "NaN" : "infinite");
  for (const auto& [name, p] : params) {
    if (!p.grad().defined()) continue;
    if (const int64_t bad = count(p.grad()); bad > 0)
      return "the gradient of " + name + " has " + std::to_string(bad) + " non-finite values (of " +
             std::to_string(p.numel()) + ")";
  }
  return std::nullopt;  // not reached: all_finite found a value that is not finite
}

std::vector<Tensor> StepRunner::loss_and_grads(const Tensor& loss) const {
  std::vector<Tensor> tensors;
  tensors.reserve(setup_.named_params().size() + 1);
  tensors.push_back(loss.detach());
  for (const auto& [name, p] : setup_.named_params()) tensors.push_back(p.grad());
  return tensors;
}

Tensor StepRunner::rerun_alone(const PendingStep& step) {
  std::optional<nn::NoSyncGuard> local;
  if (nn::DistributedDataParallel* ddp = setup_.ddp()) local.emplace(*ddp);
  const Tensor loss = batch_loss(setup_.model(), step.batch, step.global_step);
  setup_.optimizer().zero_grad();
  loss.backward();
  return loss;
}

std::string StepRunner::find_nan_op(const PendingStep& step) {
  if (step.rng_before) setup_.set_rng_states(*step.rng_before);  // the same dropout masks as the failed step
  DetectAnomalyGuard anomaly;
  try {
    rerun_alone(step);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Tensor StepRunner::batch_loss(nn::Module& model, const data::Batch& batch, int64_t global_step) {
  std::optional<amp::autocast> region;  // --amp: the forward pass and the loss in bfloat16
  if (config_.amp) region.emplace(setup_.device().type(), kBFloat16);
  const Tensor loss = nn::functional::cross_entropy(model.forward(batch.data), batch.target);
  auto scale = runtime_.scale_loss_at_steps.find(global_step + 1);
  return scale == runtime_.scale_loss_at_steps.end() ? loss : loss * scale->second;
}

void StepRunner::launch(PendingStep next) {
  pending_.push_back(std::move(next));
  PendingStep& step = pending_.back();
  // Only when the model draws random numbers in its forward pass does the generators' state
  // before the step differ from after (reading the CPU's costs tens of microseconds).
  step.rng_before =
      setup_.uses_dropout() ? std::optional<RngStates>(setup_.rng_states(/*step_only=*/true)) : std::nullopt;
  step.buffers_before = copy_buffers(setup_.model());
  step.optimizer_before = setup_.optimizer().host_state();
  const Tensor loss = batch_loss(setup_.trained(), step.batch, step.global_step);
  setup_.optimizer().zero_grad();
  loss.backward();
  step.loss = loss.detach();
  setup_.optimizer().step(verdicts_.check(loss_and_grads(loss)));
  step.ticket = verdicts_.record();
}

void StepRunner::settle(size_t keep) {
  while (pending_.size() > keep) {
    PendingStep& oldest = pending_.front();
    const bool skipped = verdicts_.read(oldest.ticket);
    oldest.ticket = -1;
    if (skipped) {
      handle_non_finite();
      return;
    }
    stats_.add_loss(oldest.loss, oldest.batch.target.size(0));
    pending_.pop_front();
  }
}

std::string StepRunner::describe_non_finite(const PendingStep& step) {
  // Its gradients are overwritten by now: run it again.
  if (std::optional<std::string> what = first_non_finite(rerun_alone(step))) return *what;
  return setup_.ranks() > 1 ? "another rank's loss or gradients are not finite"
                            : "the loss or a gradient was not finite (and was finite when the step was run again)";
}

void StepRunner::handle_non_finite() {
  PendingStep bad = std::move(pending_.front());
  pending_.pop_front();
  // The trainer reads each verdict one step late, so at most one step was queued after it.
  std::optional<PendingStep> after;
  if (!pending_.empty()) {
    after = std::move(pending_.front());
    verdicts_.release(after->ticket);
    after->ticket = -1;
    pending_.clear();
  }
  // Since the step, the device changed no parameter and no optimizer state: put back what the
  // host changed, and the buffers and generators the forward passes moved on.
  setup_.optimizer().restore_host_state(bad.optimizer_before);
  setup_.model().load_state_dict(bad.buffers_before, /*strict=*/false);
  if (bad.rng_before) setup_.set_rng_states(*bad.rng_before);
  verdicts_.clear();
  const std::string what = describe_non_finite(bad);

  if (runtime_.nan_policy == NanPolicy::Skip) {
    // The state is now what skipping the step leaves; the step after it runs again from there.
    if (const int64_t skipped = stats_.count_skipped(); skipped <= kReportedSkips) {
      progress_->message("step " + std::to_string(bad.step + 1) + " of epoch " + std::to_string(epoch_) + ": " + what +
                         "; step skipped (--nan-policy skip)" +
                         (skipped == kReportedSkips ? "; further skips this epoch are only counted" : ""));
    }
    redo_ = std::move(after);
    return;
  }

  progress_->finish_epoch();
  const std::string op = find_nan_op(bad);
  // The step changed nothing but gradients and (in training mode) buffers: put those back, so
  // that the state stop_at_ saves is the state as it was before the batch.
  setup_.model().load_state_dict(bad.buffers_before, /*strict=*/false);
  stop_at_(bad, what, op);
}

}  // namespace ember::train
