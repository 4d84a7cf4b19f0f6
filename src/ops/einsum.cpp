// torch.einsum without opt_einsum, composed of views (permute, diagonal, unsqueeze, reshape),
// sum, mul and bmm: the operands are aligned to one layout (output labels first, then the
// summed ones), then contracted left to right, each pair as one batched matrix product. The
// order of the steps is PyTorch's, so the products (and their rounding) are the ones PyTorch
// computes, and autograd needs nothing of its own.
#include "ember/einsum.h"

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"

namespace ember {

namespace {

constexpr int kLetters = 26;
constexpr int kLabels = 2 * kLetters;  // A-Z are 0..25, a-z 26..51: the implicit output's order
constexpr int kEllipsis = kLabels;     // '...' in an operand's label list

bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int label_of(unsigned char c) { return c <= 'Z' ? c - 'A' : c - 'a' + kLetters; }
char letter_of(int label) { return static_cast<char>(label < kLetters ? 'A' + label : 'a' + label - kLetters); }

/// sum(left * right) over `sum_dims`, keeping them as size-1 dimensions. The operands have one
/// rank; a size-1 dimension broadcasts. Dimensions of both operands become bmm's batch, those of
/// one only its rows or columns, the summed ones its inner dimension.
Tensor pair_product(Tensor left, Tensor right, const std::vector<int64_t>& sum_dims) {
  if (sum_dims.empty()) return mul(left, right);
  const int64_t ndim = left.dim();
  std::vector<bool> summed(static_cast<size_t>(ndim), false);
  for (int64_t d : sum_dims) summed[static_cast<size_t>(d)] = true;
  std::vector<int64_t> both, left_only, right_only;
  int64_t both_size = 1, left_size = 1, right_size = 1, sum_size = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const bool in_left = left.size(d) != 1, in_right = right.size(d) != 1;
    if (summed[static_cast<size_t>(d)]) {
      if (in_left && in_right) {
        EMBER_CHECK(left.size(d) == right.size(d), "non-broadcast dimensions must match");
        sum_size *= left.size(d);
      } else if (in_left) {
        left = sum(left, {d}, true);  // summed in one operand only: no product needed
      } else if (in_right) {
        right = sum(right, {d}, true);
      }
    } else if (in_left && in_right) {
      EMBER_CHECK(left.size(d) == right.size(d), "non-broadcast dimensions must match");
      both.push_back(d);
      both_size *= left.size(d);
    } else if (in_left) {
      left_only.push_back(d);
      left_size *= left.size(d);
    } else {
      right_only.push_back(d);
      right_size *= right.size(d);
    }
  }
  // left: [both, left_only, summed]; right: [both, summed, right_only]; the product is
  // [both, left_only, right_only], viewed with the summed dimensions as 1 and permuted back.
  std::vector<int64_t> left_order = both, right_order = both, product_sizes;
  left_order.insert(left_order.end(), left_only.begin(), left_only.end());
  left_order.insert(left_order.end(), sum_dims.begin(), sum_dims.end());
  left_order.insert(left_order.end(), right_only.begin(), right_only.end());
  right_order.insert(right_order.end(), sum_dims.begin(), sum_dims.end());
  right_order.insert(right_order.end(), right_only.begin(), right_only.end());
  right_order.insert(right_order.end(), left_only.begin(), left_only.end());
  for (int64_t d : both) product_sizes.push_back(left.size(d));
  for (int64_t d : left_only) product_sizes.push_back(left.size(d));
  product_sizes.insert(product_sizes.end(), sum_dims.size(), 1);
  for (int64_t d : right_only) product_sizes.push_back(right.size(d));
  std::vector<int64_t> back(static_cast<size_t>(ndim));
  for (size_t position = 0; position < left_order.size(); ++position)
    back[static_cast<size_t>(left_order[position])] = static_cast<int64_t>(position);

  left = left.permute(left_order).reshape({both_size, left_size, sum_size});
  right = right.permute(right_order).reshape({both_size, sum_size, right_size});
  EMBER_CHECK(left.dtype() == right.dtype(), "expected scalar type ", scalar_type_name(left.dtype()), " but found ",
              scalar_type_name(right.dtype()));
  return bmm(left, right).view(product_sizes).permute(back);
}

/// The operands' labels, parsed from the equation's left-hand side.
std::vector<std::vector<int>> parse_operands(std::string_view lhs, size_t num_operands) {
  std::vector<std::vector<int>> labels(num_operands);
  bool ellipsis_seen = false;
  size_t current = 0;
  for (size_t i = 0; i < lhs.size(); ++i) {
    const auto c = static_cast<unsigned char>(lhs[i]);
    if (c == ' ') continue;
    if (c == '.') {
      EMBER_CHECK(!ellipsis_seen, "einsum(): found '.' for operand ", current,
                  " for which an ellipsis was already found");
      EMBER_CHECK(i + 2 < lhs.size() && lhs[i + 1] == '.' && lhs[i + 2] == '.', "einsum(): found '.' for operand ",
                  current, " that is not part of any ellipsis");
      i += 2;
      labels[current].push_back(kEllipsis);
      ellipsis_seen = true;
    } else if (c == ',') {
      ++current;
      EMBER_CHECK(current < num_operands, "einsum(): fewer operands were provided than specified in the equation");
      ellipsis_seen = false;
    } else {
      EMBER_CHECK(is_letter(c), "einsum(): invalid subscript given at index ", i,
                  " in the equation string, subscripts must be in [a-zA-Z]");
      labels[current].push_back(label_of(c));
    }
  }
  EMBER_CHECK(current == num_operands - 1, "einsum(): more operands were provided than specified in the equation");
  return labels;
}

/// Where each label (and the ellipsis' dimensions) sits in the common layout: the output's
/// dimensions first, then those summed over.
struct Layout {
  std::vector<int64_t> position = std::vector<int64_t>(kLabels, -1);  // per label
  int64_t ellipsis_start = 0;
  int64_t output_dims = 0;
  int64_t total_dims = 0;
};

Layout plan_layout(std::string_view equation, size_t arrow, const std::vector<int64_t>& label_count,
                   int64_t ellipsis_dims) {
  Layout layout;
  int64_t next = 0;
  bool ellipsis_in_output = false;
  if (arrow == std::string_view::npos) {
    // Implicit output: the ellipsis' dimensions, then every label seen exactly once.
    next = ellipsis_dims;
    ellipsis_in_output = true;
    for (int label = 0; label < kLabels; ++label)
      if (label_count[static_cast<size_t>(label)] == 1) layout.position[static_cast<size_t>(label)] = next++;
  } else {
    const std::string_view rhs = equation.substr(arrow + 2);
    for (size_t i = 0; i < rhs.size(); ++i) {
      const auto c = static_cast<unsigned char>(rhs[i]);
      if (c == ' ') continue;
      if (c == '.') {
        EMBER_CHECK(!ellipsis_in_output, "einsum(): found '.' for output but an ellipsis (...) was already found");
        EMBER_CHECK(i + 2 < rhs.size() && rhs[i + 1] == '.' && rhs[i + 2] == '.',
                    "einsum(): found '.' for output that is not part of any ellipsis (...)");
        i += 2;
        layout.ellipsis_start = next;
        next += ellipsis_dims;
        ellipsis_in_output = true;
        continue;
      }
      EMBER_CHECK(is_letter(c), "einsum(): invalid subscript given at index ", arrow + 2 + i,
                  " in the equation string, subscripts must be in [a-zA-Z]");
      const auto label = static_cast<size_t>(label_of(c));
      EMBER_CHECK(label_count[label] > 0 && layout.position[label] == -1, "einsum(): output subscript ",
                  static_cast<char>(c),
                  layout.position[label] > -1 ? " appears more than once in the output"
                                              : " does not appear in the equation for any input operand");
      layout.position[label] = next++;
    }
  }
  layout.output_dims = next;
  if (!ellipsis_in_output) {  // the ellipsis' dimensions are summed over
    layout.ellipsis_start = next;
    next += ellipsis_dims;
  }
  for (size_t label = 0; label < kLabels; ++label)
    if (label_count[label] > 0 && layout.position[label] == -1) layout.position[label] = next++;
  layout.total_dims = next;
  return layout;
}

/// A sublist as the equation's letters: 0-25 'A'-'Z', 26-51 'a'-'z', Ellipsis "...".
void append_sublist(std::string& equation, const EinsumSublist& sublist) {
  for (const EinsumSubscript& subscript : sublist) {
    if (subscript.is_ellipsis()) {
      equation += "...";
      continue;
    }
    EMBER_CHECK(subscript.label() >= 0 && subscript.label() < kLabels,
                "einsum(): subscript in subscript list is not within the valid range [0, 52)");
    equation += letter_of(static_cast<int>(subscript.label()));
  }
}

Tensor einsum_of_sublists(const std::vector<EinsumOperand>& operands, const EinsumSublist* output) {
  EMBER_CHECK(!operands.empty(),
              "einsum(): must specify the equation string and at least one operand, or at least one operand and its "
              "subscripts list");
  std::string equation;
  std::vector<Tensor> tensors;
  tensors.reserve(operands.size());
  for (const EinsumOperand& operand : operands) {
    if (!tensors.empty()) equation += ',';
    append_sublist(equation, operand.subscripts);
    tensors.push_back(operand.tensor);
  }
  if (output) {
    equation += "->";
    append_sublist(equation, *output);
  }
  return einsum(equation, tensors);
}

}  // namespace

Tensor einsum(const std::vector<EinsumOperand>& operands) { return einsum_of_sublists(operands, nullptr); }

Tensor einsum(const std::vector<EinsumOperand>& operands, const EinsumSublist& output) {
  return einsum_of_sublists(operands, &output);
}

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  EMBER_CHECK(!operands.empty(),
              "einsum(): must specify the equation string and at least one operand, or at least one operand and its "
              "subscripts list");
  std::optional<detail::OpContext> context;  // names the first operands (it holds four at most)
  if (operands.size() == 1) {
    context.emplace("einsum", std::initializer_list<detail::OpContext::Input>{{"operands[0]", &operands[0]}});
  } else if (operands.size() == 2) {
    context.emplace("einsum", std::initializer_list<detail::OpContext::Input>{{"operands[0]", &operands[0]},
                                                                              {"operands[1]", &operands[1]}});
  } else {
    context.emplace("einsum",
                    std::initializer_list<detail::OpContext::Input>{
                        {"operands[0]", &operands[0]}, {"operands[1]", &operands[1]}, {"operands[2]", &operands[2]}});
  }
  for (const Tensor& op : operands) detail::check_defined(op, "einsum");

  const size_t arrow = equation.find("->");
  const std::vector<std::vector<int>> labels = parse_operands(equation.substr(0, arrow), operands.size());

  // How often each label occurs, and how many dimensions the widest ellipsis covers.
  std::vector<int64_t> label_count(kLabels, 0);
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t ndim = operands[i].dim();
    auto named = static_cast<int64_t>(labels[i].size());
    bool has_ellipsis = false;
    for (int label : labels[i]) {
      if (label == kEllipsis) {
        --named;
        has_ellipsis = true;
        ellipsis_dims = std::max(ellipsis_dims, ndim - named);
      } else {
        ++label_count[static_cast<size_t>(label)];
      }
    }
    EMBER_CHECK(
        has_ellipsis ? named <= ndim : named == ndim, "einsum(): the number of subscripts in the equation (", named,
        has_ellipsis ? ") is more than the number of dimensions (" : ") does not match the number of dimensions (",
        ndim, ") for operand ", i, has_ellipsis ? "" : " and no ellipsis was given");
  }
  const Layout layout = plan_layout(equation, arrow, label_count, ellipsis_dims);

  // Align every operand to the common layout: diagonals for repeated labels, size-1 dimensions
  // for missing ones, then one permute. `nontrivial` counts the operands with a size other than
  // 1 in each dimension, which tells the contraction when a dimension can be summed.
  std::vector<int64_t> label_size(kLabels, 1), ellipsis_size(static_cast<size_t>(ellipsis_dims), 1);
  std::vector<int64_t> nontrivial(static_cast<size_t>(layout.total_dims), 0);
  std::deque<Tensor> aligned;
  for (size_t i = 0; i < operands.size(); ++i) {
    Tensor op = operands[i];
    std::vector<int64_t> order(static_cast<size_t>(layout.total_dims), -1);
    int64_t dim = 0;
    for (int label : labels[i]) {
      if (label == kEllipsis) {
        const int64_t covered = operands[i].dim() - (static_cast<int64_t>(labels[i].size()) - 1);
        for (int64_t j = ellipsis_dims - covered; j < ellipsis_dims; ++j) {
          const auto slot = static_cast<size_t>(j);
          if (op.size(dim) != 1) {
            EMBER_CHECK(ellipsis_size[slot] == 1 || ellipsis_size[slot] == op.size(dim), "einsum(): dimension ", dim,
                        " covered by ellipsis in operand ", i, "has size ", op.size(dim),
                        " which does not broadcast with previously seen ellipsis with size ", ellipsis_size[slot],
                        " for the respective dimension");
            ellipsis_size[slot] = op.size(dim);
            ++nontrivial[static_cast<size_t>(layout.ellipsis_start + j)];
          }
          order[static_cast<size_t>(layout.ellipsis_start + j)] = dim++;
        }
        continue;
      }
      const auto position = static_cast<size_t>(layout.position[static_cast<size_t>(label)]);
      if (order[position] == -1) {
        if (op.size(dim) != 1) {
          int64_t& seen = label_size[static_cast<size_t>(label)];
          EMBER_CHECK(seen == 1 || seen == op.size(dim), "einsum(): subscript ", letter_of(label), " has size ",
                      op.size(dim), " for operand ", i, " which does not broadcast with previously seen size ", seen);
          seen = op.size(dim);
          ++nontrivial[position];
        }
        order[position] = dim++;
      } else {
        // A repeated label: the diagonal replaces both dimensions, at the first one's place.
        const int64_t first = order[position];
        EMBER_CHECK(op.size(dim) == op.size(first), "einsum(): subscript ", letter_of(label),
                    " is repeated for operand ", i, " but the sizes don't match, ", op.size(dim),
                    " != ", op.size(first));
        op = diagonal(op, 0, first, dim).movedim({-1}, {first});
      }
    }
    for (int64_t& source : order) {
      if (source == -1) {
        op = op.unsqueeze(dim);
        source = dim++;
      }
    }
    aligned.push_back(op.permute(order));
  }

  // Contract left to right. A summed dimension is summed in the product that meets its last
  // non-trivial operand, or alone in the one operand that has it.
  while (aligned.size() > 1) {
    Tensor a = aligned[0], b = aligned[1];
    aligned.pop_front();
    aligned.pop_front();
    std::vector<int64_t> sum_dims, a_only, b_only;
    for (int64_t d = layout.output_dims; d < layout.total_dims; ++d) {
      int64_t& count = nontrivial[static_cast<size_t>(d)];
      if (a.size(d) != 1 && b.size(d) != 1) {
        if (--count == 1) {
          sum_dims.push_back(d);
          count = 0;
        }
      } else if (count == 1) {
        if (a.size(d) != 1) {
          a_only.push_back(d);
          count = 0;
        } else if (b.size(d) != 1) {
          b_only.push_back(d);
          count = 0;
        }
      }
    }
    if (!a_only.empty()) a = sum(a, a_only, true);
    if (!b_only.empty()) b = sum(b, b_only, true);
    aligned.push_front(pair_product(a, b, sum_dims));
  }

  const Tensor& result = aligned.front();
  if (layout.total_dims == layout.output_dims) return result;
  if (operands.size() > 1) {
    // The products summed every contracted dimension already: drop them (size 1).
    const std::vector<int64_t> sizes(result.sizes().begin(), result.sizes().begin() + layout.output_dims);
    return result.reshape(sizes);
  }
  std::vector<int64_t> summed;
  for (int64_t d = layout.output_dims; d < layout.total_dims; ++d) summed.push_back(d);
  return sum(result, summed);
}

}  // namespace ember
