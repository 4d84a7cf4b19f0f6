// Adafactor, written as torch/optim/_adafactor.py's single-tensor implementation writes it, op for
// op; the scalars it computes in Python are computed here on the host in double.
#include "ember/optim/adafactor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/check.h"
#include "ember/dtype.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "optim/update_helpers.h"

namespace ember::optim {
namespace {

using namespace update;  // NOLINT(google-build-using-namespace): the rules' shared helpers

Options adafactor_options(const AdafactorOptions& o) {
  EMBER_CHECK(o.lr >= 0.0, "Learning rate should be >= 0 but is: ", python_float(o.lr));
  EMBER_CHECK(o.beta2_decay <= 0.0, "beta2_decay should be <= 0 but is: ", python_float(o.beta2_decay));
  EMBER_CHECK(!o.eps1 || *o.eps1 >= 0.0, "epsilon1 should be >= 0 but is: ", python_float(o.eps1.value_or(0)));
  EMBER_CHECK(o.eps2 >= 0.0, "epsilon2 should be >= 0 but is: ", python_float(o.eps2));
  EMBER_CHECK(o.d >= 1.0, "Clipping threshold d should be >= 1 but is: ", python_float(o.d));
  EMBER_CHECK(o.weight_decay >= 0.0, "weight_decay should be >= 0 but is: ", python_float(o.weight_decay));
  Options options{{"lr", o.lr}, {"beta2_decay", o.beta2_decay},   {"eps2", o.eps2},
                  {"d", o.d},   {"weight_decay", o.weight_decay}, {"maximize", flag(o.maximize)}};
  if (o.eps1) options["eps1"] = *o.eps1;
  return options;
}

/// torch.finfo(dtype).eps for the floating dtypes.
double machine_epsilon(Dtype dtype) {
  switch (dtype) {
    case kFloat64:
      return std::numeric_limits<double>::epsilon();
    case kFloat16:
      return 0.0009765625;  // 2^-10
    case kBFloat16:
      return 0.0078125;  // 2^-7
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

/// mean(g * g) over `dim` as PyTorch computes it: the squared 2-norm over the size.
Tensor mean_square(const Tensor& g, int64_t dim) {
  Tensor norm = vector_norm(g, 2.0, {dim}, /*keepdim=*/true);
  return norm.mul(norm) / static_cast<double>(g.size(dim));
}

}  // namespace

Adafactor::Adafactor(std::vector<Tensor> params, AdafactorOptions options)
    : Adafactor(single_group(std::move(params)), options) {}
Adafactor::Adafactor(std::vector<ParamGroup> groups, AdafactorOptions defaults)
    : Optimizer(std::move(groups), adafactor_options(defaults)) {}

void Adafactor::update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
                       const Tensor& skip) {
  const bool factored = grad.dim() > 1;
  if (state.empty()) {
    state["step"] = zero_step();
    if (factored) {
      std::vector<int64_t> row_shape = grad.sizes().vec(), col_shape = grad.sizes().vec();
      row_shape.back() = 1;
      col_shape[col_shape.size() - 2] = 1;
      state["row_var"] = zeros(row_shape, TensorOptions(grad.dtype()).device(grad.device()));
      state["col_var"] = zeros(col_shape, TensorOptions(grad.dtype()).device(grad.device()));
    } else {
      state["variance"] = zeros_like(grad);
    }
  }
  OpByOpSkip flag(skip, param);
  if (flag.skipped()) return;
  Tensor row_var = factored ? state["row_var"] : Tensor();
  Tensor col_var = factored ? state["col_var"] : Tensor();
  Tensor variance = factored ? Tensor() : state["variance"];
  flag.keep({&param, &row_var, &col_var, &variance});

  const double lr = group.lr(), weight_decay = group.get("weight_decay");
  const double eps1 = group.has("eps1") ? group.get("eps1") : machine_epsilon(param.dtype());
  const double eps2 = group.get("eps2");
  Tensor g = group.get("maximize") != 0 ? grad.neg() : grad;
  const double step = increment_step(state);
  const double one_minus_beta2 = std::pow(step, group.get("beta2_decay"));
  const double rho = std::min(lr, 1.0 / std::pow(step, 0.5));
  // The relative step: rho times the parameter's RMS (at least eps2), read on the host as PyTorch does.
  const double param_rms = param.norm(2.0).item<double>() / std::pow(static_cast<double>(param.numel()), 0.5);
  const double alpha = std::max(eps2, param_rms) * rho;

  if (weight_decay != 0) param.mul_(1.0 - lr * weight_decay);

  Tensor var_estimate;
  if (factored) {
    lerp_(row_var, mean_square(g, -1), one_minus_beta2);
    lerp_(col_var, mean_square(g, -2), one_minus_beta2);
    var_estimate = matmul(row_var, col_var);
    var_estimate.div_(row_var.mean({-2}, /*keepdim=*/true).clamp(eps1));
  } else {
    lerp_(variance, g.mul(g), one_minus_beta2);
    var_estimate = variance.clone();
  }
  // eps1 squared, since the root is taken after.
  Tensor update = var_estimate.clamp(eps1 * eps1).rsqrt();
  update.mul_(g);
  const double update_rms = update.norm(2.0).item<double>();
  const double denom =
      std::max(1.0, update_rms / (std::pow(static_cast<double>(update.numel()), 0.5) * group.get("d")));
  param.add_(update, -alpha / denom);
  flag.finish();
}

Tensor Adafactor::loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const {
  if (name != "row_var" && name != "col_var") return Optimizer::loaded_state(name, saved, param);
  std::vector<int64_t> expected = param.sizes().vec();
  EMBER_CHECK(expected.size() >= 2, "optimizer state '", name, "' is for a parameter of two or more dimensions, but ",
              "its parameter has size ", detail::shape_str(param.sizes()));
  expected[expected.size() - (name == "row_var" ? 1 : 2)] = 1;
  Tensor value = saved.detach().to(param.device(), param.dtype(), /*non_blocking=*/false, /*copy=*/true);
  EMBER_CHECK(value.sizes().vec() == expected, "optimizer state '", name, "' has size ",
              detail::shape_str(value.sizes()), " but its parameter of size ", detail::shape_str(param.sizes()),
              " needs ", detail::shape_str(expected));
  return value;
}

}  // namespace ember::optim
