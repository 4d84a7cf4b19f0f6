// softmax and log_softmax: the backend normalises the last dimension of a contiguous tensor, and
// computes their gradient there too (one node each; a create_graph backward composes it from ops).
#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/ops.h"

namespace ember {

namespace {

// The gradient by the backend's kernel: along the last dimension, moved there and back.
Tensor softmax_backward(const Tensor& y, const Tensor& g, int64_t dim, bool log) {
  const int64_t last = y.dim() - 1;
  const Tensor ym = (dim == last ? y : y.transpose(dim, last)).contiguous();
  const Tensor gm = (dim == last ? g : g.transpose(dim, last)).to(y.dtype()).contiguous();
  Tensor out = detail::make_tensor(ym.sizes(), y.dtype(), y.device());
  if (out.numel() > 0) backend_for(y.device()).softmax_backward(view_of(ym), view_of(gm), view_of(out), log);
  return dim == last ? out : out.transpose(dim, last);
}

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  detail::OpContext context(log ? "log_softmax" : "softmax", {{"input", &x}});
  const char* name = log ? "log_softmax" : "softmax";
  detail::check_defined(x, name);
  EMBER_CHECK(x.is_floating_point(), "\"", log ? "log_softmax_lastdim_kernel_impl" : "softmax_lastdim_kernel_impl",
              "\" not implemented for '", scalar_type_name(x.dtype()), "'");
  dim = detail::wrap_dim(dim, x.dim());
  if (x.dim() == 0) {
    Tensor one = x.to(x.dtype(), false, true);
    return one.fill_(log ? 0 : 1);
  }
  const int64_t last = x.dim() - 1;
  Tensor moved = dim == last ? x : x.transpose(dim, last);
  Tensor input = moved.contiguous();
  Tensor out = detail::make_tensor(input.sizes(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).softmax(view_of(input), view_of(out), log);
  Tensor result = dim == last ? out : out.transpose(dim, last);
  if (autograd::needs_grad({&x})) {
    autograd::record(result, log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", {&x},
                     [dim, log, so = autograd::SavedTensor::output(result)](const Tensor& g) {
                       Tensor y = so.get();
                       if (!GradMode::is_enabled()) return std::vector<Tensor>{softmax_backward(y, g, dim, log)};
                       // A backward that records itself (create_graph): composed, so that it
                       // differentiates again.
                       const int64_t dims[1] = {dim};
                       if (log) return std::vector<Tensor>{g - exp(y) * sum(g, dims, true)};
                       return std::vector<Tensor>{y * (g - sum(g * y, dims, true))};
                     });
  }
  return result;
}

}  // namespace

// CUDA's autocast runs both in float32 (torch.softmax(x, dim, dtype=torch.float32)).
Tensor softmax(const Tensor& x, int64_t dim) {
  const auto device = amp::detail::autocast_gpu_device(x);
  return softmax_impl(device ? amp::detail::cast(x, *device, kFloat) : x, dim, false);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  const auto device = amp::detail::autocast_gpu_device(x);
  return softmax_impl(device ? amp::detail::cast(x, *device, kFloat) : x, dim, true);
}
Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return ember::log_softmax(*this, dim); }

}  // namespace ember
