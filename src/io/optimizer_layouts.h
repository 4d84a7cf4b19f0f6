#pragma once
// How each of ember's optimizers appears in PyTorch's optimizer state_dict (torch.optim's
// Optimizer.state_dict() in PyTorch 2.15): its param_group keys in PyTorch's order and Python
// types, and the names of its per-parameter state. Internal to src/io (pytorch_state.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::io::layouts {

/// One key of a param_group.
struct GroupKey {
  enum class Kind : uint8_t {
    Number,  // a float option, under the same name in ember
    Int,     // an integer option (max_iter, ns_steps, ...), saved as a Python int
    Bool,    // a boolean option, 0 or 1 in ember
    Tuple,   // a tuple of options: `parts` names them in ember ("?eps1": None when ember's group lacks it)
    Choice,  // None or one of the strings `parts` lists: ember keeps its index (parts[0] is None)
    None,    // PyTorch implementation choices ember has no option for, held at PyTorch's default
    False,
    True,
  };
  const char* torch_name;
  Kind kind;
  std::vector<const char*> parts = {};

  /// A hyper-parameter of the update (as opposed to PyTorch's implementation choices): one that
  /// names the optimizer when it is there, and must be there in a state for this optimizer.
  bool is_hyper_parameter() const { return kind <= Kind::Choice; }
  /// One PyTorch's __setstate__ fills in for states saved before the option existed.
  bool may_be_absent() const { return kind == Kind::Bool || kind >= Kind::None; }
};

/// How the per-parameter state is written.
enum class StateForm : uint8_t {
  Tensors,  // name -> tensor
  LBFGS,    // PyTorch's LBFGS: Python numbers and lists of tensors beside tensors (see pytorch_state.cpp)
};

struct OptimizerLayout {
  const char* name;
  std::vector<GroupKey> keys;
  /// Every name the optimizer keeps per parameter, in the order PyTorch inserts them.
  std::vector<const char*> state_names;
  /// What a parameter's state must hold once it has any (an empty state is made at the next step).
  std::vector<std::string> (*required_state)(const Tensor& param) = nullptr;
  StateForm form = StateForm::Tensors;

  const GroupKey* key(const std::string& torch_name) const;
  bool keeps_state(const std::string& name) const;
};

/// The layout of `optimizer`'s class, or nullptr for a user's optimizer.
const OptimizerLayout* layout_of(const optim::Optimizer& optimizer);
/// Every layout, for naming the optimizer a mismatched state came from.
const std::vector<const OptimizerLayout*>& all_layouts();

}  // namespace ember::io::layouts
