#pragma once
/// Padding layers: torch.nn's ZeroPad{1,2,3}d, ConstantPad{1,2,3}d, ReflectionPad{1,2,3}d,
/// ReplicationPad{1,2,3}d and CircularPad{1,2,3}d, and torch.nn.functional.pad, which they call
/// (the op is ember::pad, ember/pad.h, which says what each mode computes).
///
/// `padding` is one value for every side, or the list handed to pad as it is, (left, right),
/// (left, right, top, bottom) or (left, right, top, bottom, front, back), as PyTorch's _ntuple
/// takes it: a list of another length is accepted here and refused by pad when the layer runs.
/// The NdD layers pad the last N dimensions of an input with one or two more (unbatched or
/// batched); only the circular ones check the input's rank themselves, as in PyTorch.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/nn/module.h"
#include "ember/tensor.h"

namespace ember::nn {

namespace functional {

/// torch.nn.functional.pad: see ember::pad.
Tensor pad(const Tensor& input, IntList pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);

}  // namespace functional

/// The base of the Constant and Zero layers (PyTorch's _ConstantPadNd).
class ConstantPadNd : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> padding;
  double value;

 protected:
  ConstantPadNd(std::vector<int64_t> padding, double value) : padding(std::move(padding)), value(value) {}
};

class ConstantPad1d : public ConstantPadNd {
 public:
  ConstantPad1d(int64_t padding, double value) : ConstantPadNd(std::vector<int64_t>(2, padding), value) {}
  ConstantPad1d(std::vector<int64_t> padding, double value) : ConstantPadNd(std::move(padding), value) {}
  std::string name() const override { return "ConstantPad1d"; }
};

class ConstantPad2d : public ConstantPadNd {
 public:
  ConstantPad2d(int64_t padding, double value) : ConstantPadNd(std::vector<int64_t>(4, padding), value) {}
  ConstantPad2d(std::vector<int64_t> padding, double value) : ConstantPadNd(std::move(padding), value) {}
  std::string name() const override { return "ConstantPad2d"; }
};

class ConstantPad3d : public ConstantPadNd {
 public:
  ConstantPad3d(int64_t padding, double value) : ConstantPadNd(std::vector<int64_t>(6, padding), value) {}
  ConstantPad3d(std::vector<int64_t> padding, double value) : ConstantPadNd(std::move(padding), value) {}
  std::string name() const override { return "ConstantPad3d"; }
};

/// ConstantPad1d with the value 0.
class ZeroPad1d : public ConstantPad1d {
 public:
  explicit ZeroPad1d(int64_t padding) : ConstantPad1d(padding, 0.0) {}
  explicit ZeroPad1d(std::vector<int64_t> padding) : ConstantPad1d(std::move(padding), 0.0) {}
  std::string name() const override { return "ZeroPad1d"; }
};

class ZeroPad2d : public ConstantPad2d {
 public:
  explicit ZeroPad2d(int64_t padding) : ConstantPad2d(padding, 0.0) {}
  explicit ZeroPad2d(std::vector<int64_t> padding) : ConstantPad2d(std::move(padding), 0.0) {}
  std::string name() const override { return "ZeroPad2d"; }
};

class ZeroPad3d : public ConstantPad3d {
 public:
  explicit ZeroPad3d(int64_t padding) : ConstantPad3d(padding, 0.0) {}
  explicit ZeroPad3d(std::vector<int64_t> padding) : ConstantPad3d(std::move(padding), 0.0) {}
  std::string name() const override { return "ZeroPad3d"; }
};

/// The base of the Reflection layers (PyTorch's _ReflectionPadNd).
class ReflectionPadNd : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> padding;

 protected:
  explicit ReflectionPadNd(std::vector<int64_t> padding) : padding(std::move(padding)) {}
};

class ReflectionPad1d : public ReflectionPadNd {
 public:
  explicit ReflectionPad1d(int64_t padding) : ReflectionPadNd(std::vector<int64_t>(2, padding)) {}
  explicit ReflectionPad1d(std::vector<int64_t> padding) : ReflectionPadNd(std::move(padding)) {}
  std::string name() const override { return "ReflectionPad1d"; }
};

class ReflectionPad2d : public ReflectionPadNd {
 public:
  explicit ReflectionPad2d(int64_t padding) : ReflectionPadNd(std::vector<int64_t>(4, padding)) {}
  explicit ReflectionPad2d(std::vector<int64_t> padding) : ReflectionPadNd(std::move(padding)) {}
  std::string name() const override { return "ReflectionPad2d"; }
};

class ReflectionPad3d : public ReflectionPadNd {
 public:
  explicit ReflectionPad3d(int64_t padding) : ReflectionPadNd(std::vector<int64_t>(6, padding)) {}
  explicit ReflectionPad3d(std::vector<int64_t> padding) : ReflectionPadNd(std::move(padding)) {}
  std::string name() const override { return "ReflectionPad3d"; }
};

/// The base of the Replication layers (PyTorch's _ReplicationPadNd).
class ReplicationPadNd : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> padding;

 protected:
  explicit ReplicationPadNd(std::vector<int64_t> padding) : padding(std::move(padding)) {}
};

class ReplicationPad1d : public ReplicationPadNd {
 public:
  explicit ReplicationPad1d(int64_t padding) : ReplicationPadNd(std::vector<int64_t>(2, padding)) {}
  explicit ReplicationPad1d(std::vector<int64_t> padding) : ReplicationPadNd(std::move(padding)) {}
  std::string name() const override { return "ReplicationPad1d"; }
};

class ReplicationPad2d : public ReplicationPadNd {
 public:
  explicit ReplicationPad2d(int64_t padding) : ReplicationPadNd(std::vector<int64_t>(4, padding)) {}
  explicit ReplicationPad2d(std::vector<int64_t> padding) : ReplicationPadNd(std::move(padding)) {}
  std::string name() const override { return "ReplicationPad2d"; }
};

class ReplicationPad3d : public ReplicationPadNd {
 public:
  explicit ReplicationPad3d(int64_t padding) : ReplicationPadNd(std::vector<int64_t>(6, padding)) {}
  explicit ReplicationPad3d(std::vector<int64_t> padding) : ReplicationPadNd(std::move(padding)) {}
  std::string name() const override { return "ReplicationPad3d"; }
};

/// The base of the Circular layers (PyTorch's _CircularPadNd). Unlike the others, these check
/// the input's rank before padding: "expected 2D or 3D input (got 4D input)" (PyTorch's
/// ValueError).
class CircularPadNd : public Module {
 public:
  Tensor forward(const Tensor& input) override;
  std::vector<int64_t> padding;

 protected:
  CircularPadNd(std::vector<int64_t> padding, int64_t dims) : padding(std::move(padding)), dims_(dims) {}

 private:
  int64_t dims_;  // 1, 2 or 3 padded dimensions
};

class CircularPad1d : public CircularPadNd {
 public:
  explicit CircularPad1d(int64_t padding) : CircularPadNd(std::vector<int64_t>(2, padding), 1) {}
  explicit CircularPad1d(std::vector<int64_t> padding) : CircularPadNd(std::move(padding), 1) {}
  std::string name() const override { return "CircularPad1d"; }
};

class CircularPad2d : public CircularPadNd {
 public:
  explicit CircularPad2d(int64_t padding) : CircularPadNd(std::vector<int64_t>(4, padding), 2) {}
  explicit CircularPad2d(std::vector<int64_t> padding) : CircularPadNd(std::move(padding), 2) {}
  std::string name() const override { return "CircularPad2d"; }
};

class CircularPad3d : public CircularPadNd {
 public:
  explicit CircularPad3d(int64_t padding) : CircularPadNd(std::vector<int64_t>(6, padding), 3) {}
  explicit CircularPad3d(std::vector<int64_t> padding) : CircularPadNd(std::move(padding), 3) {}
  std::string name() const override { return "CircularPad3d"; }
};

}  // namespace ember::nn
