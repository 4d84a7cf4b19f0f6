// LBFGS, written as torch/optim/lbfgs.py writes it (its two-loop recursion, its stopping rules and
// its strong-Wolfe line search with cubic interpolation, minFunc's), with its scalars in double on
// the host.
#include "ember/optim/lbfgs.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <utility>

#include "core/check.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "optim/update_helpers.h"

namespace ember::optim {
namespace {

using namespace update;  // NOLINT(google-build-using-namespace): the rules' shared helpers

Options lbfgs_options(const LBFGSOptions& o) {
  check_lr(o.lr);
  EMBER_CHECK(o.line_search_fn.empty() || o.line_search_fn == "strong_wolfe", "only 'strong_wolfe' is supported");
  return {{"lr", o.lr},
          {"max_iter", static_cast<double>(o.max_iter)},
          {"max_eval", static_cast<double>(o.max_eval.value_or(o.max_iter * 5 / 4))},
          {"tolerance_grad", o.tolerance_grad},
          {"tolerance_change", o.tolerance_change},
          {"history_size", static_cast<double>(o.history_size)},
          {"line_search_fn", o.line_search_fn.empty() ? kLBFGSNoLineSearch : kLBFGSStrongWolfe},
          {"maximize", flag(o.maximize)}};
}

double dot(const Tensor& a, const Tensor& b) { return a.mul(b).sum().item<double>(); }
double abs_max(const Tensor& t) { return t.abs().max().item<double>(); }

/// The minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, within the bounds
/// (the interval between x1 and x2 when none are given); their midpoint when the cubic has none.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2,
                         std::optional<std::pair<double, double>> bounds = std::nullopt) {
  auto [lo, hi] = bounds ? *bounds : (x1 <= x2 ? std::pair{x1, x2} : std::pair{x2, x1});
  const double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  const double d2_square = d1 * d1 - g1 * g2;
  if (d2_square >= 0) {
    const double d2 = std::sqrt(d2_square);
    const double min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                                    : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
    return std::min(std::max(min_pos, lo), hi);
  }
  return (lo + hi) / 2.0;
}

struct LineSearchResult {
  double f;
  Tensor g;
  double t;
  int64_t func_evals;
};

using Objective = std::function<std::pair<double, Tensor>(double t)>;

/// A step t along d satisfying the strong Wolfe conditions (sufficient decrease c1, curvature c2):
/// first a bracket, grown by cubic extrapolation, then zoomed into by cubic interpolation.
LineSearchResult strong_wolfe(const Objective& obj, double t, const Tensor& d, double f, const Tensor& g0, double gtd,
                              double tolerance_change, int64_t max_ls, double c1 = 1e-4, double c2 = 0.9) {
  const double d_norm = abs_max(d);
  Tensor g = g0.clone();
  auto [f_new, g_new] = obj(t);
  int64_t ls_func_evals = 1;
  double gtd_new = dot(g_new, d);

  double t_prev = 0, f_prev = f, gtd_prev = gtd;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<double> bracket, bracket_f, bracket_gtd;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    if (f_new > (f + c1 * t * gtd) || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {t};
      bracket_f = {f_new};
      bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {t_prev, t};
      bracket_f = {f_prev, f_new};
      bracket_g = {g_prev, g_new.clone()};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    // Extrapolate, between 1.01 t and 10 t.
    const double min_step = t + 0.01 * (t - t_prev);
    const double max_step = t * 10;
    const double previous = t;
    t = cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, std::pair{min_step, max_step});
    t_prev = previous;
    f_prev = f_new;
    g_prev = g_new.clone();
    gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ls_func_evals += 1;
    gtd_new = dot(g_new, d);
    ls_iter += 1;
  }
  if (ls_iter == max_ls) {  // no bracket within the evaluations allowed
    bracket = {0, t};
    bracket_f = {f, f_new};
    bracket_g = {g, g_new};
  }

  // Zoom: shrink the bracket until a point satisfies the conditions or it is too small.
  bool insufficient_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1] - bracket[0]) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]);
    // A point too near the bracket's ends makes little progress: after twice, or at an end, move
    // it to 10% of the bracket from the nearer end.
    const double b_max = std::max(bracket[0], bracket[1]), b_min = std::min(bracket[0], bracket[1]);
    const double eps = 0.1 * (b_max - b_min);
    if (std::min(b_max - t, t - b_min) < eps) {
      if (insufficient_progress || t >= b_max || t <= b_min) {
        t = std::abs(t - b_max) < std::abs(t - b_min) ? b_max - eps : b_min + eps;
        insufficient_progress = false;
      } else {
        insufficient_progress = true;
      }
    } else {
      insufficient_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ls_func_evals += 1;
    gtd_new = dot(g_new, d);
    ls_iter += 1;
    if (f_new > (f + c1 * t * gtd) || f_new >= bracket_f[low]) {
      bracket[high] = t;  // not enough decrease: the new high end
      bracket_f[high] = f_new;
      bracket_g[high] = g_new.clone();
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1;
      high = 1 - low;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= 0) {
        bracket[high] = bracket[low];  // the old low end becomes the high end
        bracket_f[high] = bracket_f[low];
        bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t;
      bracket_f[low] = f_new;
      bracket_g[low] = g_new.clone();
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], ls_func_evals};
}

Tensor host_scalar(double value) { return scalar_tensor(value, kFloat64); }
Tensor host_count(int64_t value) { return scalar_tensor(value, kInt64); }

/// PyTorch's list `name` kept as numbered entries "name.0", "name.1", ...
std::deque<Tensor> read_list(const std::map<std::string, Tensor>& state, const std::string& name) {
  std::deque<Tensor> list;
  for (size_t i = 0;; ++i) {
    auto it = state.find(name + "." + std::to_string(i));
    if (it == state.end()) break;
    list.push_back(it->second);
  }
  return list;
}

void write_list(std::map<std::string, Tensor>& state, const std::string& name, const std::deque<Tensor>& list) {
  std::erase_if(state, [&](const auto& entry) { return entry.first.rfind(name + ".", 0) == 0; });
  for (size_t i = 0; i < list.size(); ++i) state[name + "." + std::to_string(i)] = list[i];
}

}  // namespace

LBFGS::LBFGS(std::vector<Tensor> params, LBFGSOptions options) : LBFGS(single_group(std::move(params)), options) {}
LBFGS::LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults)
    : Optimizer(std::move(groups), lbfgs_options(defaults)) {
  EMBER_CHECK(param_groups().size() == 1, "LBFGS doesn't support per-parameter options (parameter groups)");
}

void LBFGS::update(const ParamGroup&, Tensor&, const Tensor&, std::map<std::string, Tensor>&, const Tensor&) {
  EMBER_CHECK(false, "LBFGS.step() needs a closure that re-evaluates the model and returns the loss: call ",
              "step(closure)");
}

Tensor LBFGS::loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const {
  Tensor value = saved.detach();
  const bool flat =
      name == "d" || name == "prev_flat_grad" || name.rfind("old_dirs.", 0) == 0 || name.rfind("old_stps.", 0) == 0;
  if (!flat) return value.to(Device(DeviceType::CPU), /*non_blocking=*/false, /*copy=*/true);  // host scalars
  value = value.to(param.device(), param.dtype(), /*non_blocking=*/false, /*copy=*/true);
  EMBER_CHECK(value.dim() == 1 && value.numel() == numel(), "optimizer state '", name, "' has size ",
              detail::shape_str(value.sizes()), " but LBFGS's parameters hold ", numel(), " elements");
  return value;
}

int64_t LBFGS::numel() const {
  int64_t total = 0;
  for (const Tensor& p : param_groups()[0].params) total += p.numel();
  return total;
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const Tensor& p : param_groups()[0].params) {
    Tensor g = p.grad();
    views.push_back(g.defined() ? g.reshape({-1}) : zeros({p.numel()}, TensorOptions(p.dtype()).device(p.device())));
  }
  Tensor flat = cat(views, 0);
  if (param_groups()[0].get("maximize") != 0) flat = flat.neg();
  return flat;
}

void LBFGS::add_grad(double step_size, const Tensor& direction) {
  int64_t offset = 0;
  for (Tensor& p : param_groups()[0].params) {
    const int64_t n = p.numel();
    p.add_(direction.narrow(0, offset, n).view(p.sizes()), step_size);
    offset += n;
  }
}

std::pair<double, Tensor> LBFGS::directional_evaluate(const Closure& closure, const std::vector<Tensor>& x, double t,
                                                      const Tensor& d) {
  add_grad(t, d);
  double loss;
  {
    EnableGradGuard enable_grad;
    loss = closure().item<double>();
  }
  if (param_groups()[0].get("maximize") != 0) loss = -loss;
  Tensor flat_grad = gather_flat_grad();
  auto& params = param_groups()[0].params;
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(x[i]);
  return {loss, flat_grad};
}

Tensor LBFGS::step(const Closure& closure) {
  EMBER_CHECK(param_groups().size() == 1, "LBFGS doesn't support per-parameter options (parameter groups)");
  NoGradGuard no_grad;
  auto evaluate = [&] {
    EnableGradGuard enable_grad;
    return closure();
  };
  const ParamGroup& group = param_groups()[0];
  if (group.params.empty()) return evaluate();
  const double lr = group.lr();
  const auto max_iter = static_cast<int64_t>(group.get("max_iter"));
  const auto max_eval = static_cast<int64_t>(group.get("max_eval"));
  const double tolerance_grad = group.get("tolerance_grad"), tolerance_change = group.get("tolerance_change");
  const auto history_size = static_cast<size_t>(group.get("history_size"));
  const bool line_search = group.get("line_search_fn") == kLBFGSStrongWolfe;
  const bool maximize = group.get("maximize") != 0;

  std::map<std::string, Tensor>& state = this->state(0);
  auto count = [&](const char* name) { return state.count(name) ? state[name].item<int64_t>() : int64_t{0}; };
  int64_t func_evals = count("func_evals"), state_n_iter = count("n_iter");

  Tensor orig_loss = evaluate();
  double loss = maximize ? -orig_loss.item<double>() : orig_loss.item<double>();
  int64_t current_evals = 1;
  func_evals += 1;
  auto save_counts = [&] {
    state["func_evals"] = host_count(func_evals);
    state["n_iter"] = host_count(state_n_iter);
  };

  Tensor flat_grad = gather_flat_grad();
  bool opt_cond = abs_max(flat_grad) <= tolerance_grad;
  if (opt_cond) {  // already optimal
    save_counts();
    return orig_loss;
  }

  // What the previous step left.
  Tensor d = state.count("d") ? state["d"] : Tensor();
  Tensor prev_flat_grad = state.count("prev_flat_grad") ? state["prev_flat_grad"] : Tensor();
  double t = state.count("t") ? state["t"].item<double>() : 0.0;
  double h_diag = state.count("H_diag") ? state["H_diag"].item<double>() : 1.0;
  double prev_loss = state.count("prev_loss") ? state["prev_loss"].item<double>() : 0.0;
  std::deque<Tensor> old_dirs = read_list(state, "old_dirs"), old_stps = read_list(state, "old_stps");
  std::deque<double> ro;
  for (const Tensor& r : read_list(state, "ro")) ro.push_back(r.item<double>());
  // A state loaded from elsewhere (a flat state_dict) could pair histories of different lengths,
  // which the two-loop recursion below would read past.
  EMBER_CHECK(old_dirs.size() == old_stps.size() && old_dirs.size() == ro.size() && old_dirs.size() <= history_size,
              "LBFGS: the state's histories differ in length (old_dirs ", old_dirs.size(), ", old_stps ",
              old_stps.size(), ", ro ", ro.size(), ", history_size ", history_size,
              "); load a state this optimizer saved");
  std::vector<double> al(history_size);

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    n_iter += 1;
    state_n_iter += 1;

    // The descent direction.
    if (state_n_iter == 1) {
      d = flat_grad.neg();
      old_dirs.clear();
      old_stps.clear();
      ro.clear();
      h_diag = 1;
    } else {
      // Update the memory with the last step's curvature pair, if it keeps the Hessian positive.
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor s = d * t;
      const double ys = dot(y, s);
      if (ys > 1e-10) {
        if (old_dirs.size() == history_size) {
          // Python's list.pop(0) on PyTorch's empty history (history_size=0).
          EMBER_CHECK(!old_dirs.empty(), "pop from empty list");
          old_dirs.pop_front();
          old_stps.pop_front();
          ro.pop_front();
        }
        old_dirs.push_back(y);
        old_stps.push_back(s);
        ro.push_back(1.0 / ys);
        h_diag = ys / dot(y, y);  // the initial Hessian's scale
      }
      // The two-loop recursion: d = -H g.
      const size_t num_old = old_dirs.size();
      Tensor q = flat_grad.neg();
      for (size_t k = num_old; k-- > 0;) {
        al[k] = dot(old_stps[k], q) * ro[k];
        q.add_(old_dirs[k], -al[k]);
      }
      Tensor r = q * h_diag;
      for (size_t k = 0; k < num_old; ++k) {
        const double be_k = dot(old_dirs[k], r) * ro[k];
        r.add_(old_stps[k], al[k] - be_k);
      }
      d = r;
    }
    if (!prev_flat_grad.defined()) {
      prev_flat_grad = flat_grad.clone();
    } else {
      prev_flat_grad.copy_(flat_grad);
    }
    prev_loss = loss;

    // The step length: the first one reset by the gradient's size.
    t = state_n_iter == 1 ? std::min(1.0, 1.0 / flat_grad.abs().sum().item<double>()) * lr : lr;
    const double gtd = dot(flat_grad, d);  // directional derivative
    if (gtd > -tolerance_change) break;    // not a descent direction

    int64_t ls_func_evals = 0;
    if (line_search) {
      std::vector<Tensor> x_init;
      for (const Tensor& p : group.params) x_init.push_back(p.clone());
      Objective obj = [&](double step) { return directional_evaluate(closure, x_init, step, d); };
      LineSearchResult found =
          strong_wolfe(obj, t, d, loss, flat_grad, gtd, tolerance_change, max_eval - current_evals);
      loss = found.f;
      flat_grad = found.g;
      t = found.t;
      ls_func_evals = found.func_evals;
      add_grad(t, d);
      opt_cond = abs_max(flat_grad) <= tolerance_grad;
    } else {
      add_grad(t, d);  // a fixed step
      if (n_iter != max_iter) {
        // Re-evaluate, unless this is the last iteration (the next step's first evaluation
        // serves).
        Tensor value = evaluate();
        loss = maximize ? -value.item<double>() : value.item<double>();
        flat_grad = gather_flat_grad();
        opt_cond = abs_max(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    func_evals += ls_func_evals;

    // Stopping rules.
    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;                                       // optimal
    if (abs_max(d * t) <= tolerance_change) break;             // the step barely moves
    if (std::abs(loss - prev_loss) < tolerance_change) break;  // the loss barely changes
  }

  save_counts();
  state["d"] = d;
  state["t"] = host_scalar(t);
  write_list(state, "old_dirs", old_dirs);
  write_list(state, "old_stps", old_stps);
  std::deque<Tensor> ro_tensors;
  for (double r : ro) ro_tensors.push_back(host_scalar(r));
  write_list(state, "ro", ro_tensors);
  state["H_diag"] = host_scalar(h_diag);
  state["prev_flat_grad"] = prev_flat_grad;
  state["prev_loss"] = host_scalar(prev_loss);
  return orig_loss;
}

}  // namespace ember::optim
