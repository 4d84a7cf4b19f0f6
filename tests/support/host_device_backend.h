#pragma once
// A stand-in accelerator for machines without one. HostDeviceBackend runs the CPU backend's
// kernels on host memory but reports another device type (MPS, which no build of ember has a
// backend for yet), so tests can create tensors "on mps:0" and run any op, layer, loss, optimizer
// step or backward pass there. Code that makes a tensor on the wrong device then fails exactly as
// on a GPU: the front end's own checks throw "Expected all tensors to be on the same device".
//
// It also catches what those checks let through: every view it is handed must lie inside memory
// it allocated, so a CPU tensor that reaches a kernel (a 0-dim CPU tensor joining a device op,
// say, which on a GPU makes the kernel read a host pointer) is an ember::Error naming the entry
// point and the argument.
//
//   class MyTest : public ::testing::Test {
//     ember_test::ScopedHostDevice host_device_;  // mps:0 works while the fixture lives
//   };
//
// It can stand for several devices (ScopedHostDevice(2): mps:0 and mps:1), each allocation
// belonging to one of them, so a view handed to a kernel of one device that lies in another
// device's memory fails too, and copies between them (cuda:0 -> cuda:1 on a GPU) go through
// copy_between_devices, whose calls it counts as it counts the copies to and from the host.
//
// Only a test registers it (src/backend/registry.cpp: a registered MPS backend is used without
// the availability check), and only for the scope of a ScopedHostDevice: other suites still see
// MPS as unavailable. Every tensor on it must be gone before the scope ends.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "ember/device.h"
#include "ember/error.h"
#include "kernels/optim_ops.h"

namespace ember_test {

class HostDeviceBackend final : public ember::Backend {
 public:
  explicit HostDeviceBackend(ember::DeviceType type = ember::DeviceType::MPS) : type_(type) {}

  ember::DeviceType type() const override { return type_; }
  int device_count() const noexcept override { return device_count_.load(); }
  /// How many devices it stands for (ScopedHostDevice sets it; 1 otherwise).
  void set_device_count(int count) { device_count_.store(count); }

  /// How often each entry point that moves bytes between devices, or updates parameters, has
  /// been called since reset_counts(): a test checks that a copy between two of its devices
  /// never went through the host, or that an optimizer step took one multi-tensor call.
  struct Counts {
    int64_t copy_to_host = 0, copy_from_host = 0, copy_between_devices = 0;
    int64_t single_tensor_updates = 0, multi_tensor_updates = 0;
  };
  Counts counts() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }
  void reset_counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_ = Counts{};
  }

  /// Bytes it has allocated and not yet freed: 0 once every tensor on it is gone.
  size_t live_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (const auto& [begin, block] : live_) total += block.nbytes;
    return total;
  }

  // ---- memory: the CPU's allocator, with a record of what lives "on the device" ----
  void* allocate(size_t nbytes, int device_index) override {
    check_index(device_index, "allocate");
    void* p = cpu().allocate(nbytes, 0);
    if (p != nullptr && nbytes != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_[reinterpret_cast<uintptr_t>(p)] = Block{nbytes, device_index};
    }
    return p;
  }
  void deallocate(void* ptr, size_t nbytes, int /*device_index*/) noexcept override {
    if (ptr != nullptr && nbytes != 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(reinterpret_cast<uintptr_t>(ptr));
    }
    cpu().deallocate(ptr, nbytes, 0);
  }

  // ---- copies: host <-> "device" are plain memcpy ----
  void copy(const ember::TensorView& dst, const ember::TensorView& src) override {
    on_device("copy", {{"dst", &dst}, {"src", &src}});
    cpu().copy(dst, src);
  }
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index,
                      bool /*non_blocking*/) override {
    check_index(device_index, "copy_from_host");
    check_range("copy_from_host", "dst", reinterpret_cast<uintptr_t>(dst), nbytes, device_index);
    count(&Counts::copy_from_host);
    if (nbytes != 0) std::memcpy(dst, host_src, nbytes);
  }
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool /*non_blocking*/) override {
    check_index(device_index, "copy_to_host");
    check_range("copy_to_host", "src", reinterpret_cast<uintptr_t>(src), nbytes, device_index);
    count(&Counts::copy_to_host);
    if (nbytes != 0) std::memcpy(host_dst, src, nbytes);
  }
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override {
    check_index(dst_index, "copy_between_devices");
    check_index(src_index, "copy_between_devices");
    check_range("copy_between_devices", "dst", reinterpret_cast<uintptr_t>(dst), nbytes, dst_index);
    check_range("copy_between_devices", "src", reinterpret_cast<uintptr_t>(src), nbytes, src_index);
    count(&Counts::copy_between_devices);
    if (nbytes != 0) std::memmove(dst, src, nbytes);
  }
  void fill(const ember::TensorView& out, const ember::Scalar& value) override {
    on_device("fill", {{"out", &out}});
    cpu().fill(out, value);
  }

  // ---- element-wise ----
  void unary(ember::UnaryOp op, const ember::TensorView& x, const ember::TensorView& out) override {
    on_device(ember::op_name(op), {{"x", &x}, {"out", &out}});
    cpu().unary(op, x, out);
  }
  void binary(ember::BinaryOp op, const ember::TensorView& a, const ember::TensorView& b,
              const ember::TensorView& out) override {
    on_device(ember::op_name(op), {{"a", &a}, {"b", &b}, {"out", &out}});
    cpu().binary(op, a, b, out);
  }
  void add_scaled(const ember::TensorView& a, const ember::TensorView& b, const ember::Scalar& alpha,
                  const ember::TensorView& out) override {
    on_device("add_scaled", {{"a", &a}, {"b", &b}, {"out", &out}});
    cpu().add_scaled(a, b, alpha, out);
  }
  void where(const ember::TensorView& cond, const ember::TensorView& a, const ember::TensorView& b,
             const ember::TensorView& out) override {
    on_device("where", {{"cond", &cond}, {"a", &a}, {"b", &b}, {"out", &out}});
    cpu().where(cond, a, b, out);
  }
  void clamp(const ember::TensorView& x, const ember::Scalar& lo, const ember::Scalar& hi, bool has_lo, bool has_hi,
             const ember::TensorView& out) override {
    on_device("clamp", {{"x", &x}, {"out", &out}});
    cpu().clamp(x, lo, hi, has_lo, has_hi, out);
  }

  // ---- reductions, products, softmax ----
  void reduce(ember::ReduceOp op, const ember::TensorView& x, int64_t reduced_dims, const ember::TensorView& out,
              const ember::TensorView& indices, int64_t correction) override {
    on_device(ember::op_name(op), {{"x", &x}, {"out", &out}, {"indices", &indices}});
    cpu().reduce(op, x, reduced_dims, out, indices, correction);
  }
  void matmul(const ember::TensorView& a, const ember::TensorView& b, const ember::TensorView& out) override {
    on_device("matmul", {{"a", &a}, {"b", &b}, {"out", &out}});
    cpu().matmul(a, b, out);
  }
  void softmax(const ember::TensorView& x, const ember::TensorView& out, bool log) override {
    on_device(log ? "log_softmax" : "softmax", {{"x", &x}, {"out", &out}});
    cpu().softmax(x, out, log);
  }

  // ---- convolution and pooling ----
  void conv2d(const ember::TensorView& x, const ember::TensorView& weight, const ember::TensorView& bias,
              const ember::TensorView& out, const ember::Conv2dArgs& args) override {
    on_device("conv2d", {{"x", &x}, {"weight", &weight}, {"bias", &bias}, {"out", &out}});
    cpu().conv2d(x, weight, bias, out, args);
  }
  void conv2d_backward(const ember::TensorView& grad_out, const ember::TensorView& x, const ember::TensorView& weight,
                       const ember::Conv2dArgs& args, const ember::TensorView& grad_x,
                       const ember::TensorView& grad_weight, const ember::TensorView& grad_bias) override {
    on_device("conv2d_backward", {{"grad_out", &grad_out},
                                  {"x", &x},
                                  {"weight", &weight},
                                  {"grad_x", &grad_x},
                                  {"grad_weight", &grad_weight},
                                  {"grad_bias", &grad_bias}});
    cpu().conv2d_backward(grad_out, x, weight, args, grad_x, grad_weight, grad_bias);
  }
  void pool2d(const ember::TensorView& x, const ember::TensorView& out, const ember::TensorView& indices,
              const ember::Pool2dArgs& args) override {
    on_device(ember::pool2d_name(args.kind, false), {{"x", &x}, {"out", &out}, {"indices", &indices}});
    cpu().pool2d(x, out, indices, args);
  }
  void pool2d_backward(const ember::TensorView& grad_out, const ember::TensorView& indices,
                       const ember::TensorView& grad_x, const ember::Pool2dArgs& args) override {
    on_device(ember::pool2d_name(args.kind, true),
              {{"grad_out", &grad_out}, {"indices", &indices}, {"grad_x", &grad_x}});
    cpu().pool2d_backward(grad_out, indices, grad_x, args);
  }

  // ---- indexing ----
  void index_select(const ember::TensorView& x, int64_t dim, const ember::TensorView& index,
                    const ember::TensorView& out) override {
    on_device("index_select", {{"x", &x}, {"index", &index}, {"out", &out}});
    cpu().index_select(x, dim, index, out);
  }
  void gather(const ember::TensorView& x, int64_t dim, const ember::TensorView& index,
              const ember::TensorView& out) override {
    on_device("gather", {{"x", &x}, {"index", &index}, {"out", &out}});
    cpu().gather(x, dim, index, out);
  }
  void scatter_add(const ember::TensorView& out, int64_t dim, const ember::TensorView& index,
                   const ember::TensorView& src) override {
    on_device("scatter_add", {{"out", &out}, {"index", &index}, {"src", &src}});
    cpu().scatter_add(out, dim, index, src);
  }

  // ---- fused cross-entropy ----
  void cross_entropy(const ember::TensorView& logits, const ember::TensorView& target, const ember::TensorView& weight,
                     int64_t ignore_index, double label_smoothing, const ember::TensorView& loss,
                     const ember::TensorView& row_weight, const ember::TensorView& stats) override {
    on_device("cross_entropy", {{"logits", &logits},
                                {"target", &target},
                                {"weight", &weight},
                                {"loss", &loss},
                                {"row_weight", &row_weight},
                                {"stats", &stats}});
    cpu().cross_entropy(logits, target, weight, ignore_index, label_smoothing, loss, row_weight, stats);
  }
  void cross_entropy_backward(const ember::TensorView& grad_loss, const ember::TensorView& logits,
                              const ember::TensorView& target, const ember::TensorView& weight, int64_t ignore_index,
                              double label_smoothing, const ember::TensorView& stats,
                              const ember::TensorView& grad_logits) override {
    on_device("cross_entropy_backward", {{"grad_loss", &grad_loss},
                                         {"logits", &logits},
                                         {"target", &target},
                                         {"weight", &weight},
                                         {"stats", &stats},
                                         {"grad_logits", &grad_logits}});
    cpu().cross_entropy_backward(grad_loss, logits, target, weight, ignore_index, label_smoothing, stats, grad_logits);
  }

  // ---- the fused recurrent cells ----
  void lstm_cell(const ember::TensorView& input_gates, const ember::TensorView& hidden_gates,
                 const ember::TensorView& cx, const ember::TensorView& out) override {
    on_device("lstm_cell",
              {{"input_gates", &input_gates}, {"hidden_gates", &hidden_gates}, {"cx", &cx}, {"out", &out}});
    cpu().lstm_cell(input_gates, hidden_gates, cx, out);
  }
  void lstm_cell_backward(const ember::TensorView& grad_out, const ember::TensorView& input_gates,
                          const ember::TensorView& hidden_gates, const ember::TensorView& cx,
                          const ember::TensorView& grad_gates, const ember::TensorView& grad_cx) override {
    on_device("lstm_cell_backward", {{"grad_out", &grad_out},
                                     {"input_gates", &input_gates},
                                     {"hidden_gates", &hidden_gates},
                                     {"cx", &cx},
                                     {"grad_gates", &grad_gates},
                                     {"grad_cx", &grad_cx}});
    cpu().lstm_cell_backward(grad_out, input_gates, hidden_gates, cx, grad_gates, grad_cx);
  }

  void gru_cell(const ember::TensorView& input_gates, const ember::TensorView& hidden_gates,
                const ember::TensorView& hx, const ember::TensorView& out) override {
    on_device("gru_cell", {{"input_gates", &input_gates}, {"hidden_gates", &hidden_gates}, {"hx", &hx}, {"out", &out}});
    cpu().gru_cell(input_gates, hidden_gates, hx, out);
  }
  void gru_cell_backward(const ember::TensorView& grad_out, const ember::TensorView& input_gates,
                         const ember::TensorView& hidden_gates, const ember::TensorView& hx,
                         const ember::TensorView& grad_input_gates, const ember::TensorView& grad_hidden_gates,
                         const ember::TensorView& grad_hx) override {
    on_device("gru_cell_backward", {{"grad_out", &grad_out},
                                    {"input_gates", &input_gates},
                                    {"hidden_gates", &hidden_gates},
                                    {"hx", &hx},
                                    {"grad_input_gates", &grad_input_gates},
                                    {"grad_hidden_gates", &grad_hidden_gates},
                                    {"grad_hx", &grad_hx}});
    cpu().gru_cell_backward(grad_out, input_gates, hidden_gates, hx, grad_input_gates, grad_hidden_gates, grad_hx);
  }

  void all_finite(std::span<const ember::TensorView> xs, const ember::TensorView& out) override {
    for (const ember::TensorView& x : xs) on_device("all_finite", {{"xs[i]", &x}});
    on_device("all_finite", {{"out", &out}});
    cpu().all_finite(xs, out);
  }

  // ---- fused optimizer updates ----
  void sgd_step(const ember::TensorView& param, const ember::TensorView& grad, const ember::TensorView& momentum_buffer,
                const ember::kernels::SgdStep& step, const ember::TensorView& skip) override {
    on_device("sgd_step", {{"param", &param}, {"grad", &grad}, {"momentum_buffer", &momentum_buffer}, {"skip", &skip}});
    count(&Counts::single_tensor_updates);
    cpu().sgd_step(param, grad, momentum_buffer, step, skip);
  }
  void adam_step(const ember::TensorView& param, const ember::TensorView& grad, const ember::TensorView& exp_avg,
                 const ember::TensorView& exp_avg_sq, const ember::TensorView& max_exp_avg_sq,
                 const ember::kernels::AdamStep& step, const ember::TensorView& skip) override {
    on_device("adam_step", {{"param", &param},
                            {"grad", &grad},
                            {"exp_avg", &exp_avg},
                            {"exp_avg_sq", &exp_avg_sq},
                            {"max_exp_avg_sq", &max_exp_avg_sq},
                            {"skip", &skip}});
    count(&Counts::single_tensor_updates);
    cpu().adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, skip);
  }
  void adadelta_step(const ember::TensorView& param, const ember::TensorView& grad, const ember::TensorView& square_avg,
                     const ember::TensorView& acc_delta, const ember::kernels::AdadeltaStep& step,
                     const ember::TensorView& skip) override {
    on_device(
        "adadelta_step",
        {{"param", &param}, {"grad", &grad}, {"square_avg", &square_avg}, {"acc_delta", &acc_delta}, {"skip", &skip}});
    count(&Counts::single_tensor_updates);
    cpu().adadelta_step(param, grad, square_avg, acc_delta, step, skip);
  }
  void rmsprop_step(const ember::TensorView& param, const ember::TensorView& grad, const ember::TensorView& square_avg,
                    const ember::TensorView& grad_avg, const ember::TensorView& momentum_buffer,
                    const ember::kernels::RmspropStep& step, const ember::TensorView& skip) override {
    on_device("rmsprop_step", {{"param", &param},
                               {"grad", &grad},
                               {"square_avg", &square_avg},
                               {"grad_avg", &grad_avg},
                               {"momentum_buffer", &momentum_buffer},
                               {"skip", &skip}});
    count(&Counts::single_tensor_updates);
    cpu().rmsprop_step(param, grad, square_avg, grad_avg, momentum_buffer, step, skip);
  }
  void multi_tensor_sgd_step(std::span<const ember::OptimTensors> tensors,
                             std::span<const ember::kernels::SgdStep> steps, const ember::TensorView& skip) override {
    on_device_all("multi_tensor_sgd_step", tensors, skip);
    cpu().multi_tensor_sgd_step(tensors, steps, skip);
  }
  void multi_tensor_adam_step(std::span<const ember::OptimTensors> tensors,
                              std::span<const ember::kernels::AdamStep> steps, const ember::TensorView& skip) override {
    on_device_all("multi_tensor_adam_step", tensors, skip);
    cpu().multi_tensor_adam_step(tensors, steps, skip);
  }
  void multi_tensor_adadelta_step(std::span<const ember::OptimTensors> tensors,
                                  std::span<const ember::kernels::AdadeltaStep> steps,
                                  const ember::TensorView& skip) override {
    on_device_all("multi_tensor_adadelta_step", tensors, skip);
    cpu().multi_tensor_adadelta_step(tensors, steps, skip);
  }
  void multi_tensor_rmsprop_step(std::span<const ember::OptimTensors> tensors,
                                 std::span<const ember::kernels::RmspropStep> steps,
                                 const ember::TensorView& skip) override {
    on_device_all("multi_tensor_rmsprop_step", tensors, skip);
    cpu().multi_tensor_rmsprop_step(tensors, steps, skip);
  }

  // ---- random numbers: the CPU's generator (a test of placement compares shapes, not draws) ----
  void random(const ember::TensorView& out, const ember::RandomArgs& args) override {
    on_device("random", {{"out", &out}});
    cpu().random(out, args);
  }
  void randperm(const ember::TensorView& out) override {
    on_device("randperm", {{"out", &out}});
    cpu().randperm(out);
  }
  void manual_seed(uint64_t seed) override { cpu().manual_seed(seed); }
  uint64_t initial_seed(int /*device_index*/) override { return cpu().initial_seed(0); }
  std::vector<uint8_t> rng_state(int device_index) override {
    check_index(device_index, "rng_state");
    return cpu().rng_state(0);
  }
  void set_rng_state(int device_index, std::span<const uint8_t> state) override {
    check_index(device_index, "set_rng_state");
    cpu().set_rng_state(0, state);
  }

 private:
  using Arg = std::pair<const char*, const ember::TensorView*>;

  static ember::cpu::CpuBackend& cpu() { return ember::cpu::cpu_backend(); }

  std::string device_name(int index = 0) const { return ember::Device(type_, index).str(); }

  void check_index(int device_index, const char* op) const {
    const int count = device_count();
    if (device_index >= 0 && device_index < count) return;
    throw ember::Error(std::string("[host-device backend] ") + op + ": device index " + std::to_string(device_index) +
                       " requested, but only " + std::to_string(count) + " " +
                       std::string(ember::device_type_name(type_)) + " device(s) exist");
  }

  void count(int64_t Counts::*counter) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++(counts_.*counter);
  }

  /// on_device for every view of a multi-tensor update (which counts as one call).
  void on_device_all(const char* op, std::span<const ember::OptimTensors> tensors, const ember::TensorView& skip) {
    for (const ember::OptimTensors& t : tensors) {
      on_device(op, {{"param", &t.param},
                     {"grad", &t.grad},
                     {"state[0]", &t.state[0]},
                     {"state[1]", &t.state[1]},
                     {"state[2]", &t.state[2]}});
    }
    on_device(op, {{"skip", &skip}});
    count(&Counts::multi_tensor_updates);
  }

  /// Throws unless every view with data lies inside memory this backend allocated.
  void on_device(const char* op, std::initializer_list<Arg> args) const {
    for (const auto& [name, view] : args) {
      if (view->data == nullptr) continue;  // an optional view that was not given
      check_index(view->device_index, op);
      if (view->numel() == 0) continue;  // nothing is read or written
      int64_t lo = 0, hi = 0;            // element offsets of the lowest and highest element
      for (int64_t d = 0; d < view->ndim(); ++d) {
        const int64_t span = (view->sizes[d] - 1) * view->strides[d];
        (span < 0 ? lo : hi) += span;
      }
      const auto element = static_cast<int64_t>(ember::element_size(view->dtype));
      const auto base = reinterpret_cast<intptr_t>(view->data);
      check_range(op, name, static_cast<uintptr_t>(base + lo * element), static_cast<size_t>((hi - lo + 1) * element),
                  view->device_index);
    }
  }

  /// Throws unless [begin, begin + nbytes) lies inside one allocation of device `device_index`.
  void check_range(const char* op, const char* arg, uintptr_t begin, size_t nbytes, int device_index) const {
    if (nbytes == 0) return;
    int owner = -1;  // the device whose allocation holds the range, if any
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.upper_bound(begin);
      if (it != live_.begin()) {
        --it;
        if (begin >= it->first && begin + nbytes <= it->first + it->second.nbytes) owner = it->second.device;
      }
    }
    if (owner == device_index) return;
    std::ostringstream os;
    os << "[host-device backend] " << op << ": argument '" << arg << "' (" << nbytes << " bytes at 0x" << std::hex
       << begin << std::dec << ") is not memory of " << device_name(device_index) << ": ";
    if (owner >= 0) {
      os << "it lies on " << device_name(owner) << ", and a " << device_name(device_index)
         << " kernel handed another device's memory reads it over the bus at best";
    } else {
      os << "a tensor from another device (a CPU tensor?) reached a " << device_name(device_index)
         << " kernel, which on a GPU reads a host pointer";
    }
    throw ember::Error(os.str());
  }

  struct Block {
    size_t nbytes = 0;
    int device = 0;
  };

  ember::DeviceType type_;
  std::atomic<int> device_count_{1};
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> live_;  // allocation start -> size and device, of every live allocation
  Counts counts_;
};

/// The process-wide instance that ScopedHostDevice registers.
inline HostDeviceBackend& host_device_backend() {
  static HostDeviceBackend backend(ember::DeviceType::MPS);
  return backend;
}

/// Registers host_device_backend() for MPS for its lifetime, then puts back what was there
/// (nothing, in every build of ember so far), so mps:0 is unusable again for other tests.
class ScopedHostDevice {
 public:
  /// `devices`: how many devices (mps:0 ... mps:devices-1) it stands for while the scope lives.
  explicit ScopedHostDevice(int devices = 1) : previous_(ember::find_backend(ember::DeviceType::MPS)) {
    host_device_backend().set_device_count(devices);
    host_device_backend().reset_counts();
    ember::register_backend(ember::DeviceType::MPS, &host_device_backend());
  }
  ~ScopedHostDevice() {
    ember::register_backend(ember::DeviceType::MPS, previous_);
    host_device_backend().set_device_count(1);
  }
  ScopedHostDevice(const ScopedHostDevice&) = delete;
  ScopedHostDevice& operator=(const ScopedHostDevice&) = delete;

  static ember::Device device() { return ember::Device(ember::DeviceType::MPS, 0); }

 private:
  ember::Backend* previous_;
};

}  // namespace ember_test
