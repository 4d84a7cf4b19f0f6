// The ConvTranspose1d and ConvTranspose2d layers and nn::functional::conv_transpose1d/2d, which
// call the ops (src/ops/conv_transpose.cpp: conv2d's kernels run backwards, one
// ConvolutionBackward0 node). The layers' forward(input, output_size) picks output_padding as
// PyTorch's _ConvTransposeNd._output_padding does, with its messages.
#include "ember/nn/conv_transpose.h"

#include <vector>

#include "core/check.h"
#include "ember/conv_transpose.h"
#include "ember/factories.h"
#include "nn/conv_init.h"

namespace ember::nn {

namespace functional {

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntList stride, IntList padding,
                        IntList output_padding, int64_t groups, IntList dilation) {
  return ember::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  return ember::conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

}  // namespace functional

namespace {

/// _ConvNd's checks (after _ConvTransposeNd's on the padding mode), in PyTorch's order.
void check_layer(const char* layer, int64_t in_channels, int64_t out_channels, int64_t groups,
                 std::string_view padding_mode) {
  EMBER_CHECK(padding_mode == "zeros", "Only \"zeros\" padding mode is supported for ", layer);
  EMBER_CHECK(groups > 0, "groups must be a positive integer");
  EMBER_CHECK(in_channels % groups == 0, "in_channels must be divisible by groups");
  EMBER_CHECK(out_channels % groups == 0, "out_channels must be divisible by groups");
  EMBER_CHECK(in_channels >= 0 && out_channels >= 0, layer,
              ": channel counts must be non-negative, got in_channels=", in_channels, ", out_channels=", out_channels);
}

void take_pair(const Size2d& given, const char* name, int64_t (&into)[2]) {
  EMBER_CHECK(given.valid(), "ConvTranspose2d: ", name, " must be a single integer or a list of 2 integers");
  into[0] = given[0];
  into[1] = given[1];
}

/// PyTorch's _output_padding: the output_padding that gives `output_size` (the spatial sizes,
/// optionally after the batch and channel sizes) for `input`, each between the smallest output
/// and that plus stride - 1.
std::vector<int64_t> output_padding_for(const Tensor& input, IntList output_size, int64_t spatial,
                                        const int64_t* stride, const int64_t* padding, const int64_t* kernel,
                                        const int64_t* dilation) {
  const int64_t non_spatial = input.dim() == spatial + 2 ? 2 : 1;
  std::vector<int64_t> size(output_size.begin(), output_size.end());
  if (static_cast<int64_t>(size.size()) == non_spatial + spatial) size.erase(size.begin(), size.begin() + non_spatial);
  EMBER_CHECK(static_cast<int64_t>(size.size()) == spatial, "ConvTranspose", spatial, "D: for ", input.dim(),
              "D input, output_size must have ", spatial, " or ", non_spatial + spatial, " elements (got ", size.size(),
              ")");
  std::vector<int64_t> min_sizes, max_sizes;
  for (int64_t d = 0; d < spatial; ++d) {
    min_sizes.push_back((input.size(d + non_spatial) - 1) * stride[d] - 2 * padding[d] + dilation[d] * (kernel[d] - 1) +
                        1);
    max_sizes.push_back(min_sizes.back() + stride[d] - 1);
  }
  std::vector<int64_t> result;
  for (int64_t d = 0; d < spatial; ++d) {
    const size_t i = static_cast<size_t>(d);
    // PyTorch names the input's sizes from the third on (input.size()[2:]), batched or not.
    const IntList sizes = input.sizes();
    const IntList tail = sizes.size() > 2 ? IntList(sizes.data() + 2, sizes.size() - 2) : IntList();
    EMBER_CHECK(size[i] >= min_sizes[i] && size[i] <= max_sizes[i], "requested an output size of ",
                ember::detail::shape_str(size), ", but valid sizes range from ", ember::detail::shape_str(min_sizes),
                " to ", ember::detail::shape_str(max_sizes), " (for an input of torch.Size(",
                ember::detail::shape_str(tail), "))");
    result.push_back(size[i] - min_sizes[i]);
  }
  return result;
}

/// Whether the input has a rank the op accepts (else the op's own check names the problem).
bool usable_rank(const Tensor& input, int64_t spatial) {
  return input.defined() && (input.dim() == spatial + 1 || input.dim() == spatial + 2);
}

int64_t take_one(const ExpandingSize<1>& given, const char* name) {
  EMBER_CHECK(given.valid(), "ConvTranspose1d: ", name, " must be a single integer or a list of one integer");
  return given[0];
}

}  // namespace

// ---------------------------------------------------------------- ConvTranspose1d

ConvTranspose1d::ConvTranspose1d(int64_t in_channels, int64_t out_channels, ExpandingSize<1> kernel_size,
                                 ConvTranspose1dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(take_one(kernel_size, "kernel_size")),
      stride(take_one(options.stride, "stride")),
      padding(take_one(options.padding, "padding")),
      output_padding(take_one(options.output_padding, "output_padding")),
      groups(options.groups),
      dilation(take_one(options.dilation, "dilation")),
      padding_mode(std::move(options.padding_mode)) {
  check_layer("ConvTranspose1d", in_channels, out_channels, groups, padding_mode);
  weight = register_parameter("weight", ember::empty({in_channels, out_channels / groups, this->kernel_size}));
  if (options.bias) this->bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void ConvTranspose1d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor ConvTranspose1d::forward(const Tensor& input) {
  return functional::conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor ConvTranspose1d::forward(const Tensor& input, IntList output_size) {
  if (!usable_rank(input, 1)) return forward(input);
  const std::vector<int64_t> chosen =
      output_padding_for(input, output_size, 1, &stride, &padding, &kernel_size, &dilation);
  return functional::conv_transpose1d(input, weight, bias, stride, padding, chosen[0], groups, dilation);
}

// ---------------------------------------------------------------- ConvTranspose2d

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, Size2d kernel_size,
                                 ConvTranspose2dOptions options)
    : in_channels(in_channels),
      out_channels(out_channels),
      groups(options.groups),
      padding_mode(std::move(options.padding_mode)) {
  check_layer("ConvTranspose2d", in_channels, out_channels, groups, padding_mode);
  take_pair(kernel_size, "kernel_size", this->kernel_size);
  take_pair(options.stride, "stride", this->stride);
  take_pair(options.padding, "padding", this->padding);
  take_pair(options.output_padding, "output_padding", this->output_padding);
  take_pair(options.dilation, "dilation", this->dilation);
  weight = register_parameter(
      "weight", ember::empty({in_channels, out_channels / groups, this->kernel_size[0], this->kernel_size[1]}));
  if (options.bias) this->bias = register_parameter("bias", ember::empty({out_channels}));
  reset_parameters();
}

void ConvTranspose2d::reset_parameters() { detail::reset_conv_parameters(weight, bias); }

Tensor ConvTranspose2d::forward(const Tensor& input) {
  return functional::conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation);
}

Tensor ConvTranspose2d::forward(const Tensor& input, IntList output_size) {
  if (!usable_rank(input, 2)) return forward(input);
  const std::vector<int64_t> chosen = output_padding_for(input, output_size, 2, stride, padding, kernel_size, dilation);
  return functional::conv_transpose2d(input, weight, bias, stride, padding, chosen, groups, dilation);
}

}  // namespace ember::nn
