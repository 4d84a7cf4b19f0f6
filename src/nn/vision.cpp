// affine_grid and grid_sample, composed of ember ops. Each spatial dimension of the grid becomes
// a few sampling taps (pixel index and weight: 1 for nearest, 2 for linear, 4 for cubic); the
// output is the sum over every combination of taps of the product of their weights times the
// input gathered at their flat index. The indices are computed without gradient; the weights
// are functions of the grid, so autograd gives the grid's gradient from them, and gather's
// backward (a scatter-add) the input's. The pixel arithmetic (unnormalisation, clamping,
// reflection, rounding, the cubic coefficients) is PyTorch's, so values and gradients agree with
// its kernels to rounding. A dedicated kernel, as PyTorch has, would be several times faster:
// this one makes an index_select and a few output-sized temporaries per tap combination, and
// backward a scatter-add for each.
#include "ember/nn/vision.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/warning.h"

namespace ember::nn::functional {

namespace {

enum class Mode { Bilinear, Nearest, Bicubic };
enum class Padding { Zeros, Border, Reflection };

constexpr const char* kAlignCornersWarning =
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. See the documentation of grid_sample for details.";

/// "[2, 3, 4]", as PyTorch prints sizes and Python lists.
std::string list_text(IntList sizes) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < sizes.size(); ++i) os << (i ? ", " : "") << sizes[i];
  os << ']';
  return os.str();
}

bool resolve_align_corners(std::optional<bool> align_corners) {
  if (!align_corners) ember::warn(kAlignCornersWarning);
  return align_corners.value_or(false);
}

// ---- affine_grid ----

/// The normalised coordinates of n pixels along one dimension: -1 .. 1 at the corner pixels'
/// centres (align_corners) or scaled by (n - 1) / n to the pixel centres of [-1, 1]; one pixel
/// sits at 0. PyTorch's linspace, then its multiply-then-divide.
Tensor pixel_coordinates(int64_t n, bool align_corners, const TensorOptions& options) {
  if (n <= 1) return zeros({1}, options);
  Tensor range = linspace(-1, 1, n, options);
  if (!align_corners) range = range * Scalar(n - 1) / Scalar(n);
  return range;
}

// ---- grid_sample: one spatial dimension's taps ----

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
Tensor apply_padding(const Tensor& x, int64_t size, Padding padding, bool align_corners) {
  if (padding == Padding::Border) return clamp(x, 0, size - 1);
  if (padding == Padding::Reflection) return clamp(reflect(x, size, align_corners), 0, size - 1);
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

Taps taps_of(const Tensor& coordinate, int64_t size, Mode mode, Padding padding, bool align_corners) {
  Taps taps;
  if (mode == Mode::Bicubic) {
    // The 4 pixels around the unpadded coordinate; each is padded on its own.
    const Tensor x = unnormalize(coordinate, size, align_corners);
    const Tensor x0 = floor(x.detach());
    const Tensor t = x - x0;
    const Tensor weights[4] = {cubic_far(t + 1), cubic_near(t), cubic_near(1 - t), cubic_far(2 - t)};
    for (int k = 0; k < 4; ++k) {
      Tensor position = x0 + (k - 1);
      if (padding != Padding::Zeros) position = apply_padding(position, size, padding, align_corners);
      add_tap(taps, position, weights[k], size);
    }
    return taps;
  }
  const Tensor x = apply_padding(unnormalize(coordinate, size, align_corners), size, padding, align_corners);
  if (mode == Mode::Nearest) {
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

Mode parse_mode(std::string_view mode) {
  if (mode == "bilinear") return Mode::Bilinear;
  if (mode == "nearest") return Mode::Nearest;
  EMBER_CHECK(mode == "bicubic",
              "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '", mode,
              "'");
  return Mode::Bicubic;
}

Padding parse_padding(std::string_view padding_mode) {
  if (padding_mode == "zeros") return Padding::Zeros;
  if (padding_mode == "border") return Padding::Border;
  EMBER_CHECK(padding_mode == "reflection",
              "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '",
              padding_mode, "'");
  return Padding::Reflection;
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

}  // namespace

Tensor affine_grid(const Tensor& theta, IntList size, std::optional<bool> align_corners_opt) {
  detail::OpContext context("affine_grid", {{"theta", &theta}});
  const bool align_corners = resolve_align_corners(align_corners_opt);
  EMBER_CHECK(theta.defined(), "affine_grid(): expected theta to not be undefined");
  EMBER_CHECK(is_floating_point(theta.dtype()), "Expected theta to have floating point type, but got ",
              dtype_name(theta.dtype()));
  const auto theta_shape = [&] {
    std::string text = "torch.Size(" + list_text(theta.sizes()) + ")";
    return text;
  };
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
  if (size.size() == 4) {
    EMBER_CHECK(theta.dim() == 3 && theta.size(-2) == 2 && theta.size(-1) == 3,
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size ", list_text(size), ". Got ",
                theta_shape(), ".");
  } else {
    EMBER_CHECK(size.size() == 5,
                "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, respectively. Got size ",
                list_text(size), ".");
    EMBER_CHECK(theta.dim() == 3 && theta.size(-2) == 3 && theta.size(-1) == 4,
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size ", list_text(size), ". Got ",
                theta_shape(), ".");
  }
  int64_t smallest_spatial = size[2], smallest = size[0];
  for (size_t d = 0; d < size.size(); ++d) {
    smallest = std::min(smallest, size[d]);
    if (d >= 2) smallest_spatial = std::min(smallest_spatial, size[d]);
  }
  if (align_corners && smallest_spatial == 1) {
    ember::warn(
        "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when align_corners=True. This is "
        "not an intended use case of affine_grid. See the documentation of affine_grid for details.");
  } else {
    EMBER_CHECK(smallest > 0, "Expected non-zero, positive output size. Got ", list_text(size));
  }

  // The base grid [*spatial, spatial + 1]: x (along the last dimension), y, (z,) then 1.
  const int64_t n = size[0];
  const TensorOptions options = TensorOptions().dtype(theta.dtype()).device(theta.device());
  std::vector<int64_t> out_sizes(size.begin() + 2, size.end());  // D, H, W or H, W
  std::vector<Tensor> columns;
  for (int64_t k = spatial - 1; k >= 0; --k) {  // W first
    std::vector<int64_t> shape(static_cast<size_t>(spatial), 1);
    shape[static_cast<size_t>(k)] = out_sizes[static_cast<size_t>(k)];
    columns.push_back(
        pixel_coordinates(out_sizes[static_cast<size_t>(k)], align_corners, options).reshape(shape).expand(out_sizes));
  }
  columns.push_back(ones(out_sizes, options));
  int64_t points = 1;
  for (int64_t s : out_sizes) points *= s;
  const Tensor base = stack(columns, -1).reshape({1, points, spatial + 1}).expand({n, points, spatial + 1});
  EMBER_CHECK(theta.size(0) == n, "Expected size for first two dimensions of batch2 tensor to be: [", n, ", ",
              spatial + 1, "] but got: [", theta.size(0), ", ", spatial + 1, "].");
  std::vector<int64_t> grid_sizes = {n};
  grid_sizes.insert(grid_sizes.end(), out_sizes.begin(), out_sizes.end());
  grid_sizes.push_back(spatial);
  return bmm(base, theta.transpose(1, 2)).view(grid_sizes);
}

Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode_name, std::string_view padding_mode,
                   std::optional<bool> align_corners_opt) {
  detail::OpContext context("grid_sample", {{"input", &input}, {"grid", &grid}});
  const Mode mode = parse_mode(mode_name);
  const Padding padding = parse_padding(padding_mode);
  const bool align_corners = resolve_align_corners(align_corners_opt);
  check_grid_sample(input, grid);

  const int64_t spatial = input.dim() - 2;
  const int64_t n = input.size(0), channels = input.size(1);
  // Per spatial dimension d of the input (D, H, W order), its taps from grid[..., spatial-1-d]
  // (the grid's last dimension is x, y, z: W first).
  std::vector<Taps> taps(static_cast<size_t>(spatial));
  for (int64_t d = 0; d < spatial; ++d) {
    const Tensor coordinate = grid.select(-1, spatial - 1 - d);
    taps[static_cast<size_t>(d)] = taps_of(coordinate, input.size(d + 2), mode, padding, align_corners);
  }
  std::vector<int64_t> out_spatial(grid.sizes().begin() + 1, grid.sizes().end() - 1);
  int64_t points = 1, pixels = 1;
  for (int64_t s : out_spatial) points *= s;
  for (int64_t d = 2; d < input.dim(); ++d) pixels *= input.size(d);
  // Channels last, one row of C values per pixel (one copy of the input): each tap is then one
  // index_select of whole rows, contiguous copies, where a gather along the pixels would read
  // one element at a time (about 20 times slower on the CPU).
  const Tensor pixel_rows = input.reshape({n, channels, pixels}).transpose(1, 2).reshape({n * pixels, channels});
  // The first row of each sample's pixels, added to its taps' flat indices.
  std::vector<int64_t> first_row_shape(static_cast<size_t>(spatial) + 1, 1);
  first_row_shape[0] = n;
  const Tensor first_row =
      (arange(n, TensorOptions().dtype(kInt64).device(input.device())) * pixels).reshape(first_row_shape);

  // Every combination of taps, the outermost dimension (D or H) slowest, as PyTorch sums its
  // corners (north-west, north-east, south-west, south-east; top before bottom).
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
  // [N * points, C] back to [N, C, *out_spatial], contiguous as PyTorch's result.
  std::vector<int64_t> out_sizes = {n, channels};
  out_sizes.insert(out_sizes.end(), out_spatial.begin(), out_spatial.end());
  return out.reshape({n, points, channels}).transpose(1, 2).reshape(out_sizes);
}

}  // namespace ember::nn::functional
