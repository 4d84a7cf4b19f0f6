#pragma once
// The CPU backend. Its methods are implemented one op family per file in this folder:
//   cpu_backend.cpp  memory, host copies         copy.cpp         copy (any strides/dtypes), fill
//   elementwise.cpp  unary, binary, where, clamp
//   reduce.cpp       reductions                   softmax.cpp      softmax, log_softmax, cross_entropy
//   matmul.cpp       matrix products (BLAS)       indexing.cpp     index_select, gather, scatter_add
//   conv.cpp         2-D convolution              pool.cpp         2-D max/average pooling
//   random.cpp       the default generator        optim.cpp        fused optimizer updates
//   finite.cpp       all_finite (the trainer's per-step check)
//   rnn.cpp          the LSTM and GRU cells' updates, forward and backward
#include "backend/backend.h"

namespace ember::cpu {

class CpuBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const noexcept override { return 1; }

  void* allocate(size_t nbytes, int device_index) override;
  void deallocate(void* ptr, size_t nbytes, int device_index) noexcept override;

  void copy(const TensorView& dst, const TensorView& src) override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override;
  void fill(const TensorView& out, const Scalar& value) override;

  void unary(UnaryOp op, const TensorView& x, const TensorView& out) override;
  void binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out) override;
  void add_scaled(const TensorView& a, const TensorView& b, const Scalar& alpha, const TensorView& out) override;
  void where(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) override;
  void clamp(const TensorView& x, const Scalar& lo, const Scalar& hi, bool has_lo, bool has_hi,
             const TensorView& out) override;

  void reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out, const TensorView& indices,
              int64_t correction) override;
  void matmul(const TensorView& a, const TensorView& b, const TensorView& out) override;
  void softmax(const TensorView& x, const TensorView& out, bool log) override;

  void conv2d(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
              const Conv2dArgs& args) override;
  void conv2d_backward(const TensorView& grad_out, const TensorView& x, const TensorView& weight,
                       const Conv2dArgs& args, const TensorView& grad_x, const TensorView& grad_weight,
                       const TensorView& grad_bias) override;
  void pool2d(const TensorView& x, const TensorView& out, const TensorView& indices, const Pool2dArgs& args) override;
  void pool2d_backward(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                       const Pool2dArgs& args) override;

  void index_select(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) override;
  void gather(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) override;
  void scatter_add(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src) override;

  void cross_entropy(const TensorView& logits, const TensorView& target, const TensorView& weight, int64_t ignore_index,
                     double label_smoothing, const TensorView& loss, const TensorView& row_weight,
                     const TensorView& stats) override;
  void cross_entropy_backward(const TensorView& grad_loss, const TensorView& logits, const TensorView& target,
                              const TensorView& weight, int64_t ignore_index, double label_smoothing,
                              const TensorView& stats, const TensorView& grad_logits) override;
  void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& cx,
                 const TensorView& out) override;
  void lstm_cell_backward(const TensorView& grad_out, const TensorView& input_gates, const TensorView& hidden_gates,
                          const TensorView& cx, const TensorView& grad_gates, const TensorView& grad_cx) override;
  void gru_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& hx,
                const TensorView& out) override;
  void gru_cell_backward(const TensorView& grad_out, const TensorView& input_gates, const TensorView& hidden_gates,
                         const TensorView& hx, const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                         const TensorView& grad_hx) override;
  void all_finite(std::span<const TensorView> xs, const TensorView& out) override;
  void sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                const kernels::SgdStep& step, const TensorView& skip) override;
  void adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                 const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, const kernels::AdamStep& step,
                 const TensorView& skip) override;
  void adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                     const TensorView& acc_delta, const kernels::AdadeltaStep& step, const TensorView& skip) override;
  void rmsprop_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                    const TensorView& grad_avg, const TensorView& momentum_buffer, const kernels::RmspropStep& step,
                    const TensorView& skip) override;
  void multi_tensor_sgd_step(std::span<const OptimTensors> tensors, std::span<const kernels::SgdStep> steps,
                             const TensorView& skip) override;
  void multi_tensor_adam_step(std::span<const OptimTensors> tensors, std::span<const kernels::AdamStep> steps,
                              const TensorView& skip) override;
  void multi_tensor_adadelta_step(std::span<const OptimTensors> tensors, std::span<const kernels::AdadeltaStep> steps,
                                  const TensorView& skip) override;
  void multi_tensor_rmsprop_step(std::span<const OptimTensors> tensors, std::span<const kernels::RmspropStep> steps,
                                 const TensorView& skip) override;
  void random(const TensorView& out, const RandomArgs& args) override;
  void randperm(const TensorView& out) override;
  void manual_seed(uint64_t seed) override;
  /// The seed the CPU generator was last seeded with (random at start-up, as in PyTorch).
  uint64_t initial_seed(int device_index) override;
  std::vector<uint8_t> rng_state(int device_index) override;
  void set_rng_state(int device_index, std::span<const uint8_t> state) override;
};

/// The process-wide CPU backend.
CpuBackend& cpu_backend();

}  // namespace ember::cpu
