#include "train/models.h"

#include "ember/error.h"
#include "ember/nn/nn.h"

namespace ember::train {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn"};
  return names;
}

namespace {

// Named children as in the PyTorch quickstart (self.flatten, self.linear_relu_stack), so that the
// state_dict keys — linear_relu_stack.0.weight, ... — are the ones its model.pth has.
class QuickstartMlp : public nn::Module {
 public:
  QuickstartMlp() {
    flatten_ = register_module("flatten", std::make_shared<nn::Flatten>());
    stack_ = register_module(
        "linear_relu_stack",
        std::make_shared<nn::Sequential>(std::make_shared<nn::Linear>(28 * 28, 512), std::make_shared<nn::ReLU>(),
                                         std::make_shared<nn::Linear>(512, 512), std::make_shared<nn::ReLU>(),
                                         std::make_shared<nn::Linear>(512, 10)));
  }
  std::string name() const override { return "NeuralNetwork"; }
  Tensor forward(const Tensor& input) override { return stack_->forward(flatten_->forward(input)); }

 private:
  std::shared_ptr<nn::Flatten> flatten_;
  std::shared_ptr<nn::Sequential> stack_;
};

// pytorch/examples mnist/main.py's Net, with its attribute names (conv1, conv2, dropout1,
// dropout2, fc1, fc2) so that state_dict keys match. It returns logits: Net's log_softmax +
// nll_loss is the same loss as cross_entropy on logits, which the trainer uses for both models.
class ExamplesCnn : public nn::Module {
 public:
  ExamplesCnn() {
    conv1_ = register_module("conv1", std::make_shared<nn::Conv2d>(1, 32, 3, 1));
    conv2_ = register_module("conv2", std::make_shared<nn::Conv2d>(32, 64, 3, 1));
    dropout1_ = register_module("dropout1", std::make_shared<nn::Dropout>(0.25));
    dropout2_ = register_module("dropout2", std::make_shared<nn::Dropout>(0.5));
    fc1_ = register_module("fc1", std::make_shared<nn::Linear>(9216, 128));
    fc2_ = register_module("fc2", std::make_shared<nn::Linear>(128, 10));
  }
  std::string name() const override { return "Net"; }
  Tensor forward(const Tensor& input) override {
    Tensor x = conv1_->forward(input).relu();
    x = conv2_->forward(x).relu();
    x = nn::functional::max_pool2d(x, {2});
    x = dropout1_->forward(x).flatten(1);
    x = dropout2_->forward(fc1_->forward(x).relu());
    return fc2_->forward(x);
  }

 private:
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::Dropout> dropout1_, dropout2_;
  std::shared_ptr<nn::Linear> fc1_, fc2_;
};

}  // namespace

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "mlp") return std::make_shared<QuickstartMlp>();
  if (name == "cnn") return std::make_shared<ExamplesCnn>();
  throw Error("unknown model '" + name + "'; choose one of: mlp, cnn");
}

}  // namespace ember::train
