// CTC loss composed from ops. Each sample's target becomes the extended sequence
// l' = (blank, l1, blank, l2, ..., lL, blank) of 2L + 1 states; the forward variables alpha (log
// probability of every path prefix ending in state s at frame t) run over time on [N, 2S + 1]
// tensors, one logsumexp over the three allowed predecessors (s, s - 1, and s - 2 when l'[s]
// differs from l'[s - 2]) per frame. Only the time loop is a loop: the batch and the states are
// vectorised, and samples of different lengths read their loss at their own last frame.
//
// The predecessors are read without copying: each frame's alpha lives in a row of a
// [T, N, S' + 2] buffer whose first two columns stay -inf, so that columns s, s + 1 and s + 2 of
// the row are states s - 2, s - 1 and s for every s at once (narrow views). The disallowed s - 2
// transitions are removed by adding a mask of 0 / -inf made once.
//
// The gradient is not autograd's through this recursion: PyTorch's kernel returns
// exp(log_probs) - exp(log(sum of alpha * beta over the states of class c) + nll - log_probs),
// which equals the recursion's gradient only after a log_softmax. So the forward runs unrecorded
// and one CtcLossBackward0 node runs the backward variables beta and applies that formula.
//
// A dedicated kernel (PyTorch has one for CPU and one for CUDA) would be faster: here every frame
// costs a few op launches and the state vectors make round trips through memory.
#include "ember/nn/ctc_loss.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "nn/reduce_loss.h"

namespace ember::nn {

namespace functional {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr const char* kWhileChecking = " (while checking arguments for ctc_loss_allocate_outputs)";

std::vector<int64_t> host_int64(const Tensor& t) {
  NoGradGuard no_grad;
  const Tensor c = t.detach().cpu().to(kInt64).contiguous();
  const int64_t* data = c.data_ptr<int64_t>();
  return std::vector<int64_t>(data, data + c.numel());
}

std::vector<int64_t> lengths_of(const Tensor& lengths, const char* name) {
  ember::detail::check_defined(lengths, "ctc_loss");
  EMBER_CHECK(!lengths.is_floating_point() && lengths.dtype() != kBool, name, " must be integral");
  return host_int64(lengths);
}

// Everything about the targets the recursions need, built once on the host: the extended label
// sequences and the masks that encode which transitions and states count.
struct Plan {
  int64_t frames = 0;  // T
  int64_t batch = 0;   // N
  int64_t classes = 0;
  int64_t states = 0;  // S' = 2 * max target length + 1
  std::vector<int64_t> input_lengths, target_lengths;
  Tensor extended;        // [N, S'] int64: l', blank past each sample's own 2L + 1 states
  Tensor alpha_skip;      // [N, S', 3]: -inf in slot 0 where s - 2 -> s is not allowed, else 0
  Tensor beta_skip;       // [N, S', 3]: -inf in slot 2 where s + 2 -> s (backward) is not allowed
  Tensor first_states;    // [N, S']: 0 for states 0 and 1 (where a path may start), else -inf
  Tensor last_states;     // [N, S']: 0 for states 2L and 2L - 1 (where a path may end), else -inf
  Tensor readout;         // [N, 2] int64: positions in the alpha buffer of the two final states
  Tensor readout_mask;    // [N, 2]: 0, or -inf for a final state that does not exist
  Tensor no_frames;       // [N] bool: T_n == 0, whose loss is fixed
  Tensor no_frames_loss;  // [N]: 0 when L_n == 0 too, else inf
  Tensor is_last_frame;   // [T, N, 1] bool: t == T_n - 1
  Tensor within_input;    // [T, N, 1] bool: t < T_n
  Tensor class_of_state;  // [N, S', C]: one-hot of l'[s] over the states a path can visit
};

Plan plan_for(const Tensor& log_probs, const Tensor& targets, std::vector<int64_t> input_lengths,
              std::vector<int64_t> target_lengths, int64_t blank) {
  Plan p;
  p.frames = log_probs.size(0);
  p.batch = log_probs.size(1);
  p.classes = log_probs.size(2);
  const int64_t n_batch = p.batch;
  EMBER_CHECK(blank >= 0 && blank < p.classes, "blank must be in label range");
  EMBER_CHECK(static_cast<int64_t>(input_lengths.size()) == n_batch, "input_lengths must be of size batch_size");
  EMBER_CHECK(static_cast<int64_t>(target_lengths.size()) == n_batch, "target_lengths must be of size batch_size");
  ember::detail::check_defined(targets, "ctc_loss");
  EMBER_CHECK(targets.dim() >= 1 && targets.dim() <= 2, "Expected 1 to 2 dimensions, but got ", targets.dim(),
              "-dimensional tensor for argument #2 'targets'", kWhileChecking);
  const bool padded = targets.dim() == 2;
  if (padded) {
    EMBER_CHECK(targets.size(0) == n_batch, "Expected tensor to have size ", n_batch, " at dimension 0, but got size ",
                targets.size(0), " for argument #2 'targets'", kWhileChecking);
  }
  std::vector<int64_t> offsets(n_batch, 0);
  int64_t total = 0;
  for (int64_t n = 0; n < n_batch; ++n) {
    const int64_t length = target_lengths[n];
    EMBER_CHECK(length >= 0, "Expected target_lengths to have value at least 0, but got value ", length,
                kWhileChecking);
    if (padded) {
      EMBER_CHECK(length <= targets.size(1), "Expected tensor to have size at least ", length,
                  " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets'", kWhileChecking);
      offsets[n] = n * targets.size(1);
    } else {
      offsets[n] = total;
    }
    total += length;
  }
  if (!padded) {
    EMBER_CHECK(targets.size(0) == total, "Expected tensor to have size ", total, " at dimension 0, but got size ",
                targets.size(0), " for argument #2 'targets'", kWhileChecking);
  }
  for (int64_t n = 0; n < n_batch; ++n) {
    EMBER_CHECK(input_lengths[n] >= 0, "Expected input_lengths to have value at least 0, but got value ",
                input_lengths[n], kWhileChecking);
    EMBER_CHECK(input_lengths[n] <= p.frames, "Expected input_lengths to have value at most ", p.frames,
                ", but got value ", input_lengths[n], kWhileChecking);
  }

  const std::vector<int64_t> labels = host_int64(targets);
  const int64_t max_length = *std::max_element(target_lengths.begin(), target_lengths.end());
  const int64_t states = 2 * max_length + 1;
  const int64_t width = states + 2;  // the alpha and beta buffers' rows: two -inf columns besides
  p.states = states;

  std::vector<int64_t> extended(n_batch * states, blank);
  std::vector<double> alpha_skip(n_batch * states, 0.0), beta_skip(n_batch * states, 0.0);
  std::vector<double> first(n_batch * states, kNegInf), last(n_batch * states, kNegInf);
  std::vector<int64_t> readout(n_batch * 2, 0);
  std::vector<double> readout_mask(n_batch * 2, kNegInf), no_frames_loss(n_batch, 0.0);
  std::vector<bool> no_frames(n_batch, false);
  std::vector<bool> is_last(p.frames * n_batch, false), within(p.frames * n_batch, false);
  std::vector<double> one_hot(n_batch * states * p.classes, 0.0);
  for (int64_t n = 0; n < n_batch; ++n) {
    const int64_t length = target_lengths[n];
    for (int64_t i = 0; i < length; ++i) {
      const int64_t label = labels[offsets[n] + i];
      EMBER_CHECK(label >= 0 && label < p.classes, "ctc_loss: target ", label, " of sample ", n,
                  " is out of range for ", p.classes, " classes");
      extended[n * states + 2 * i + 1] = label;
    }
    const int64_t* row = &extended[n * states];
    for (int64_t s = 0; s < states; ++s) {
      if (s < 2 || row[s] == row[s - 2]) alpha_skip[n * states + s] = kNegInf;
      if (s + 2 >= states || row[s] == row[s + 2]) beta_skip[n * states + s] = kNegInf;
      if (s < 2) first[n * states + s] = 0.0;
      if (s <= 2 * length) one_hot[(n * states + s) * p.classes + row[s]] = 1.0;
    }
    last[n * states + 2 * length] = 0.0;
    if (length > 0) last[n * states + 2 * length - 1] = 0.0;
    const int64_t frames = input_lengths[n];
    if (frames == 0) {
      no_frames[n] = true;
      no_frames_loss[n] = length == 0 ? 0.0 : std::numeric_limits<double>::infinity();
    } else {
      const int64_t row_start = ((frames - 1) * n_batch + n) * width + 2;
      readout[2 * n] = row_start + 2 * length;
      readout_mask[2 * n] = 0.0;
      if (length > 0) {
        readout[2 * n + 1] = row_start + 2 * length - 1;
        readout_mask[2 * n + 1] = 0.0;
      }
    }
    for (int64_t t = 0; t < frames; ++t) within[t * n_batch + n] = true;
    if (frames > 0) is_last[(frames - 1) * n_batch + n] = true;
  }

  const TensorOptions real = log_probs.options();
  const TensorOptions integer = real.dtype(kInt64);
  const TensorOptions flag = real.dtype(kBool);
  p.extended = tensor(extended, integer).view({n_batch, states});
  p.alpha_skip = tensor(alpha_skip, real).view({n_batch, states});
  p.beta_skip = tensor(beta_skip, real).view({n_batch, states});
  p.first_states = tensor(first, real).view({n_batch, states});
  p.last_states = tensor(last, real).view({n_batch, states});
  p.readout = tensor(readout, integer);
  p.readout_mask = tensor(readout_mask, real).view({n_batch, 2});
  p.no_frames = tensor(no_frames, flag);
  p.no_frames_loss = tensor(no_frames_loss, real);
  p.is_last_frame = tensor(is_last, flag).view({p.frames, n_batch, 1});
  p.within_input = tensor(within, flag).view({p.frames, n_batch, 1});
  p.class_of_state = tensor(one_hot, real).view({n_batch, states, p.classes});
  p.input_lengths = std::move(input_lengths);
  p.target_lengths = std::move(target_lengths);
  return p;
}

// log(exp(a) + exp(b) + exp(c + skip)) for the three predecessors of every state at frame `t` of
// a [T, N, S' + 2] buffer: columns s, s + 1, s + 2 of its row t, as [N, S'] views. Written with
// elementwise ops rather than logsumexp over a window of 3, whose reduction costs several times
// more at these sizes. All three -inf gives -inf: the maximum is clamped to a finite value.
Tensor log_add_exp3(const Tensor& buffer, int64_t t, const Tensor& skip_first, const Tensor& skip_last) {
  const Tensor row = buffer.select(0, t);
  const int64_t states = buffer.size(2) - 2;
  Tensor a = row.narrow(1, 0, states), b = row.narrow(1, 1, states), c = row.narrow(1, 2, states);
  if (skip_first.defined()) a = a + skip_first;
  if (skip_last.defined()) c = c + skip_last;
  const double lowest =
      buffer.dtype() == kFloat32 ? -std::numeric_limits<float>::max() : -std::numeric_limits<double>::max();
  const Tensor peak = clamp(maximum(maximum(a, b), c), lowest, std::nullopt);
  return log(exp(a - peak) + exp(b - peak) + exp(c - peak)) + peak;
}

// The backward variables beta (log probability of every path suffix from state s at frame t,
// including frame t's emission), as a [T, N, S' + 2] buffer whose last two columns stay -inf.
Tensor backward_variables(const Plan& p, const Tensor& emissions) {
  Tensor beta = full({p.frames, p.batch, p.states + 2}, kNegInf, emissions.options());
  const Tensor nothing_after = full({p.batch, p.states}, kNegInf, emissions.options());
  for (int64_t t = p.frames - 1; t >= 0; --t) {
    const Tensor from_later = t + 1 < p.frames ? log_add_exp3(beta, t + 1, Tensor(), p.beta_skip) : nothing_after;
    const Tensor value = where(p.is_last_frame.select(0, t), p.last_states, from_later) + emissions.select(0, t);
    beta.select(0, t).narrow(1, 0, p.states).copy_(value);
  }
  return beta;
}

// PyTorch's gradient for log_probs [T, N, C] given the loss's gradient per sample.
Tensor log_probs_gradient(const Plan& p, const Tensor& log_probs, const Tensor& emissions, const Tensor& alpha,
                          const Tensor& nll, const Tensor& grad_nll, bool zero_infinity) {
  NoGradGuard no_grad;
  const Tensor beta = backward_variables(p, emissions);
  // log(alpha * beta) per state; alpha and beta both hold frame t's emission.
  const Tensor both = alpha.narrow(2, 2, p.states) + beta.narrow(2, 0, p.states);  // [T, N, S']
  Tensor peak = amax(both, {2}, true);
  peak = where(peak == kNegInf, zeros({}, peak.options()), peak);  // frames no path crosses
  // Sum the states of each class: exp(both - peak) [N, T, S'] times the one-hot [N, S', C].
  const Tensor per_class = matmul(exp(both - peak).permute({1, 0, 2}), p.class_of_state).permute({1, 0, 2});
  const Tensor log_alignments = log(per_class) + peak;  // [T, N, C]
  const Tensor loss = nll.view({1, p.batch, 1});
  Tensor grad = (exp(log_probs) - exp(log_alignments + loss - log_probs)) * grad_nll.view({1, p.batch, 1});
  const Tensor zero = zeros({}, grad.options());
  grad = where(p.within_input, grad, zero);
  if (zero_infinity) grad = where(loss == std::numeric_limits<double>::infinity(), zero, grad);
  return grad;
}

Tensor ctc_loss_impl(const Tensor& log_probs, const Tensor& targets, std::vector<int64_t> input_lengths,
                     std::vector<int64_t> target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  ember::detail::check_defined(log_probs, "ctc_loss");
  EMBER_CHECK(log_probs.numel() > 0, "log_probs tensor must not be empty");
  EMBER_CHECK(log_probs.dtype() == kFloat32 || log_probs.dtype() == kFloat64, "\"ctc_loss_",
              log_probs.device().is_cpu() ? "cpu" : "cuda", "\" not implemented for '",
              scalar_type_name(log_probs.dtype()), "'");
  // PyTorch adds the batch dimension to anything not 3-D, then insists on 3-D.
  const bool batched = log_probs.dim() == 3;
  const Tensor input = batched ? log_probs : log_probs.unsqueeze(1);
  EMBER_CHECK(input.dim() == 3, "Expected 3-dimensional tensor, but got ", input.dim(),
              "-dimensional tensor for argument #1 'log_probs'", kWhileChecking);
  const std::vector<int64_t> lengths_copy = target_lengths;
  Plan p = plan_for(input, targets, std::move(input_lengths), std::move(target_lengths), blank);

  Tensor nll;
  Tensor emissions, alpha;
  {
    NoGradGuard no_grad;
    const Tensor lp = input.detach();
    // emissions[t, n, s] = log_probs[t, n, l'[n, s]]
    emissions = gather(lp, 2, p.extended.unsqueeze(0).expand({p.frames, p.batch, p.states}).contiguous());
    alpha = full({p.frames, p.batch, p.states + 2}, kNegInf, lp.options());
    alpha.select(0, 0).narrow(1, 2, p.states).copy_(emissions.select(0, 0) + p.first_states);
    for (int64_t t = 1; t < p.frames; ++t) {
      const Tensor value = log_add_exp3(alpha, t - 1, p.alpha_skip, Tensor()) + emissions.select(0, t);
      alpha.select(0, t).narrow(1, 2, p.states).copy_(value);
    }
    const Tensor finals = index_select(alpha.view({-1}), 0, p.readout).view({p.batch, 2}) + p.readout_mask;
    nll = where(p.no_frames, p.no_frames_loss, -logsumexp(finals, {1}));
  }
  if (autograd::needs_grad({&input})) {
    autograd::record(
        nll, "CtcLossBackward0", {&input},
        [p = std::move(p), saved = autograd::SavedTensor(input), emissions, alpha, nll = nll.detach(),
         zero_infinity](const Tensor& grad_nll) {
          const Tensor lp = saved.get().detach();
          return std::vector<Tensor>{log_probs_gradient(p, lp, emissions, alpha, nll, grad_nll, zero_infinity)};
        });
  }

  Tensor loss = batched ? nll : nll.squeeze(0);
  if (zero_infinity) loss = where(loss == std::numeric_limits<double>::infinity(), zeros({}, loss.options()), loss);
  if (reduction == Reduction::Mean) {
    const Tensor divisors = clamp(tensor(lengths_copy, loss.options().dtype(kInt64)), 1.0, std::nullopt);
    return (loss / divisors.to(loss.dtype())).mean();
  }
  return reduce_loss(loss, reduction);
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  std::vector<int64_t> inputs = lengths_of(input_lengths, "input_lengths");
  std::vector<int64_t> target = lengths_of(target_lengths, "target_lengths");
  return ctc_loss_impl(log_probs, targets, std::move(inputs), std::move(target), blank, reduction, zero_infinity);
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, IntList input_lengths, IntList target_lengths,
                int64_t blank, Reduction reduction, bool zero_infinity) {
  return ctc_loss_impl(log_probs, targets, std::vector<int64_t>(input_lengths.begin(), input_lengths.end()),
                       std::vector<int64_t>(target_lengths.begin(), target_lengths.end()), blank, reduction,
                       zero_infinity);
}

}  // namespace functional

Tensor CTCLoss::forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                        const Tensor& target_lengths) {
  return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity);
}

Tensor CTCLoss::forward(const Tensor& log_probs, const Tensor& targets, IntList input_lengths, IntList target_lengths) {
  return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction, zero_infinity);
}

}  // namespace ember::nn
