// In-place writes under autograd, with PyTorch's rules: which writes are allowed, and how a
// write rewrites the recorded history of the tensor written and of the views sharing its storage.
//
// A write into a tensor that is not a view makes the writing op's node its grad_fn:
// after h.add_(y), h's grad_fn is AddBackward0 over h's old history and y. A write through a
// view must reach the base as well. The base's grad_fn becomes CopySlices. Its backward sends
// the gradient of the written region to the writing op's node, and the rest to the base's old
// history. Each view remembers the storage version its grad_fn belongs to; once a write moves
// the version on, the view rebuilds its grad_fn from the base's (AsStridedBackward0). That is
// how the written view, and every other view of the base, see the write in their gradients.
//
// The gradients that move between a base and a view go through a flat buffer standing for the
// storage both cover: scatter at one tensor's element positions, read at the other's. These are
// ops that record themselves, so a backward pass with create_graph differentiates them too.
#include <algorithm>
#include <optional>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/factories.h"
#include "ember/ops.h"

namespace ember::autograd {

Geometry Geometry::of(const Tensor& t) { return {Dims(t.sizes()), Dims(t.strides()), t.storage_offset()}; }

namespace {

// The storage positions [origin, origin + size) that two geometries cover between them.
struct Span {
  int64_t origin = 0;
  int64_t size = 0;
};

// The largest storage position an element of `g` has, or nothing for an empty tensor.
std::optional<int64_t> last_position(const Geometry& g) {
  int64_t last = g.offset;
  for (size_t d = 0; d < g.sizes.size(); ++d) {
    if (g.sizes[d] == 0) return std::nullopt;
    last += (g.sizes[d] - 1) * g.strides[d];
  }
  return last;
}

Span span_of(const Geometry& a, const Geometry& b) {
  const int64_t origin = std::min(a.offset, b.offset);
  int64_t end = origin;
  for (const Geometry* g : {&a, &b}) {
    if (auto last = last_position(*g)) end = std::max(end, *last + 1);
  }
  return {origin, end - origin};
}

// True when `g` is the buffer itself, element for element, in row-major order.
bool fills(const Geometry& g, const Span& span) {
  return g.offset == span.origin && detail::numel_of(g.sizes) == span.size &&
         same_dims(g.strides, detail::contiguous_strides(g.sizes));
}

// The buffer positions of g's elements, in g's row-major order: a flat int64 tensor.
Tensor positions(const Geometry& g, const Span& span, Device device) {
  Tensor all = arange(span.size, TensorOptions(kInt64).device(device));
  return all.as_strided(g.sizes, g.strides, g.offset - span.origin).reshape({-1});
}

// `grad`, shaped like `from`, placed at from's positions in a zeroed buffer; elements that
// share a position add up.
Tensor to_buffer(const Tensor& grad, const Geometry& from, const Span& span) {
  if (fills(from, span)) return grad.reshape({-1});
  Tensor buffer = zeros({span.size}, TensorOptions(grad.dtype()).device(grad.device()));
  return buffer.scatter_add(0, positions(from, span, grad.device()), grad.reshape({-1}));
}

// The buffer read at `to`'s positions, shaped like `to`.
Tensor from_buffer(const Tensor& buffer, const Geometry& to, const Span& span) {
  if (fills(to, span)) return buffer.view(to.sizes);
  return buffer.index_select(0, positions(to, span, buffer.device())).view(to.sizes);
}

// 0 at the buffer positions `view` covers, 1 elsewhere.
Tensor outside_of(const Geometry& view, const Span& span, Dtype dtype, Device device) {
  const TensorOptions options = TensorOptions(dtype).device(device);
  Tensor covered = zeros({span.size}, options)
                       .scatter_add(0, positions(view, span, device), ones({detail::numel_of(view.sizes)}, options));
  return (covered == 0).to(dtype);
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, const Geometry& input, const Geometry& output) {
  const Span span = span_of(input, output);
  return from_buffer(to_buffer(grad, output, span), input, span);
}

const std::shared_ptr<Node>& grad_fn_of(const Tensor& t) {
  static const std::shared_ptr<Node> kNone;
  detail::TensorImpl& impl = t.impl();
  const std::shared_ptr<Node>& current = impl.autograd ? impl.autograd->grad_fn : kNone;
  if (!impl.view_base) return current;
  const uint32_t version = impl.storage->version();
  if (version == impl.view_version) return current;
  Tensor base(impl.view_base);
  if (!current && !base.requires_grad()) return kNone;
  // The storage was written since this view's grad_fn was set: the view is now read from
  // its base's current history.
  auto rebuilt =
      make_node("AsStridedBackward0", {&base}, [input = Geometry::of(base), output = Geometry::of(t)](const Tensor& g) {
        return std::vector<Tensor>{as_strided_backward(g, input, output)};
      });
  set_grad_fn(t, std::move(rebuilt));
  impl.view_version = version;
  return impl.autograd->grad_fn;
}

void check_inplace(const Tensor& self) {
  const detail::TensorImpl& impl = self.impl();
  if (impl.view_base) {
    using Creation = detail::TensorImpl::ViewCreation;
    EMBER_CHECK(impl.view_creation != Creation::NoGradMode,
                "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
                "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
                "both the view and the inplace either both inside the no_grad block (if you don't want the inplace "
                "to be tracked) or both outside (if you want the inplace to be tracked).");
    if (impl.view_creation == Creation::MultiOutput) {
      // Which piece was written is ambiguous to the op's one backward: PyTorch refuses it.
      const char* why =
          " This view is the output of a function that returns multiple views. Such functions do not allow the "
          "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
      const std::shared_ptr<Node>& fn = grad_fn_of(self);
      if (!fn) {
        detail::fail("A view was created in no_grad mode and is being modified inplace with grad mode enabled.", why);
      }
      std::string op = fn->name;
      if (op.ends_with("Backward0")) op.resize(op.size() - 9);
      detail::fail("Output ", impl.view_output_nr, " of ", op, " is a view and is being modified inplace.", why);
    }
    EMBER_CHECK(!(self.requires_grad() && Tensor(impl.view_base).is_leaf()),
                "a view of a leaf Variable that requires grad is being used in an in-place operation.");
  }
  EMBER_CHECK(!(self.requires_grad() && self.is_leaf()),
              "a leaf Variable that requires grad is being used in an in-place operation.");
}

void rebase_history(const Tensor& self, std::shared_ptr<Node> history) {
  detail::TensorImpl& impl = self.impl();
  if (!impl.view_base) {
    set_grad_fn(self, std::move(history));
    return;
  }
  // Through a view: the written region of the base's gradient belongs to `history`, the rest
  // to the base's old history. The view itself rebuilds its grad_fn on next use, since the
  // write moved the storage's version past its own.
  Tensor base(impl.view_base);
  auto copy_slices = make_node(
      "CopySlices", {&base}, [base_geometry = Geometry::of(base), view_geometry = Geometry::of(self)](const Tensor& g) {
        const Span span = span_of(base_geometry, view_geometry);
        Tensor buffer = to_buffer(g, base_geometry, span);
        Tensor rest = buffer * outside_of(view_geometry, span, g.dtype(), g.device());
        return std::vector<Tensor>{from_buffer(rest, base_geometry, span), from_buffer(buffer, view_geometry, span)};
      });
  copy_slices->next.push_back({std::move(history)});
  copy_slices->inputs.push_back(InputMeta{Dims(self.sizes()), self.dtype(), self.device()});
  set_grad_fn(base, std::move(copy_slices));
}

}  // namespace ember::autograd
