#pragma once
/// torch.optim.Adafactor (PyTorch 2.15): second moments factored into row and column averages
/// over the last two dimensions of a parameter with two or more, a full running average for a
/// vector; relative step sizes; update clipping; decoupled weight decay scaled by lr.
///   ember::optim::Adafactor opt(model.parameters(), {.lr = 1e-2, .weight_decay = 1e-2});
/// Options are kept under PyTorch's names; `eps` = (eps1, eps2) as "eps1" (absent when None: the
/// machine epsilon of each parameter's dtype) and "eps2". PyTorch's foreach is not offered (the
/// single-tensor form is what it runs by default). Like PyTorch, each step reads two norms on the
/// host (the parameter's RMS and the update's), so a step on a GPU waits for it twice per parameter.
#include <optional>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

struct AdafactorOptions {
  double lr = 1e-2;
  double beta2_decay = -0.8;
  std::optional<double> eps1 = std::nullopt;  // eps[0]; None: torch.finfo(param.dtype).eps
  double eps2 = 1e-3;                         // eps[1]
  double d = 1.0;
  double weight_decay = 0.0;
  bool maximize = false;
};

/// State per parameter: "step", and "row_var" (sizes [..., m, 1]) and "col_var" ([..., 1, n]) for a
/// parameter of two or more dimensions, "variance" (the parameter's sizes) for one of fewer.
class Adafactor : public Optimizer {
 public:
  Adafactor(std::vector<Tensor> params, AdafactorOptions options = {});
  Adafactor(std::vector<ParamGroup> groups, AdafactorOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
  /// The factored moments keep their own sizes.
  Tensor loaded_state(const std::string& name, const Tensor& saved, const Tensor& param) const override;
};

}  // namespace ember::optim
