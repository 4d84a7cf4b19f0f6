#pragma once
// Tests that train on the real data set skip, saying how to install it, where it is missing.
#include <filesystem>

#include "ember/data/mnist.h"

namespace ember_test {

inline bool have_fashion_mnist() {
  for (const char* name : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"}) {
    if (std::filesystem::exists(std::filesystem::path(ember::data::kFashionMnistDir) / name)) return true;
  }
  return false;
}

}  // namespace ember_test

#define SKIP_WITHOUT_DATA()                                                             \
  if (!ember_test::have_fashion_mnist())                                                \
  GTEST_SKIP() << "Fashion-MNIST is not installed in " << ember::data::kFashionMnistDir \
               << " (Debian package dataset-fashion-mnist; tools/install-deps.sh installs it)"
