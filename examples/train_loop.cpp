// A training loop written against the library, the C++ form of the PyTorch quickstart: the
// network, SGD, one pass over Fashion-MNIST, then test accuracy. `ember train` does the same with
// progress, checkpoints and a run directory; this shows the API underneath.
//   usage: train_loop [DATA_DIR]   (default: Debian's dataset-fashion-mnist folder)
#include <ember/ember.h>

#include <iostream>
#include <memory>

int main(int argc, char** argv) try {
  using namespace ember;
  const std::string root = argc > 1 ? argv[1] : data::kFashionMnistDir;
  const Device device = best_device();
  manual_seed(0);

  auto train_set = std::make_shared<data::MNIST>(root, data::MNIST::Split::Train);
  auto test_set = std::make_shared<data::MNIST>(root, data::MNIST::Split::Test);
  data::DataLoader loader(train_set, {.batch_size = 64, .shuffle = true, .seed = 0});

  auto model = std::make_shared<nn::Sequential>(std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 512),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(512, 512),
                                                std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(512, 10));
  model->to(device);
  optim::SGD optimizer(model->parameters(), {.lr = 0.1, .momentum = 0.9});

  model->train();
  for (data::Batch& batch : loader) {
    Tensor loss = nn::functional::cross_entropy(model->forward(batch.data.to(device)), batch.target.to(device));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }

  NoGradGuard no_grad;
  model->eval();
  int64_t correct = 0;
  for (data::Batch& batch : data::DataLoader(test_set, {.batch_size = 1000})) {
    correct += model->forward(batch.data.to(device)).argmax(1).eq(batch.target.to(device)).sum().item<int64_t>();
  }
  std::cout << "test accuracy after one epoch: "
            << 100.0 * static_cast<double>(correct) / static_cast<double>(test_set->size()) << "%\n";
  io::save_safetensors("quickstart.safetensors", model->state_dict().items());
} catch (const ember::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
