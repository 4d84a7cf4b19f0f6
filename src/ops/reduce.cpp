// Reductions: dimension handling and result dtypes here; the backend reduces the trailing dims.
#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

struct ReducePlan {
  Tensor permuted;        // input with the reduced dims moved last
  int64_t reduced_dims;   // how many trailing dims of `permuted` are reduced
  Dims out_sizes;         // without keepdim
  Dims keepdim_sizes;     // with the reduced dims kept as 1
  int64_t reduced_count;  // elements reduced into each output
};

ReducePlan plan_reduction(const Tensor& x, IntList dims_in) {
  const int64_t nd = x.dim();
  std::vector<bool> reduce(static_cast<size_t>(std::max<int64_t>(nd, 1)), dims_in.empty());
  for (int64_t d : dims_in) {
    const int64_t w = detail::wrap_dim(d, nd);
    EMBER_CHECK(!reduce[w] || dims_in.empty(), "dim ", w, " appears multiple times in the list of dims");
    reduce[w] = true;
  }
  ReducePlan plan;
  Dims order;
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduce[d]) {
      order.push_back(d);
      plan.out_sizes.push_back(x.size(d));
    }
  }
  plan.reduced_count = 1;
  for (int64_t d = 0; d < nd; ++d) {
    if (reduce[d]) {
      order.push_back(d);
      plan.reduced_count *= x.size(d);
    }
    plan.keepdim_sizes.push_back(reduce[d] ? 1 : x.size(d));
  }
  plan.reduced_dims = nd - static_cast<int64_t>(plan.out_sizes.size());
  plan.permuted = x.permute(order);
  return plan;
}

// A reduction's gradient, reshaped so it broadcasts against the input (reduced dims as size 1).
Tensor unreduce(const Tensor& g, IntList keepdim_sizes) { return g.reshape(keepdim_sizes); }

// The input dims a reduction collapsed (those of size 1 in keepdim_sizes but not in the input).
std::vector<int64_t> reduced_dims_of(IntList keepdim_sizes, IntList in_sizes) {
  std::vector<int64_t> dims;
  for (size_t k = 0; k < keepdim_sizes.size(); ++k) {
    if (keepdim_sizes[k] == 1 && in_sizes[k] != 1) dims.push_back(static_cast<int64_t>(k));
  }
  return dims;
}

// The gradient of prod along `dim` when the input may hold zeros (PyTorch's
// prod_safe_zeros_backward): each element's gradient is the product of the others, formed as
// the exclusive running product from the front times the one from the back, which never divides.
Tensor prod_without_division(const Tensor& g, const Tensor& x, int64_t dim) {
  if (x.numel() == 0) return g.expand(x.sizes());
  Dims one_sizes(x.sizes());
  one_sizes[static_cast<size_t>(dim)] = 1;
  const Tensor ones_slice = ones(one_sizes, x.options());
  const int64_t n = x.size(dim);
  const Tensor before = cumprod(cat({ones_slice, x.narrow(dim, 0, n - 1)}, dim), dim);
  const Tensor after = cumprod(cat({ones_slice, x.narrow(dim, 1, n - 1).flip({dim})}, dim), dim).flip({dim});
  return g * (before * after);
}

// PyTorch's prod_backward: prod / x without zeros; with zeros, the products of the others (and,
// for the full product outside create_graph, zeros when there are several zeros).
Tensor prod_backward(const Tensor& g_keep, const Tensor& x, const Tensor& out_keep, bool all_dims, int64_t dim) {
  if (x.dim() == 0) return g_keep.reshape({});
  const int64_t zeros_in_x = eq(x, zeros({}, x.options())).sum().item<int64_t>();
  if (zeros_in_x == 0) return g_keep * (out_keep / x);
  if (!all_dims) return prod_without_division(g_keep, x, dim);
  if (zeros_in_x > 1 && !GradMode::is_enabled()) return zeros_like(x);
  return prod_without_division(g_keep.reshape({1}), x.contiguous().view({-1}), 0).view(x.sizes());
}

void record_reduction(ReduceOp op, Tensor& out, const Tensor& x, const ReducePlan& plan, bool all_dims,
                      int64_t correction, const Tensor* indices, int64_t reduced_dim) {
  using autograd::SavedTensor;
  const Dims keep = plan.keepdim_sizes;
  const Dims in_sizes(x.sizes());
  const double count = static_cast<double>(plan.reduced_count);
  switch (op) {
    case ReduceOp::Sum:
      autograd::record(out, all_dims ? "SumBackward0" : "SumBackward1", {&x}, [keep, in_sizes](const Tensor& g) {
        return std::vector<Tensor>{unreduce(g, keep).expand(in_sizes)};
      });
      return;
    case ReduceOp::Mean:
      autograd::record(out, all_dims ? "MeanBackward0" : "MeanBackward1", {&x},
                       [keep, in_sizes, count](const Tensor& g) {
                         return std::vector<Tensor>{unreduce(g, keep).expand(in_sizes) / count};
                       });
      return;
    case ReduceOp::Prod:
      autograd::record(
          out, all_dims ? "ProdBackward0" : "ProdBackward1", {&x},
          [keep, all_dims, dim = reduced_dim, sx = SavedTensor(x), so = SavedTensor::output(out)](const Tensor& g) {
            return std::vector<Tensor>{
                prod_backward(unreduce(g, keep), sx.get(), unreduce(so.get(), keep), all_dims, dim)};
          });
      return;
    case ReduceOp::Max:
    case ReduceOp::Min:
      if (indices) {
        // max(dim)/min(dim): the gradient goes to the chosen index along the one reduced dim.
        const int64_t dim = reduced_dim;
        autograd::record(out, op == ReduceOp::Max ? "MaxBackward0" : "MinBackward0", {&x},
                         [keep, in_sizes, dim, idx = *indices](const Tensor& g) {
                           Tensor gi = unreduce(g, keep);
                           return std::vector<Tensor>{zeros(in_sizes, TensorOptions(gi.dtype()).device(gi.device()))
                                                          .scatter_add(dim, idx.reshape(keep), gi)};
                         });
      } else {
        // amax/amin and max()/min(): equal maxima share the gradient evenly.
        autograd::record(out,
                         op == ReduceOp::Max ? (all_dims ? "MaxBackward1" : "AmaxBackward0")
                                             : (all_dims ? "MinBackward1" : "AminBackward0"),
                         {&x}, [keep, sx = SavedTensor(x), so = SavedTensor(out)](const Tensor& g) {
                           Tensor v = sx.get();
                           Tensor mask = eq(v, unreduce(so.get(), keep)).to(g.dtype());
                           std::vector<int64_t> dims = reduced_dims_of(keep, v.sizes());
                           Tensor n = dims.empty() ? ones_like(mask) : sum(mask, dims, true);
                           return std::vector<Tensor>{mask * unreduce(g, keep) / n};
                         });
      }
      return;
    case ReduceOp::Var:
      autograd::record(out, "VarBackward0", {&x}, [keep, count, correction, sx = SavedTensor(x)](const Tensor& g) {
        Tensor v = sx.get();
        std::vector<int64_t> dims = reduced_dims_of(keep, v.sizes());
        Tensor mu = dims.empty() ? v : mean(v, dims, true);
        return std::vector<Tensor>{unreduce(g, keep) * (v - mu) * (2.0 / (count - static_cast<double>(correction)))};
      });
      return;
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return;
  }
}

Tensor run_reduction(ReduceOp op, const Tensor& x, IntList dims, bool keepdim, Dtype out_dtype, int64_t correction = 0,
                     Tensor* indices = nullptr) {
  detail::OpContext context(op_name(op), {{"input", &x}});
  ReducePlan plan = plan_reduction(x, dims);
  Tensor out = make_tensor(plan.out_sizes, out_dtype, x.device());
  TensorView index_view;
  index_view.data = nullptr;
  if (indices) {
    *indices = make_tensor(plan.out_sizes, kInt64, x.device());
    index_view = view_of(*indices);
  }
  backend_for(x.device()).reduce(op, view_of(plan.permuted), plan.reduced_dims, view_of(out), index_view, correction);
  if (keepdim) {
    out = out.view(plan.keepdim_sizes);
    if (indices) *indices = indices->view(plan.keepdim_sizes);
  }
  if (autograd::needs_grad({&x})) {
    const int64_t reduced_dim = dims.size() == 1 ? detail::wrap_dim(dims[0], x.dim()) : 0;
    record_reduction(op, out, x, plan, dims.empty(), correction, indices, reduced_dim);
  }
  return out;
}

Dtype sum_dtype(Dtype d) { return is_floating_point(d) ? d : kInt64; }

void check_floating(const Tensor& x, const char* op) {
  EMBER_CHECK(x.is_floating_point(), op,
              "(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: ",
              scalar_type_name(x.dtype()));
}

void check_nonempty(const Tensor& x, IntList dims, const char* op) {
  if (x.numel() != 0) return;
  if (dims.empty() || x.dim() == 0) {
    detail::fail(op,
                 "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim "
                 "with the 'dim' argument.");
  }
  for (int64_t d : dims) {
    const int64_t w = detail::wrap_dim(d, x.dim());
    EMBER_CHECK(x.size(w) != 0, op, "(): Expected reduction dim ", w, " to have non-zero size.");
  }
}

std::vector<int64_t> one_dim(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}

}  // namespace

Tensor sum(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "sum");
  const auto device = amp::detail::autocast_gpu_device(x);  // CUDA's autocast sums in float32
  const Tensor& input = device ? amp::detail::cast(x, *device, kFloat) : x;
  return run_reduction(ReduceOp::Sum, input, dims, keepdim, sum_dtype(input.dtype()));
}

Tensor mean(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "mean");
  check_floating(x, "mean");
  return run_reduction(ReduceOp::Mean, x, dims, keepdim, x.dtype());
}

Tensor prod(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, "prod");
  const auto device = amp::detail::autocast_device(x);  // autocast's products are float32
  const Tensor& input = device ? amp::detail::cast(x, *device, kFloat) : x;
  return run_reduction(ReduceOp::Prod, input, one_dim(dim), keepdim && dim.has_value(), sum_dtype(input.dtype()));
}

Tensor amax(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "amax");
  check_nonempty(x, dims, "amax");
  return run_reduction(ReduceOp::Max, x, dims, keepdim, x.dtype());
}

Tensor amin(const Tensor& x, IntList dims, bool keepdim) {
  check_defined(x, "amin");
  check_nonempty(x, dims, "amin");
  return run_reduction(ReduceOp::Min, x, dims, keepdim, x.dtype());
}

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined(x, "max");
  const int64_t dims[1] = {dim};
  check_nonempty(x, dims, "max");
  Tensor indices;
  Tensor values = run_reduction(ReduceOp::Max, x, dims, keepdim, x.dtype(), 0, &indices);
  return {values, indices};
}

std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  check_defined(x, "min");
  const int64_t dims[1] = {dim};
  check_nonempty(x, dims, "min");
  Tensor indices;
  Tensor values = run_reduction(ReduceOp::Min, x, dims, keepdim, x.dtype(), 0, &indices);
  return {values, indices};
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, "argmax");
  check_nonempty(x, one_dim(dim), "argmax");
  // Without a dim, PyTorch reduces the flattened tensor (keepdim then gives all-ones sizes).
  Tensor out = run_reduction(ReduceOp::ArgMax, dim ? x : x.reshape(std::vector<int64_t>{-1}), one_dim(dim),
                             keepdim && dim.has_value(), kInt64);
  if (keepdim && !dim) return out.reshape(Dims(static_cast<size_t>(x.dim()), 1));
  return out;
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  check_defined(x, "argmin");
  check_nonempty(x, one_dim(dim), "argmin");
  Tensor out = run_reduction(ReduceOp::ArgMin, dim ? x : x.reshape(std::vector<int64_t>{-1}), one_dim(dim),
                             keepdim && dim.has_value(), kInt64);
  if (keepdim && !dim) return out.reshape(Dims(static_cast<size_t>(x.dim()), 1));
  return out;
}

Tensor var(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  check_defined(x, "var");
  EMBER_CHECK(x.is_floating_point(), "std and var only support floating point and complex dtypes");
  return run_reduction(ReduceOp::Var, x, dims, keepdim, x.dtype(), correction);
}

Tensor std(const Tensor& x, IntList dims, int64_t correction, bool keepdim) {
  return sqrt(var(x, dims, correction, keepdim));
}

// ---- Tensor methods ----

Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(IntList dims, bool keepdim) const { return ember::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(IntList dims, bool keepdim) const { return ember::mean(*this, dims, keepdim); }
Tensor Tensor::prod() const { return ember::prod(*this); }
Tensor Tensor::prod(int64_t dim, bool keepdim) const { return ember::prod(*this, dim, keepdim); }
Tensor Tensor::max() const {
  check_nonempty(*this, {}, "max");
  return ember::amax(*this);
}
Tensor Tensor::min() const {
  check_nonempty(*this, {}, "min");
  return ember::amin(*this);
}
Tensor Tensor::amax(IntList dims, bool keepdim) const { return ember::amax(*this, dims, keepdim); }
Tensor Tensor::amin(IntList dims, bool keepdim) const { return ember::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }
Tensor Tensor::var() const { return ember::var(*this); }
Tensor Tensor::var(IntList dims, int64_t correction, bool keepdim) const {
  return ember::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std() const { return ember::std(*this); }
Tensor Tensor::std(IntList dims, int64_t correction, bool keepdim) const {
  return ember::std(*this, dims, correction, keepdim);
}

Tensor all_finite(std::span<const Tensor> tensors) {
  std::optional<Device> device;
  std::vector<Tensor> checked;  // kept alive while the backend reads their views
  for (const Tensor& t : tensors) {
    if (!t.defined() || !t.is_floating_point()) continue;
    if (!device) device = t.device();
    EMBER_CHECK(t.device() == *device,
                "all_finite: expected all tensors to be on the same device, but found at least "
                "two devices, ",
                *device, " and ", t.device(), "!");
    if (t.numel() > 0) checked.push_back(t.contiguous());
  }
  Tensor out = empty({}, TensorOptions().dtype(kBool).device(device.value_or(Device(DeviceType::CPU))));
  std::vector<TensorView> views;
  views.reserve(checked.size());
  for (const Tensor& t : checked) views.push_back(view_of(t));
  backend_for(out.device()).all_finite(views, view_of(out));
  return out;
}

}  // namespace ember
