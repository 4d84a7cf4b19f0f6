// Sampling with tensor parameters (ember/sampling.h), composed of ember's uniform and normal
// draws. multinomial with replacement inverts each row's cumulative distribution
// (searchsorted); without replacement it takes the top num_samples of w / e for exponential
// draws e, the exponential-race form of sampling without replacement that PyTorch uses too.
// The argument checks wait for the device, as PyTorch's CPU checks read the values.
#include "ember/sampling.h"

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/scan.h"
#include "ember/sort.h"

namespace ember {

using detail::check_defined;

Tensor bernoulli(const Tensor& p) {
  detail::OpContext context("bernoulli", {{"input", &p}});
  check_defined(p, "bernoulli");
  EMBER_CHECK(p.is_floating_point(), "bernoulli_tensor_cpu_p_ not implemented for '", scalar_type_name(p.dtype()), "'");
  NoGradGuard no_grad;
  if (p.numel() != 0) {
    const auto [lo, hi] = aminmax(p);
    EMBER_CHECK(lo.item<double>() >= 0 && hi.item<double>() <= 1,
                "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  "
                "If so, please report an enhancement request to PyTorch.)");
  }
  return lt(rand(p.sizes(), p.options()), p).to(p.dtype());
}

Tensor bernoulli(const Tensor& input, double p) {
  check_defined(input, "bernoulli");
  EMBER_CHECK(p >= 0 && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  NoGradGuard no_grad;
  const TensorOptions draw = TensorOptions(input.is_floating_point() ? input.dtype() : kFloat32).device(input.device());
  return lt(rand(input.sizes(), draw), full({}, p, draw)).to(input.dtype());
}

namespace {

void check_std(const Tensor& std) {
  if (std.numel() == 0) return;
  NoGradGuard no_grad;
  EMBER_CHECK(amin(std).item<double>() >= 0, "normal expects all elements of std >= 0.0");
}

}  // namespace

Tensor normal(const Tensor& mean, const Tensor& std) {
  detail::OpContext context("normal", {{"mean", &mean}, {"std", &std}});
  check_defined(mean, "normal");
  check_defined(std, "normal");
  check_std(std);
  const Dims sizes = broadcast_shapes(mean.sizes(), std.sizes());
  const Dtype dtype = result_type(mean, std);
  return mean + std * randn(sizes, TensorOptions(dtype).device(mean.device()));
}

Tensor normal(const Tensor& mean, double std) {
  check_defined(mean, "normal");
  EMBER_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  return mean + std * randn(mean.sizes(), mean.options());
}

Tensor normal(double mean, const Tensor& std) {
  check_defined(std, "normal");
  check_std(std);
  return mean + std * randn(std.sizes(), std.options());
}

Tensor multinomial(const Tensor& input, int64_t num_samples, bool replacement) {
  detail::OpContext context("multinomial", {{"input", &input}});
  check_defined(input, "multinomial");
  EMBER_CHECK(input.is_floating_point(),
              "multinomial only supports floating-point dtypes for input, got: ", scalar_type_name(input.dtype()));
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "prob_dist must be 1 or 2 dim");
  EMBER_CHECK(num_samples > 0, "cannot sample n_sample <= 0 samples");
  const int64_t categories = input.size(-1);
  EMBER_CHECK(replacement || num_samples <= categories,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  NoGradGuard no_grad;
  const Tensor w = input.dim() == 1 ? input.unsqueeze(0) : input;
  const Tensor bad = logical_or(logical_not(isfinite(w)), lt(w, zeros({}, w.options())));
  EMBER_CHECK(!any(bad).item<bool>(), "probability tensor contains either `inf`, `nan` or element < 0");
  const Tensor totals = sum(w, {-1}, /*keepdim=*/true);
  EMBER_CHECK(amin(totals).item<double>() > 0, "invalid multinomial distribution (sum of probabilities <= 0)");
  const int64_t rows = w.size(0);
  Tensor samples;
  if (replacement) {
    const Tensor cdf = cumsum(w / totals, -1).contiguous();
    const Tensor u = rand({rows, num_samples}, w.options());
    // The first category whose cumulative probability exceeds u; rounding can leave the last
    // cumulative value just under u, so the result is clamped into range.
    samples = clamp(searchsorted(cdf, u, false, /*right=*/true), 0, categories - 1);
  } else {
    EMBER_CHECK(amin(count_nonzero(w, {-1})).item<int64_t>() >= num_samples,
                "invalid multinomial distribution (with replacement=False, not enough non-negative category to "
                "sample)");
    const Tensor e = -log1p(-rand(w.sizes(), w.options()));  // exponential(1) draws
    samples = std::get<1>(topk(w / e, num_samples, -1));
  }
  return input.dim() == 1 ? samples.squeeze(0) : samples;
}

}  // namespace ember
