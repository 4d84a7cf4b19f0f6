// torchvision's ResNet (see include/ember/models/resnet.h), built from ember::nn layers.
#include "ember/models/resnet.h"

#include <utility>

#include "core/check.h"
#include "ember/nn/init.h"

namespace ember::models {

namespace {

std::shared_ptr<nn::Conv2d> conv3x3(int64_t in_planes, int64_t out_planes, int64_t stride = 1, int64_t groups = 1,
                                    int64_t dilation = 1) {
  // padding = dilation keeps the spatial size at stride 1, as torchvision's conv3x3.
  return std::make_shared<nn::Conv2d>(
      in_planes, out_planes, 3,
      nn::Conv2dOptions{.stride = stride, .padding = dilation, .dilation = dilation, .groups = groups, .bias = false});
}

std::shared_ptr<nn::Conv2d> conv1x1(int64_t in_planes, int64_t out_planes, int64_t stride = 1) {
  return std::make_shared<nn::Conv2d>(in_planes, out_planes, 1, nn::Conv2dOptions{.stride = stride, .bias = false});
}

}  // namespace

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<nn::Sequential> downsample,
                       int64_t groups, int64_t base_width, int64_t dilation)
    : stride(stride) {
  EMBER_CHECK(groups == 1 && base_width == 64, "BasicBlock only supports groups=1 and base_width=64");
  EMBER_CHECK(dilation <= 1, "Dilation > 1 not supported in BasicBlock");
  // Registration order is torchvision's attribute order, which fixes the state_dict order.
  conv1 = register_module("conv1", conv3x3(inplanes, planes, stride));
  bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(planes));
  relu = register_module("relu", std::make_shared<nn::ReLU>(true));
  conv2 = register_module("conv2", conv3x3(planes, planes));
  bn2 = register_module("bn2", std::make_shared<nn::BatchNorm2d>(planes));
  if (downsample) this->downsample = register_module("downsample", std::move(downsample));
}

Tensor BasicBlock::forward(const Tensor& input) {
  Tensor out = (*relu)((*bn1)((*conv1)(input)));
  out = (*bn2)((*conv2)(out));
  const Tensor identity = downsample ? (*downsample)(input) : input;
  return (*relu)(out + identity);
}

Bottleneck::Bottleneck(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<nn::Sequential> downsample,
                       int64_t groups, int64_t base_width, int64_t dilation)
    : stride(stride) {
  // torchvision's int(planes * (base_width / 64.0)) * groups.
  const int64_t width =
      static_cast<int64_t>(static_cast<double>(planes) * (static_cast<double>(base_width) / 64.0)) * groups;
  EMBER_CHECK(width > 0, "Bottleneck: planes * (base_width / 64) * groups must be at least 1, got planes=", planes,
              ", base_width=", base_width, ", groups=", groups);
  conv1 = register_module("conv1", conv1x1(inplanes, width));
  bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(width));
  conv2 = register_module("conv2", conv3x3(width, width, stride, groups, dilation));
  bn2 = register_module("bn2", std::make_shared<nn::BatchNorm2d>(width));
  conv3 = register_module("conv3", conv1x1(width, planes * expansion));
  bn3 = register_module("bn3", std::make_shared<nn::BatchNorm2d>(planes * expansion));
  relu = register_module("relu", std::make_shared<nn::ReLU>(true));
  if (downsample) this->downsample = register_module("downsample", std::move(downsample));
}

Tensor Bottleneck::forward(const Tensor& input) {
  Tensor out = (*relu)((*bn1)((*conv1)(input)));
  out = (*relu)((*bn2)((*conv2)(out)));
  out = (*bn3)((*conv3)(out));
  const Tensor identity = downsample ? (*downsample)(input) : input;
  return (*relu)(out + identity);
}

ResNet::ResNet(ResNetBlock block, std::array<int64_t, 4> layers, ResNetOptions options)
    : inplanes_(options.stage_widths[0]), dilation_(1), groups_(options.groups), base_width_(options.width_per_group) {
  for (int64_t blocks : layers) EMBER_CHECK(blocks >= 1, "ResNet: every stage needs at least one block, got ", blocks);
  for (int64_t width : options.stage_widths)
    EMBER_CHECK(width >= 1, "ResNet: stage_widths must be positive, got ", width);
  EMBER_CHECK(options.num_classes >= 1, "ResNet: num_classes must be positive, got ", options.num_classes);
  conv1 = register_module("conv1", std::make_shared<nn::Conv2d>(
                                       3, inplanes_, 7, nn::Conv2dOptions{.stride = 2, .padding = 3, .bias = false}));
  bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2d>(inplanes_));
  relu = register_module("relu", std::make_shared<nn::ReLU>(true));
  maxpool =
      register_module("maxpool", std::make_shared<nn::MaxPool2d>(3, nn::MaxPool2dOptions{.stride = 2, .padding = 1}));
  const auto& widths = options.stage_widths;
  const auto& dilate = options.replace_stride_with_dilation;
  layer1 = register_module("layer1", make_layer(block, widths[0], layers[0], 1, false));
  layer2 = register_module("layer2", make_layer(block, widths[1], layers[1], 2, dilate[0]));
  layer3 = register_module("layer3", make_layer(block, widths[2], layers[2], 2, dilate[1]));
  layer4 = register_module("layer4", make_layer(block, widths[3], layers[3], 2, dilate[2]));
  avgpool = register_module("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(1));
  const int64_t expansion = block == ResNetBlock::Basic ? BasicBlock::expansion : Bottleneck::expansion;
  fc = register_module("fc", std::make_shared<nn::Linear>(widths[3] * expansion, options.num_classes));

  // torchvision redraws in modules() order (depth first), after every layer drew its default
  // initialisation on construction: the same sequence of draws from the generator.
  for (const auto& module : modules()) {
    if (auto conv = std::dynamic_pointer_cast<nn::Conv2d>(module)) {
      nn::init::kaiming_normal_(conv->weight, 0.0, "fan_out", "relu");
    } else if (auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(module)) {
      nn::init::constant_(bn->weight, 1.0);
      nn::init::constant_(bn->bias, 0.0);
    }
  }
  if (options.zero_init_residual) {
    for (const auto& module : modules()) {
      if (auto bottleneck = std::dynamic_pointer_cast<Bottleneck>(module)) {
        nn::init::constant_(bottleneck->bn3->weight, 0.0);
      } else if (auto basic = std::dynamic_pointer_cast<BasicBlock>(module)) {
        nn::init::constant_(basic->bn2->weight, 0.0);
      }
    }
  }
}

std::shared_ptr<nn::Sequential> ResNet::make_layer(ResNetBlock block, int64_t planes, int64_t blocks, int64_t stride,
                                                   bool dilate) {
  const int64_t expansion = block == ResNetBlock::Basic ? BasicBlock::expansion : Bottleneck::expansion;
  const int64_t previous_dilation = dilation_;
  if (dilate) {
    dilation_ *= stride;
    stride = 1;
  }
  std::shared_ptr<nn::Sequential> downsample;
  if (stride != 1 || inplanes_ != planes * expansion) {
    downsample = std::make_shared<nn::Sequential>(conv1x1(inplanes_, planes * expansion, stride),
                                                  std::make_shared<nn::BatchNorm2d>(planes * expansion));
  }
  auto make_block = [&](int64_t in, int64_t block_stride, std::shared_ptr<nn::Sequential> down,
                        int64_t dilation) -> std::shared_ptr<nn::Module> {
    if (block == ResNetBlock::Basic)
      return std::make_shared<BasicBlock>(in, planes, block_stride, std::move(down), groups_, base_width_, dilation);
    return std::make_shared<Bottleneck>(in, planes, block_stride, std::move(down), groups_, base_width_, dilation);
  };
  auto layer = std::make_shared<nn::Sequential>();
  layer->push_back(make_block(inplanes_, stride, std::move(downsample), previous_dilation));
  inplanes_ = planes * expansion;
  for (int64_t i = 1; i < blocks; ++i) layer->push_back(make_block(inplanes_, 1, nullptr, dilation_));
  return layer;
}

Tensor ResNet::forward(const Tensor& input) {
  Tensor x = (*maxpool)((*relu)((*bn1)((*conv1)(input))));
  x = (*layer4)((*layer3)((*layer2)((*layer1)(x))));
  return (*fc)((*avgpool)(x).flatten(1));
}

std::shared_ptr<ResNet> resnet18(ResNetOptions options) {
  return std::make_shared<ResNet>(ResNetBlock::Basic, std::array<int64_t, 4>{2, 2, 2, 2}, options);
}

std::shared_ptr<ResNet> resnet34(ResNetOptions options) {
  return std::make_shared<ResNet>(ResNetBlock::Basic, std::array<int64_t, 4>{3, 4, 6, 3}, options);
}

std::shared_ptr<ResNet> resnet50(ResNetOptions options) {
  return std::make_shared<ResNet>(ResNetBlock::Bottleneck, std::array<int64_t, 4>{3, 4, 6, 3}, options);
}

}  // namespace ember::models
