// Joining (cat, stack) and indexing (index_select, gather, scatter_add).
#include <vector>

#include "amp/autocast_policy.h"
#include "autograd/node.h"
#include "backend/backend.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"
#include "ops/infer.h"

namespace ember {

using detail::check_defined;
using detail::make_tensor;

namespace {

void check_index_dtype(const Tensor& index, const char* op) {
  EMBER_CHECK(index.dtype() == kInt64 || index.dtype() == kInt32, op,
              "(): Expected dtype int32/int64 for index but got: ", scalar_type_name(index.dtype()));
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  for (const Tensor& t : tensors) check_defined(t, "cat");
  // Legacy rule kept by PyTorch: 1-D empty tensors are skipped whatever their shape.
  std::vector<const Tensor*> parts;
  for (const Tensor& t : tensors) {
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(&t);
  }
  Dtype dtype = tensors[0].dtype();
  for (const Tensor& t : tensors) dtype = promote_types(dtype, t.dtype());
  for (size_t i = 1; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].device() == tensors[0].device(), "Expected all tensors to be on the same device, but got ",
                "tensors is on ", tensors[i].device(), ", different from other tensors on ", tensors[0].device(),
                " (when checking argument in method wrapper_cat)");
  }
  if (parts.empty()) return make_tensor(tensors[0].sizes(), dtype, tensors[0].device());
  const Tensor& first = *parts[0];
  EMBER_CHECK(first.dim() > 0, "zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = detail::wrap_dim(dim, first.dim());
  Dims sizes(first.sizes());
  int64_t total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = *parts[i];
    EMBER_CHECK(t.dim() == first.dim(), "Tensors must have same number of dimensions: got ", first.dim(), " and ",
                t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d == dim) continue;
      EMBER_CHECK(t.size(d) == first.size(d), "Sizes of tensors must match except in dimension ", dim,
                  ". Expected size ", first.size(d), " but got size ", t.size(d), " for tensor number ", i,
                  " in the list.");
    }
    total += t.size(dim);
  }
  sizes[dim] = total;
  Tensor out = make_tensor(sizes, dtype, first.device());
  int64_t offset = 0;
  {
    NoGradGuard no_grad;  // the copies below are internal; the node recorded after them is cat's
    for (const Tensor* t : parts) {
      out.narrow(dim, offset, t->size(dim)).copy_(*t);
      offset += t->size(dim);
    }
  }
  if (autograd::needs_grad(tensors)) {
    std::vector<const Tensor*> inputs;
    std::vector<int64_t> sizes_along;  // 0 for skipped empty tensors
    for (const Tensor& t : tensors) {
      inputs.push_back(&t);
      sizes_along.push_back(t.dim() == 1 && t.numel() == 0 ? -1 : t.size(dim));
    }
    autograd::record(out, "CatBackward0", inputs, [dim, sizes_along](const Tensor& g) {
      std::vector<Tensor> grads;
      int64_t at = 0;
      for (int64_t n : sizes_along) {
        if (n < 0) {
          grads.emplace_back();
          continue;
        }
        grads.push_back(g.narrow(dim, at, n));
        at += n;
      }
      return grads;
    });
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack expects a non-empty TensorList");
  for (const Tensor& t : tensors) check_defined(t, "stack");
  for (size_t i = 1; i < tensors.size(); ++i) {
    EMBER_CHECK(same_dims(tensors[i].sizes(), tensors[0].sizes()),
                "stack expects each tensor to be equal size, but got ", detail::shape_str(tensors[0].sizes()),
                " at entry 0 and ", detail::shape_str(tensors[i].sizes()), " at entry ", i);
  }
  dim = detail::wrap_dim(dim, tensors[0].dim() + 1);
  std::vector<Tensor> expanded;
  expanded.reserve(tensors.size());
  for (const Tensor& t : tensors) expanded.push_back(t.unsqueeze(dim));
  return cat(expanded, dim);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::OpContext context("index_select", {{"input", &x}, {"index", &index}});
  check_defined(x, "index_select");
  check_defined(index, "index_select");
  ops::check_same_device("wrapper__index_select", {{"self", &x}, {"index", &index}});
  check_index_dtype(index, "index_select");
  EMBER_CHECK(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  dim = detail::wrap_dim(dim, x.dim());
  Tensor idx = index.to(kInt64).reshape(std::vector<int64_t>{-1}).contiguous();
  Dims sizes(x.sizes());
  if (x.dim() == 0) {
    EMBER_CHECK(idx.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ", idx.numel(),
                " value(s)");
  } else {
    sizes[dim] = idx.numel();
  }
  Tensor out = make_tensor(sizes, x.dtype(), x.device());
  Tensor src = x.dim() == 0 ? x.reshape(std::vector<int64_t>{1}) : x;
  Tensor dst = x.dim() == 0 ? out.reshape(std::vector<int64_t>{1}) : out;
  backend_for(x.device()).index_select(view_of(src), dim, view_of(idx), view_of(dst));
  if (autograd::needs_grad({&x})) {
    autograd::record(out, "IndexSelectBackward0", {&x}, [dim, idx, in_sizes = Dims(x.sizes())](const Tensor& g) {
      if (in_sizes.empty()) return std::vector<Tensor>{g.reshape(in_sizes)};
      // Scatter-add each selected slice back: the index broadcast along every other dim.
      Dims shape(in_sizes.size(), 1);
      shape[dim] = idx.numel();
      Tensor expanded = idx.view(shape).expand(g.sizes()).contiguous();
      return std::vector<Tensor>{
          zeros(in_sizes, TensorOptions(g.dtype()).device(g.device())).scatter_add(dim, expanded, g)};
    });
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  detail::OpContext context("gather", {{"input", &x}, {"index", &index}});
  check_defined(x, "gather");
  check_defined(index, "gather");
  ops::check_same_device("wrapper_gather", {{"self", &x}, {"index", &index}});
  EMBER_CHECK(index.dtype() == kInt64, "gather(): Expected dtype int64 for index");
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(x.dim(), 1),
              "Index tensor must have the same number of dimensions as input tensor");
  dim = detail::wrap_dim(dim, x.dim());
  for (int64_t d = 0; d < index.dim(); ++d) {
    EMBER_CHECK(d == dim || index.size(d) <= x.size(d), "Size does not match at dimension ", d, " expected index ",
                detail::shape_str(index.sizes()), " to be smaller than self ", detail::shape_str(x.sizes()),
                " apart from dimension ", dim);
  }
  Tensor out = make_tensor(index.sizes(), x.dtype(), x.device());
  if (out.numel() == 0) return out;
  auto as1d = [](const Tensor& t) { return t.dim() == 0 ? t.reshape(std::vector<int64_t>{1}) : t; };
  backend_for(x.device()).gather(view_of(as1d(x)), dim, view_of(as1d(index)), view_of(as1d(out)));
  if (autograd::needs_grad({&x})) {
    autograd::record(out, "GatherBackward0", {&x}, [dim, index, in_sizes = Dims(x.sizes())](const Tensor& g) {
      return std::vector<Tensor>{
          zeros(in_sizes, TensorOptions(g.dtype()).device(g.device())).scatter_add(dim, index, g)};
    });
  }
  return out;
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (const auto device = amp::detail::autocast_gpu_device(x, index, src)) {  // CUDA's autocast promotes
    return amp::detail::autocast_call(amp::detail::CastPolicy::Promote, *device, scatter_add, x, dim, index, src);
  }
  detail::OpContext context("scatter_add", {{"input", &x}, {"index", &index}, {"src", &src}});
  check_defined(x, "scatter_add");
  check_defined(index, "scatter_add");
  check_defined(src, "scatter_add");
  ops::check_same_device("wrapper_scatter_add", {{"self", &x}, {"index", &index}, {"src", &src}});
  EMBER_CHECK(index.dtype() == kInt64, "scatter_add(): Expected dtype int64 for index");
  EMBER_CHECK(src.dtype() == x.dtype(), "scatter_add(): Expected self.dtype to be equal to src.dtype");
  EMBER_CHECK(std::max<int64_t>(index.dim(), 1) == std::max<int64_t>(x.dim(), 1) &&
                  std::max<int64_t>(src.dim(), 1) == std::max<int64_t>(x.dim(), 1),
              "Index tensor must have the same number of dimensions as self tensor");
  dim = detail::wrap_dim(dim, x.dim());
  for (int64_t d = 0; d < index.dim(); ++d) {
    EMBER_CHECK(index.size(d) <= src.size(d), "Expected index ", detail::shape_str(index.sizes()),
                " to be smaller than self ", detail::shape_str(x.sizes()), " apart from dimension ", dim,
                " and to be smaller size than src ", detail::shape_str(src.sizes()));
    EMBER_CHECK(d == dim || index.size(d) <= x.size(d), "Expected index ", detail::shape_str(index.sizes()),
                " to be smaller than self ", detail::shape_str(x.sizes()), " apart from dimension ", dim,
                " and to be smaller size than src ", detail::shape_str(src.sizes()));
  }
  Tensor out = x.detach().clone();
  if (index.numel() == 0) return out;
  auto as1d = [](const Tensor& t) { return t.dim() == 0 ? t.reshape(std::vector<int64_t>{1}) : t; };
  backend_for(x.device()).scatter_add(view_of(as1d(out)), dim, view_of(as1d(index)), view_of(as1d(src)));
  if (autograd::needs_grad({&x, &src})) {
    autograd::record(out, "ScatterAddBackward0", {&x, &index, &src}, [dim, index](const Tensor& g) {
      return std::vector<Tensor>{g, Tensor(), g.gather(dim, index)};
    });
  }
  return out;
}

Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return ember::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return ember::gather(*this, dim, index); }
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter_add(*this, dim, index, src);
}

}  // namespace ember
