#pragma once
/// Einstein summation: torch.einsum (src/ops/einsum.cpp).
#include <cstdint>
#include <string_view>
#include <vector>

#include "ember/indexing.h"
#include "ember/tensor.h"

namespace ember {

/// As torch.einsum(equation, *operands) without opt_einsum (torch.backends.opt_einsum off):
/// the operands are contracted left to right, each pair with one batched matrix product.
///
/// The equation names each operand's dimensions with letters [a-zA-Z], operands separated by
/// ',' (spaces are ignored), and optionally the output's after '->':
///  - `"ij,jk->ik"`: a label shared by operands is multiplied along; one missing from the output
///    is summed over (also a label that appears in only one operand, `"ij->i"`);
///  - `"ii->i"`, `"ii"`: a label repeated within one operand takes that operand's diagonal;
///  - `"...ij,...jk"`: '...' stands for the dimensions no label names; they broadcast between
///    operands (a size-1 dimension stretches), and so do labelled dimensions of size 1;
///  - without '->' the output is '...' followed by the labels that appear exactly once, in
///    alphabetical order with upper case first (as NumPy's).
/// Products run on ember's permute/reshape/diagonal/sum/bmm, so every device's matrix-product
/// kernels do the work and autograd records those ops; a result that needs no product (one
/// operand without summed labels, `"ij->ji"`, `"ii->i"`) is a view of the operand, as in PyTorch.
/// Operands that meet in a product must share a dtype (PyTorch's "expected scalar type ..."); an
/// outer product (`"i,j->ij"`) is a multiplication and promotes. PyTorch's checks and messages.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);

/// One subscript of einsum's sublist form: an integer label in [0, 52) (0-25 are the equation's
/// 'A'-'Z', 26-51 its 'a'-'z') or `Ellipsis` (ember/indexing.h's, the equation's '...').
class EinsumSubscript {
 public:
  EinsumSubscript(int64_t label) : label_(label) {}    // NOLINT(google-explicit-constructor): {0, 1}
  EinsumSubscript(EllipsisIndex) : ellipsis_(true) {}  // NOLINT(google-explicit-constructor)
  bool is_ellipsis() const { return ellipsis_; }
  int64_t label() const { return label_; }

 private:
  int64_t label_ = 0;
  bool ellipsis_ = false;
};
using EinsumSublist = std::vector<EinsumSubscript>;

/// An operand of the sublist form with its subscripts.
struct EinsumOperand {
  Tensor tensor;
  EinsumSublist subscripts;
};

/// torch.einsum(op1, sublist1, op2, sublist2, ..., [sublist_out]): the sublist form, written
/// `einsum({{a, {0, 1}}, {b, {1, 2}}}, {0, 2})` (as "ab,bc->ac" with a = 26) or, without the
/// output's sublist, `einsum({{x, {Ellipsis, 0, 0}}})` (the implicit output, "...AA").
/// The sublists become the equation they stand for, so everything above holds. A subscript
/// outside [0, 52) is PyTorch's error.
Tensor einsum(const std::vector<EinsumOperand>& operands);
Tensor einsum(const std::vector<EinsumOperand>& operands, const EinsumSublist& output);

}  // namespace ember
