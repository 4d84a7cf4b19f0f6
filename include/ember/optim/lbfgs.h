#pragma once
/// torch.optim.LBFGS: limited-memory BFGS over all parameters as one flat vector, with an
/// optional strong-Wolfe line search. step() takes a closure that re-evaluates the model: it
/// clears the gradients, computes the loss, calls backward() and returns the loss.
///   ember::optim::LBFGS opt(model.parameters(), {.line_search_fn = "strong_wolfe"});
///   opt.step([&] { opt.zero_grad(); Tensor loss = loss_fn(model(x), y); loss.backward(); return loss; });
/// As PyTorch's, it holds one parameter group, reads the loss and a few dot products on the host
/// every iteration (its decisions depend on them), and keeps its scalars (t, H_diag, ro, the
/// losses) in double on the host; float32 parameters therefore round those scalars less than
/// PyTorch, which keeps them as float32 tensors.
///
/// State (of the first parameter, as PyTorch keeps it): "func_evals" and "n_iter" (int64 0-dim),
/// "d" and "prev_flat_grad" (flat, the parameters' dtype and device), "t", "H_diag" and "prev_loss"
/// (float64 0-dim on the CPU), and PyTorch's lists as numbered entries: "old_dirs.<i>",
/// "old_stps.<i>" (flat) and "ro.<i>" (0-dim). PyTorch's scratch list "al" is not kept.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct LBFGSOptions {
  double lr = 1;
  int64_t max_iter = 20;
  std::optional<int64_t> max_eval = std::nullopt;  // None: max_iter * 5 / 4
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  int64_t history_size = 100;
  std::string line_search_fn = "";  // "" (None) or "strong_wolfe"
  bool maximize = false;
};

/// "line_search_fn" in the group's Options: 0 for None, 1 for "strong_wolfe".
constexpr double kLBFGSNoLineSearch = 0, kLBFGSStrongWolfe = 1;

class LBFGS : public Optimizer {
 public:
  using Closure = std::function<Tensor()>;
  LBFGS(std::vector<Tensor> params, LBFGSOptions options = {});
  LBFGS(std::vector<ParamGroup> groups, LBFGSOptions defaults = {});

  /// Runs up to max_iter iterations; returns the closure's first loss. The closure runs with
  /// gradients enabled; the parameter updates under NoGradGuard.
  Tensor step(const Closure& closure);

 protected:
  /// Optimizer::step() without a closure: refused, as LBFGS needs to re-evaluate the loss.
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
  Tensor loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const override;

 private:
  struct Iteration;  // lbfgs.cpp
  Tensor gather_flat_grad() const;
  void add_grad(double step_size, const Tensor& direction);
  /// f and its flat gradient at x + t d (the parameters are x again afterwards).
  std::pair<double, Tensor> directional_evaluate(const Closure& closure, const std::vector<Tensor>& x, double t,
                                                 const Tensor& d);
  int64_t numel() const;
};

}  // namespace ember::optim
