// AdaptiveLogSoftmaxWithLoss as torch/nn/modules/adaptive.py computes it: the head scores the
// shortlist and one entry per cluster, each cluster's own Linear pair scores its classes, and a
// sample's log-probability is its head entry's plus, outside the shortlist, its class's within
// the cluster. PyTorch writes the cluster terms into the output with index_copy_; here each is
// a scatter_add into zeros (the rows are distinct), which gives the same values and gradients.
#include "ember/nn/adaptive_softmax.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember::nn {

namespace {

std::string torch_size(IntList sizes) {
  std::ostringstream os;
  os << "torch.Size([";
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? ", " : "") << sizes[d];
  os << "])";
  return os.str();
}

std::vector<int64_t> host_values(const Tensor& t) {
  const Tensor h = t.to(Device(DeviceType::CPU)).to(kInt64).contiguous();
  const int64_t* p = h.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

Tensor index_tensor(const std::vector<int64_t>& values, const Device& device) {
  return tensor(values, TensorOptions().dtype(kInt64)).to(device);
}

}  // namespace

AdaptiveLogSoftmaxWithLoss::AdaptiveLogSoftmaxWithLoss(int64_t in_features, int64_t n_classes, const SizeList& cutoffs_,
                                                       double div_value, bool head_bias)
    : in_features(in_features), n_classes(n_classes), div_value(div_value), head_bias(head_bias) {
  EMBER_CHECK(!cutoffs_.empty(), "cutoffs should be a sequence of length larger than 0");
  const std::vector<int64_t>& given = cutoffs_.vec();
  bool valid =
      std::is_sorted(given.begin(), given.end()) && std::adjacent_find(given.begin(), given.end()) == given.end();
  valid = valid && given.front() > 0 && given.back() <= n_classes - 1;
  EMBER_CHECK(valid,
              "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, where each "
              "value is between 1 and n_classes-1");
  cutoffs = given;
  cutoffs.push_back(n_classes);
  shortlist_size = cutoffs[0];
  n_clusters = static_cast<int64_t>(cutoffs.size()) - 1;
  head_size = shortlist_size + n_clusters;
  head = register_module("head", std::make_shared<Linear>(in_features, head_size, head_bias));
  tail = register_module("tail", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < n_clusters; ++i) {
    // Python's in_features // div_value ** (i + 1) on floats, then int().
    const auto hidden = static_cast<int64_t>(
        std::floor(static_cast<double>(in_features) / std::pow(div_value, static_cast<double>(i + 1))));
    const int64_t cluster_size = cutoffs[static_cast<size_t>(i) + 1] - cutoffs[static_cast<size_t>(i)];
    // Built one after the other: both draw from the generator, in PyTorch's order (the order
    // in which function arguments are evaluated is unspecified).
    auto projection = std::make_shared<Linear>(in_features, hidden, false);
    auto output = std::make_shared<Linear>(hidden, cluster_size, false);
    tail->push_back(std::make_shared<Sequential>(projection, output));
  }
}

void AdaptiveLogSoftmaxWithLoss::reset_parameters() {
  head->reset_parameters();
  for (const auto& entry : *tail) {
    const auto& pair = static_cast<const Sequential&>(*entry.second);
    static_cast<Linear&>(*pair[0]).reset_parameters();
    static_cast<Linear&>(*pair[1]).reset_parameters();
  }
}

Tensor AdaptiveLogSoftmaxWithLoss::run_tail(int64_t cluster, const Tensor& input) { return (*(*tail)[cluster])(input); }

ASMOutput AdaptiveLogSoftmaxWithLoss::forward(const Tensor& input_, const Tensor& target_) {
  const int64_t target_dim = target_.dim();
  if (target_dim == 1) {
    EMBER_CHECK(input_.dim() > 0 && input_.size(0) == target_.size(0),
                "Input and target should have the same size in the batch dimension.");
    EMBER_CHECK(input_.dim() == 2, "1D target tensor expects 2D input tensors, but found inputs with size ",
                torch_size(input_.sizes()));
  } else {
    EMBER_CHECK(target_dim == 0, "0D or 1D target tensor expected, multi-target not supported");
    EMBER_CHECK(input_.dim() == 1, "0D target tensor expects 1D input tensors, but found inputs with size ",
                torch_size(input_.sizes()));
  }
  EMBER_CHECK(!is_floating_point(target_.dtype()) && target_.dtype() != kBool,
              "gather(): Expected dtype int64 for index");
  const bool batched = target_dim > 0;
  const Tensor input = batched ? input_ : input_.unsqueeze(0);
  const Tensor target = batched ? target_ : target_.unsqueeze(0);
  const int64_t batch = target.size(0);

  // Route each sample (on the host, as PyTorch's nonzero does): its head entry, and for a tail
  // class its cluster's rows and class within the cluster.
  const std::vector<int64_t> targets = host_values(target);
  std::vector<int64_t> head_entry(static_cast<size_t>(batch));
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(n_clusters)), relative(static_cast<size_t>(n_clusters));
  bool in_range = true;
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t t = targets[static_cast<size_t>(r)];
    if (t < 0 || t >= n_classes) {
      in_range = false;
      continue;
    }
    if (t < shortlist_size) {
      head_entry[static_cast<size_t>(r)] = t;
      continue;
    }
    const auto cluster = static_cast<size_t>(std::upper_bound(cutoffs.begin(), cutoffs.end(), t) - cutoffs.begin() - 1);
    head_entry[static_cast<size_t>(r)] = shortlist_size + static_cast<int64_t>(cluster);
    rows[cluster].push_back(r);
    relative[cluster].push_back(t - cutoffs[cluster]);
  }
  if (!in_range) {
    const auto [low, high] = std::minmax_element(targets.begin(), targets.end());
    EMBER_CHECK(false, "Target values should be in [0, ", n_classes - 1, "], but values in range [", *low, ", ", *high,
                "] were found. ");
  }

  const TensorOptions options = TensorOptions().dtype(input.dtype()).device(input.device());
  Tensor output;
  for (int64_t i = 0; i < n_clusters; ++i) {
    const std::vector<int64_t>& cluster_rows = rows[static_cast<size_t>(i)];
    if (cluster_rows.empty()) continue;
    const Tensor row_index = index_tensor(cluster_rows, input.device());
    const Tensor cluster_logprob = log_softmax(run_tail(i, index_select(input, 0, row_index)), 1);
    const Tensor local =
        cluster_logprob.gather(1, index_tensor(relative[static_cast<size_t>(i)], input.device()).unsqueeze(1))
            .squeeze(1);
    const Tensor part = scatter_add(zeros({batch}, options), 0, row_index, local);
    output = output.defined() ? output + part : part;
  }
  const Tensor head_logprob = log_softmax((*head)(input), 1);
  const Tensor head_part = head_logprob.gather(1, index_tensor(head_entry, input.device()).unsqueeze(1)).squeeze(1);
  output = output.defined() ? output + head_part : zeros({batch}, options) + head_part;
  const Tensor loss = (-output).mean();
  return {batched ? output : output.squeeze(0), loss};
}

Tensor AdaptiveLogSoftmaxWithLoss::full_log_prob(const Tensor& input, const Tensor& head_output) {
  const Tensor head_logprob = log_softmax(head_output, 1);
  std::vector<Tensor> pieces = {head_logprob.narrow(1, 0, shortlist_size)};
  for (int64_t i = 0; i < n_clusters; ++i) {
    const Tensor cluster_logprob = log_softmax(run_tail(i, input), 1);
    pieces.push_back(cluster_logprob + head_logprob.select(1, shortlist_size + i).unsqueeze(1));
  }
  return cat(pieces, 1);
}

Tensor AdaptiveLogSoftmaxWithLoss::log_prob(const Tensor& input) { return full_log_prob(input, (*head)(input)); }

Tensor AdaptiveLogSoftmaxWithLoss::predict(const Tensor& input) {
  const Tensor head_output = (*head)(input);
  const Tensor output = argmax(head_output, 1);
  std::vector<int64_t> predicted = host_values(output);
  std::vector<int64_t> outside;  // the rows whose best head entry is a cluster
  for (size_t r = 0; r < predicted.size(); ++r)
    if (predicted[r] >= shortlist_size) outside.push_back(static_cast<int64_t>(r));
  if (outside.empty()) return output;
  if (outside.size() == predicted.size()) return argmax(full_log_prob(input, head_output), 1);
  const Tensor rows = index_tensor(outside, input.device());
  const std::vector<int64_t> best =
      host_values(argmax(full_log_prob(index_select(input, 0, rows), index_select(head_output, 0, rows)), 1));
  for (size_t k = 0; k < outside.size(); ++k) predicted[static_cast<size_t>(outside[k])] = best[k];
  return index_tensor(predicted, input.device());
}

}  // namespace ember::nn
