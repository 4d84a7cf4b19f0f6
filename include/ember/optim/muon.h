#pragma once
/// torch.optim.Muon (PyTorch 2.15): momentum, then the update orthogonalised by a few quintic
/// Newton-Schulz iterations run in bfloat16, for 2-D parameters (hidden layers' weights; give the
/// others to AdamW). Options under PyTorch's names; `ns_coefficients` = (a, b, c) as "ns_a",
/// "ns_b", "ns_c"; `adjust_lr_fn` as a number (kMuonAdjustLr*); booleans as 0/1.
///   ember::optim::Muon opt(weights, {.lr = 0.02, .adjust_lr_fn = "match_rms_adamw"});
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::optim {

/// adjust_lr_fn in a group's Options: None, "original", "match_rms_adamw", "spectral_unclamped".
constexpr double kMuonAdjustLrNone = 0, kMuonAdjustLrOriginal = 1, kMuonAdjustLrMatchRmsAdamW = 2,
                 kMuonAdjustLrSpectralUnclamped = 3;

struct MuonOptions {
  double lr = 1e-3;
  double weight_decay = 0.1;
  double momentum = 0.95;
  bool nesterov = true;
  double ns_a = 3.4445;  // ns_coefficients, from Keller Jordan's Muon
  double ns_b = -4.7750;
  double ns_c = 2.0315;
  double eps = 1e-7;
  int64_t ns_steps = 5;
  /// "" (None, which means "original"), "original", "match_rms_adamw" or "spectral_unclamped".
  std::string adjust_lr_fn = "";
};

/// State per parameter: "momentum_buffer".
class Muon : public Optimizer {
 public:
  Muon(std::vector<Tensor> params, MuonOptions options = {});
  Muon(std::vector<ParamGroup> groups, MuonOptions defaults = {});

 protected:
  void update(const ParamGroup& group, Tensor& param, const Tensor& grad, std::map<std::string, Tensor>& state,
              const Tensor& skip) override;
};

/// Muon's orthogonalisation: `ns_steps` Newton-Schulz iterations X <- a X + (b A + c A^2) X with
/// A = X X^T, on X = G / max(||G||, eps) in bfloat16 (transposed when G has more rows than
/// columns). Returns a bfloat16 matrix of G's sizes.
Tensor zeropower_via_newtonschulz(const Tensor& grad, double a, double b, double c, int64_t ns_steps, double eps);

}  // namespace ember::optim
