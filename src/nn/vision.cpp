// affine_grid, composed of ember ops (linspace, stack and one bmm), and grid_sample's argument
// parsing (mode names, padding names, align_corners' default and warning), which hands the
// sampling to its op (src/ops/grid_sample.cpp: ATen's checks, the backend kernels, autograd).
#include "ember/nn/vision.h"

#include <sstream>
#include <string>
#include <vector>

#include "core/check.h"
#include "ember/factories.h"
#include "ember/grad_mode.h"
#include "ember/ops.h"
#include "ember/warning.h"
#include "ops/grid_sample.h"

namespace ember::nn::functional {

namespace {

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

GridSampleMode parse_mode(std::string_view mode) {
  if (mode == "bilinear") return GridSampleMode::Bilinear;
  if (mode == "nearest") return GridSampleMode::Nearest;
  EMBER_CHECK(mode == "bicubic",
              "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '", mode,
              "'");
  return GridSampleMode::Bicubic;
}

GridSamplePadding parse_padding(std::string_view padding_mode) {
  if (padding_mode == "zeros") return GridSamplePadding::Zeros;
  if (padding_mode == "border") return GridSamplePadding::Border;
  EMBER_CHECK(padding_mode == "reflection",
              "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: '",
              padding_mode, "'");
  return GridSamplePadding::Reflection;
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
  GridSampleArgs args;
  args.mode = parse_mode(mode_name);
  args.padding = parse_padding(padding_mode);
  args.align_corners = resolve_align_corners(align_corners_opt);
  return ops::grid_sample(input, grid, args);
}

}  // namespace ember::nn::functional
