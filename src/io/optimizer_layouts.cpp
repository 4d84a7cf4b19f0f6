// The param_group keys and state names of torch.optim's optimizers as PyTorch 2.15 saves them
// (printed from its state_dict() after a few steps), one table per ember optimizer.
#include "io/optimizer_layouts.h"

#include <algorithm>

#include "ember/optim/optimizers.h"

namespace ember::io::layouts {

const GroupKey* OptimizerLayout::key(const std::string& torch_name) const {
  for (const GroupKey& k : keys)
    if (torch_name == k.torch_name) return &k;
  return nullptr;
}

bool OptimizerLayout::keeps_state(const std::string& name) const {
  return std::any_of(state_names.begin(), state_names.end(), [&](const char* n) { return name == n; });
}

namespace {

using K = GroupKey::Kind;

// Once a parameter has state, the entries its update reads without creating them.
std::vector<std::string> needs_nothing(const Tensor&) { return {}; }
template <const char* const* Names, size_t N>
std::vector<std::string> needs(const Tensor&) {
  return std::vector<std::string>(Names, Names + N);
}
constexpr const char* kAdamNeeds[] = {"step", "exp_avg", "exp_avg_sq"};
constexpr const char* kAdadeltaNeeds[] = {"step", "square_avg", "acc_delta"};
constexpr const char* kRMSpropNeeds[] = {"step", "square_avg"};
constexpr const char* kAdagradNeeds[] = {"step", "sum"};
constexpr const char* kAdamaxNeeds[] = {"step", "exp_avg", "exp_inf"};
constexpr const char* kNAdamNeeds[] = {"step", "mu_product", "exp_avg", "exp_avg_sq"};
constexpr const char* kRpropNeeds[] = {"step", "prev", "step_size"};
constexpr const char* kASGDNeeds[] = {"step", "eta", "mu", "ax"};
constexpr const char* kMuonNeeds[] = {"momentum_buffer"};
// Adafactor factors the second moment of a matrix (or a stack of them) into rows and columns.
std::vector<std::string> adafactor_needs(const Tensor& param) {
  if (param.dim() >= 2) return {"step", "row_var", "col_var"};
  return {"step", "variance"};
}

const OptimizerLayout kSGD{"SGD",
                           {{"lr", K::Number},
                            {"momentum", K::Number},
                            {"dampening", K::Number},
                            {"weight_decay", K::Number},
                            {"nesterov", K::Bool},
                            {"maximize", K::Bool},
                            {"foreach", K::None},
                            {"differentiable", K::False},
                            {"fused", K::None}},
                           {"momentum_buffer"},
                           needs_nothing};

OptimizerLayout adam(const char* name, bool decoupled) {
  return OptimizerLayout{name,
                         {{"lr", K::Number},
                          {"betas", K::Tuple, {"beta1", "beta2"}},
                          {"eps", K::Number},
                          {"weight_decay", K::Number},
                          {"amsgrad", K::Bool},
                          {"maximize", K::Bool},
                          {"foreach", K::None},
                          {"capturable", K::False},
                          {"differentiable", K::False},
                          {"fused", K::None},
                          {"decoupled_weight_decay", decoupled ? K::True : K::False}},
                         {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
                         needs<kAdamNeeds, 3>};
}
const OptimizerLayout kAdam = adam("Adam", false), kAdamW = adam("AdamW", true);

const OptimizerLayout kAdadelta{"Adadelta",
                                {{"lr", K::Number},
                                 {"rho", K::Number},
                                 {"eps", K::Number},
                                 {"weight_decay", K::Number},
                                 {"maximize", K::Bool},
                                 {"capturable", K::False},
                                 {"foreach", K::None},
                                 {"differentiable", K::False}},
                                {"step", "square_avg", "acc_delta"},
                                needs<kAdadeltaNeeds, 3>};

const OptimizerLayout kRMSprop{"RMSprop",
                               {{"lr", K::Number},
                                {"momentum", K::Number},
                                {"alpha", K::Number},
                                {"eps", K::Number},
                                {"centered", K::Bool},
                                {"weight_decay", K::Number},
                                {"capturable", K::False},
                                {"foreach", K::None},
                                {"maximize", K::Bool},
                                {"differentiable", K::False}},
                               {"step", "square_avg", "momentum_buffer", "grad_avg"},
                               needs<kRMSpropNeeds, 2>};

const OptimizerLayout kAdagrad{"Adagrad",
                               {{"lr", K::Number},
                                {"lr_decay", K::Number},
                                {"eps", K::Number},
                                {"weight_decay", K::Number},
                                {"initial_accumulator_value", K::Number},
                                {"foreach", K::None},
                                {"maximize", K::Bool},
                                {"differentiable", K::False},
                                {"fused", K::None}},
                               {"step", "sum"},
                               needs<kAdagradNeeds, 2>};

const OptimizerLayout kAdamax{"Adamax",
                              {{"lr", K::Number},
                               {"betas", K::Tuple, {"beta1", "beta2"}},
                               {"eps", K::Number},
                               {"weight_decay", K::Number},
                               {"foreach", K::None},
                               {"maximize", K::Bool},
                               {"differentiable", K::False},
                               {"capturable", K::False}},
                              {"step", "exp_avg", "exp_inf"},
                              needs<kAdamaxNeeds, 3>};

const OptimizerLayout kNAdam{"NAdam",
                             {{"lr", K::Number},
                              {"betas", K::Tuple, {"beta1", "beta2"}},
                              {"eps", K::Number},
                              {"weight_decay", K::Number},
                              {"momentum_decay", K::Number},
                              {"decoupled_weight_decay", K::Bool},
                              {"maximize", K::Bool},
                              {"foreach", K::None},
                              {"capturable", K::False},
                              {"differentiable", K::False}},
                             {"step", "mu_product", "exp_avg", "exp_avg_sq"},
                             needs<kNAdamNeeds, 4>};

const OptimizerLayout kRAdam{"RAdam",
                             {{"lr", K::Number},
                              {"betas", K::Tuple, {"beta1", "beta2"}},
                              {"eps", K::Number},
                              {"weight_decay", K::Number},
                              {"maximize", K::Bool},
                              {"foreach", K::None},
                              {"capturable", K::False},
                              {"decoupled_weight_decay", K::Bool},
                              {"differentiable", K::False}},
                             {"step", "exp_avg", "exp_avg_sq"},
                             needs<kAdamNeeds, 3>};

const OptimizerLayout kRprop{"Rprop",
                             {{"lr", K::Number},
                              {"etas", K::Tuple, {"etaminus", "etaplus"}},
                              {"step_sizes", K::Tuple, {"step_size_min", "step_size_max"}},
                              {"foreach", K::None},
                              {"maximize", K::Bool},
                              {"differentiable", K::False},
                              {"capturable", K::False}},
                             {"step", "prev", "step_size"},
                             needs<kRpropNeeds, 3>};

const OptimizerLayout kASGD{"ASGD",
                            {{"lr", K::Number},
                             {"lambd", K::Number},
                             {"alpha", K::Number},
                             {"t0", K::Number},
                             {"weight_decay", K::Number},
                             {"foreach", K::None},
                             {"maximize", K::Bool},
                             {"differentiable", K::False},
                             {"capturable", K::False}},
                            {"step", "eta", "mu", "ax"},
                            needs<kASGDNeeds, 4>};

const OptimizerLayout kAdafactor{"Adafactor",
                                 {{"lr", K::Number},
                                  {"beta2_decay", K::Number},
                                  {"eps", K::Tuple, {"?eps1", "eps2"}},
                                  {"d", K::Number},
                                  {"weight_decay", K::Number},
                                  {"foreach", K::None},
                                  {"maximize", K::Bool}},
                                 {"step", "row_var", "col_var", "variance"},
                                 adafactor_needs};

// adjust_lr_fn's strings by ember's code (kMuonAdjustLr*): 0 is None.
const OptimizerLayout kMuon{
    "Muon",
    {{"lr", K::Number},
     {"weight_decay", K::Number},
     {"momentum", K::Number},
     {"nesterov", K::Bool},
     {"ns_coefficients", K::Tuple, {"ns_a", "ns_b", "ns_c"}},
     {"eps", K::Number},
     {"ns_steps", K::Int},
     {"adjust_lr_fn", K::Choice, {nullptr, "original", "match_rms_adamw", "spectral_unclamped"}}},
    {"momentum_buffer"},
    needs<kMuonNeeds, 1>};

// LBFGS keeps one state, under its first parameter. "al" is the two-loop recursion's scratch list.
const OptimizerLayout kLBFGS{
    "LBFGS",
    {{"lr", K::Number},
     {"max_iter", K::Int},
     {"max_eval", K::Int},
     {"tolerance_grad", K::Number},
     {"tolerance_change", K::Number},
     {"history_size", K::Int},
     {"line_search_fn", K::Choice, {nullptr, "strong_wolfe"}},
     {"maximize", K::Bool}},
    {"func_evals", "n_iter", "d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad", "prev_loss", "al"},
    needs_nothing,
    StateForm::LBFGS};

}  // namespace

const OptimizerLayout* layout_of(const optim::Optimizer& o) {
  // AdamW derives from Adam: test it first.
  if (dynamic_cast<const optim::AdamW*>(&o)) return &kAdamW;
  if (dynamic_cast<const optim::Adam*>(&o)) return &kAdam;
  if (dynamic_cast<const optim::SGD*>(&o)) return &kSGD;
  if (dynamic_cast<const optim::Adadelta*>(&o)) return &kAdadelta;
  if (dynamic_cast<const optim::RMSprop*>(&o)) return &kRMSprop;
  if (dynamic_cast<const optim::Adagrad*>(&o)) return &kAdagrad;
  if (dynamic_cast<const optim::Adamax*>(&o)) return &kAdamax;
  if (dynamic_cast<const optim::NAdam*>(&o)) return &kNAdam;
  if (dynamic_cast<const optim::RAdam*>(&o)) return &kRAdam;
  if (dynamic_cast<const optim::Rprop*>(&o)) return &kRprop;
  if (dynamic_cast<const optim::ASGD*>(&o)) return &kASGD;
  if (dynamic_cast<const optim::Adafactor*>(&o)) return &kAdafactor;
  if (dynamic_cast<const optim::Muon*>(&o)) return &kMuon;
  if (dynamic_cast<const optim::LBFGS*>(&o)) return &kLBFGS;
  return nullptr;  // a user's optimizer: its options are written as floats
}

const std::vector<const OptimizerLayout*>& all_layouts() {
  static const std::vector<const OptimizerLayout*> all{&kSGD,     &kAdam,      &kAdamW, &kAdadelta, &kRMSprop,
                                                       &kAdagrad, &kAdamax,    &kNAdam, &kRAdam,    &kRprop,
                                                       &kASGD,    &kAdafactor, &kMuon,  &kLBFGS};
  return all;
}

}  // namespace ember::io::layouts
