// grid_sample's front end: ATen's grid_sampler checks (messages and order), one backend call
// forward (kernels/grid_sample_ops.h's taps, cpu/grid_sample.cpp, cuda/grid_sample.cu) and one
// recorded node whose backward is one backend call writing both gradients.
//
// The kernels' backward is not itself differentiable. A backward pass that records itself
// (create_graph: gradient penalties, double backward) instead runs the composed form below and
// differentiates it with create_graph: the same taps made of ember ops (floor, clamp, where,
// index_select, arithmetic), whose indices carry no gradient and whose weights are functions of
// the grid, so autograd gives every derivative PyTorch's GridSampler2DBackwardBackward0 does.
#include "ops/grid_sample.h"

#include <sstream>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "core/check.h"
#include "core/tensor_internal.h"
#include "ember/autograd.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"

namespace ember {

namespace {

/// "[2, 3, 4]", as PyTorch prints sizes and Python lists.
std::string list_text(IntList sizes) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
  os << ']';
  return os.str();
}

/// PyTorch's grid_sampler checks, in its order.
void check_grid_sample(const Tensor& input, const Tensor& grid) {
  EMBER_CHECK(input.defined(), "grid_sampler(): expected input to not be undefined");
  EMBER_CHECK(grid.defined(), "grid_sampler(): expected grid to not be undefined");
  EMBER_CHECK(input.device() == grid.device(),
              "grid_sampler(): expected input and grid to be on same device, but input is on ", input.device().str(),
              " and grid is on ", grid.device().str());
  EMBER_CHECK(input.dim() > 0 && grid.dim() > 0 && input.size(0) == grid.size(0),
              "grid_sampler(): expected grid and input to have same batch size, but got input with sizes ",
              list_text(input.sizes()), " and grid with sizes ", list_text(grid.sizes()));
  EMBER_CHECK(grid.size(-1) == input.dim() - 2, "grid_sampler(): expected grid to have size ", input.dim() - 2,
              " in last dimension, but got grid with sizes ", list_text(grid.sizes()));
  for (int64_t d = 2; d < input.dim(); ++d) {
    EMBER_CHECK(input.size(d) > 0,
                "grid_sampler(): expected input to have non-empty spatial dimensions, but input has sizes ",
                list_text(input.sizes()), " with dimension ", d, " being empty");
  }
  const int64_t rank = input.dim() == 4 ? 4 : 5;
  EMBER_CHECK(input.dim() == rank && grid.dim() == rank, "grid_sampler(): expected ", rank,
              "D input and grid with same number of dimensions, but got input with sizes ", list_text(input.sizes()),
              " and grid with sizes ", list_text(grid.sizes()));
  EMBER_CHECK(is_floating_point(input.dtype()), "\"grid_sampler_", rank - 2,
              "d_cpu_kernel_impl\" not implemented for '", scalar_type_name(input.dtype()), "'");
  EMBER_CHECK(grid.dtype() == input.dtype(), "expected scalar type ", scalar_type_name(input.dtype()), " but found ",
              scalar_type_name(grid.dtype()));
}

// ---- The composed form (for create_graph): one spatial dimension's taps as ember ops ----

/// PyTorch's grid_sampler_unnormalize: [-1, 1] to pixel coordinates.
Tensor unnormalize(const Tensor& coordinate, int64_t size, bool align_corners) {
  if (align_corners) return (coordinate + 1) / 2 * Scalar(size - 1);
  return ((coordinate + 1) * Scalar(size) - 1) / 2;
}

/// PyTorch's reflection: mirrored at the border (the corner pixels' centres with align_corners,
/// the pixels' outer edges without) until inside, as a differentiable function: the slope is
/// +1 or -1 by the number of mirrorings. One pixel with align_corners maps everything to 0.
Tensor reflect(const Tensor& x, int64_t size, bool align_corners) {
  const double low = align_corners ? 0.0 : -0.5;
  const double twice_span = align_corners ? 2.0 * static_cast<double>(size - 1) : 2.0 * static_cast<double>(size);
  if (twice_span == 0) return zeros_like(x);
  const Tensor shifted = x - low;
  const Tensor distance = where(shifted < 0, -shifted, shifted);  // slope -1 below `low`, +1 from it on
  const Tensor extra = fmod(distance, Scalar(twice_span));
  const Tensor mirrored = Scalar(twice_span) - extra;
  return where(extra > mirrored, mirrored, extra) + low;
}

/// Clamping and reflection of pixel coordinates (PyTorch's compute_coordinates). ember's clamp,
/// as PyTorch's clip here, passes no gradient on a bound.
Tensor apply_padding(const Tensor& x, int64_t size, GridSamplePadding padding, bool align_corners) {
  if (padding == GridSamplePadding::Border) return clamp(x, 0, size - 1);
  if (padding == GridSamplePadding::Reflection) return clamp(reflect(x, size, align_corners), 0, size - 1);
  return x;
}

/// One spatial dimension's taps: int64 indices clamped into the input (for the index_select) and
/// weights, zero for a tap outside the input, so that it adds nothing (PyTorch skips it).
struct Taps {
  std::vector<Tensor> index;
  std::vector<Tensor> weight;
};

void add_tap(Taps& taps, const Tensor& position, const Tensor& weight, int64_t size) {
  // NaN positions are outside too; the index of an outside tap is 0, any valid one.
  const Tensor inside = logical_and(position >= 0, position <= size - 1);
  taps.index.push_back(where(inside, position, zeros_like(position)).to(kInt64));
  taps.weight.push_back(where(inside, weight, zeros_like(weight)));
}

/// Cubic convolution's weights with A = -0.75 (PyTorch's cubic_convolution1 / 2).
Tensor cubic_near(const Tensor& x) {  // |x| <= 1
  constexpr double A = -0.75;
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}
Tensor cubic_far(const Tensor& x) {  // 1 < |x| < 2
  constexpr double A = -0.75;
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

Taps taps_of(const Tensor& coordinate, int64_t size, const GridSampleArgs& args) {
  Taps taps;
  if (args.mode == GridSampleMode::Bicubic) {
    // The 4 pixels around the unpadded coordinate; each is padded on its own.
    const Tensor x = unnormalize(coordinate, size, args.align_corners);
    const Tensor x0 = floor(x.detach());
    const Tensor t = x - x0;
    const Tensor weights[4] = {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)};
    for (int k = 0; k < 4; ++k) {
      Tensor position = x0 + (k - 1);
      if (args.padding != GridSamplePadding::Zeros)
        position = apply_padding(position, size, args.padding, args.align_corners);
      add_tap(taps, position, weights[k], size);
    }
    return taps;
  }
  const Tensor x =
      apply_padding(unnormalize(coordinate, size, args.align_corners), size, args.padding, args.align_corners);
  if (args.mode == GridSampleMode::Nearest) {
    // Rounded half to even (PyTorch's nearbyint). The weight is 1, plus a term that is 0 with a
    // zero gradient, so that the grid receives zeros as in PyTorch rather than no gradient.
    const Tensor one = ones_like(x) + where(zeros_like(x, TensorOptions().dtype(kBool)), x, zeros_like(x));
    add_tap(taps, round(x.detach()), one, size);
    return taps;
  }
  const Tensor x0 = floor(x.detach());
  const Tensor x1 = x0 + 1;
  add_tap(taps, x0, x1 - x, size);
  add_tap(taps, x1, x - x0, size);
  return taps;
}

/// grid_sample as ember ops, differentiable to any order (checked inputs).
Tensor composed_grid_sample(const Tensor& input, const Tensor& grid, const GridSampleArgs& args) {
  const int64_t spatial = input.dim() - 2;
  const int64_t n = input.size(0), channels = input.size(1);
  // Per spatial dimension d of the input (D, H, W order), its taps from grid[..., spatial-1-d]
  // (the grid's last dimension is x, y, z: W first).
  std::vector<Taps> taps(static_cast<size_t>(spatial));
  for (int64_t d = 0; d < spatial; ++d) {
    const Tensor coordinate = grid.select(-1, spatial - 1 - d);
    taps[static_cast<size_t>(d)] = taps_of(coordinate, input.size(d + 2), args);
  }
  std::vector<int64_t> out_spatial(grid.sizes().begin() + 1, grid.sizes().end() - 1);
  int64_t points = 1, pixels = 1;
  for (int64_t s : out_spatial) points *= s;
  for (int64_t d = 2; d < input.dim(); ++d) pixels *= input.size(d);
  // Channels last, one row of C values per pixel: each tap is one index_select of whole rows.
  const Tensor pixel_rows = input.reshape({n, channels, pixels}).transpose(1, 2).reshape({n * pixels, channels});
  // The first row of each sample's pixels, added to its taps' flat indices.
  std::vector<int64_t> first_row_shape(static_cast<size_t>(spatial) + 1, 1);
  first_row_shape[0] = n;
  const Tensor first_row =
      (arange(n, TensorOptions().dtype(kInt64).device(input.device())) * pixels).reshape(first_row_shape);

  // Every combination of taps, the outermost dimension (D or H) slowest.
  const size_t per_dim = taps[0].index.size();
  size_t combinations = 1;
  for (int64_t d = 0; d < spatial; ++d) combinations *= per_dim;
  Tensor out;
  for (size_t combination = 0; combination < combinations; ++combination) {
    std::vector<size_t> choice(static_cast<size_t>(spatial));
    for (size_t rest = combination, d = static_cast<size_t>(spatial); d-- > 0; rest /= per_dim)
      choice[d] = rest % per_dim;
    Tensor flat_index, weight;
    int64_t stride = 1;
    for (int64_t d = spatial - 1; d >= 0; --d) {  // x first: PyTorch multiplies the weights in x, y, z order
      const Taps& t = taps[static_cast<size_t>(d)];
      const size_t k = choice[static_cast<size_t>(d)];
      const Tensor scaled = stride == 1 ? t.index[k] : t.index[k] * stride;
      flat_index = flat_index.defined() ? flat_index + scaled : scaled;
      weight = weight.defined() ? weight * t.weight[k] : t.weight[k];
      stride *= input.size(d + 2);
    }
    const Tensor values = index_select(pixel_rows, 0, (flat_index + first_row).reshape({n * points}));
    const Tensor term = weight.reshape({n * points, 1}) * values;
    out = out.defined() ? out + term : term;
  }
  std::vector<int64_t> out_sizes = {n, channels};
  out_sizes.insert(out_sizes.end(), out_spatial.begin(), out_spatial.end());
  return out.reshape({n, points, channels}).transpose(1, 2).reshape(out_sizes);
}

/// The gradients of input and grid (undefined where not wanted) by differentiating the composed
/// form with create_graph, so that they are differentiable in turn (in g, input and grid).
std::vector<Tensor> composed_gradients(const Tensor& g, const Tensor& input, const Tensor& grid,
                                       const GridSampleArgs& args, bool want_input, bool want_grid) {
  // An input that needs no gradient still takes part, through a stand-in that asks for one.
  const Tensor x = want_input ? input : input.detach().requires_grad_();
  const Tensor coordinates = want_grid ? grid : grid.detach().requires_grad_();
  const Tensor y = composed_grid_sample(x, coordinates, args);
  std::vector<Tensor> grads =
      autograd::grad({y}, {x, coordinates}, {g}, /*retain_graph=*/true, /*create_graph=*/true, /*allow_unused=*/true);
  if (!want_input) grads[0] = Tensor();
  if (!want_grid) grads[1] = Tensor();
  return grads;
}

bool is_narrow_float(Dtype dtype) { return dtype == kFloat16 || dtype == kBFloat16; }

}  // namespace

Tensor ops::grid_sample(const Tensor& input, const Tensor& grid, const GridSampleArgs& args) {
  check_grid_sample(input, grid);
  const Dtype dtype = input.dtype();
  // float16 and bfloat16 are sampled in float32 and rounded once, as PyTorch's kernels compute.
  const Dtype compute = is_narrow_float(dtype) ? kFloat32 : dtype;
  const Device device = input.device();
  const Tensor x = input.detach().to(compute).contiguous();
  const Tensor coordinates = grid.detach().to(compute).contiguous();
  std::vector<int64_t> out_sizes = {input.size(0), input.size(1)};
  out_sizes.insert(out_sizes.end(), grid.sizes().begin() + 1, grid.sizes().end() - 1);
  Tensor out = detail::make_tensor(out_sizes, compute, device);
  backend_for(device).grid_sample(view_of(x), view_of(coordinates), args, view_of(out));
  if (compute != dtype) out = out.to(dtype);
  if (!autograd::needs_grad({&input, &grid})) return out;

  const bool want_input = input.requires_grad(), want_grid = grid.requires_grad();
  const char* name = input.dim() == 4 ? "GridSampler2DBackward0" : "GridSampler3DBackward0";
  autograd::record(out, name, {&input, &grid},
                   [args, want_input, want_grid, dtype, compute, device, saved_input = autograd::SavedTensor(input),
                    saved_grid = autograd::SavedTensor(grid)](const Tensor& g) {
                     const Tensor x_in = saved_input.get(), grid_in = saved_grid.get();
                     if (autograd::needs_grad({&g, &x_in, &grid_in}))  // create_graph
                       return composed_gradients(g.to(dtype), x_in, grid_in, args, want_input, want_grid);
                     const Tensor x_c = x_in.to(compute).contiguous(), grid_c = grid_in.to(compute).contiguous();
                     const Tensor g_compute = g.to(compute);
                     Tensor grad_x = want_input ? detail::make_tensor(x_c.sizes(), compute, device) : Tensor();
                     Tensor grad_grid = want_grid ? detail::make_tensor(grid_c.sizes(), compute, device) : Tensor();
                     backend_for(device).grid_sample_backward(view_of(g_compute), view_of(x_c), view_of(grid_c), args,
                                                              grad_x.defined() ? view_of(grad_x) : TensorView{},
                                                              grad_grid.defined() ? view_of(grad_grid) : TensorView{});
                     if (compute != dtype) {
                       if (grad_x.defined()) grad_x = grad_x.to(dtype);
                       if (grad_grid.defined()) grad_grid = grad_grid.to(dtype);
                     }
                     return std::vector<Tensor>{grad_x, grad_grid};
                   });
  return out;
}

}  // namespace ember
