#pragma once
// The CUDA backend. Its methods are implemented one op family per file in this folder, like the
// CPU backend's:
//   cuda_backend.cpp  memory, host and peer copies         copy.cu        copy, fill
//   unary.cu          unary ops, clamp                     binary.cu      binary ops, add_scaled, where
//   reduce.cu         reductions (CUB block reductions)    softmax.cu     softmax, log_softmax
//   cross_entropy.cu  log_softmax + nll_loss fused, both ways
//   matmul.cpp        matrix products (cuBLAS)             indexing.cu    index_select, gather, scatter_add
//   conv.cpp          2-D convolution (cuDNN)              pool.cu        2-D max/average pooling
//   random.cu         the Philox generator, randperm (CUB radix sort)
//   optim.cu          fused optimizer updates (SGD, Adam/AdamW, Adadelta, RMSprop), one parameter or many
//                     per launch (multi_tensor_plan.h)
//   finite.cu         all_finite (the trainer's per-step check, finite_plan.h)
//   rnn.cu            the LSTM and GRU cells' updates, forward and backward
// Shared plumbing: runtime.h (checked calls, devices, streams, library handles), launch.h (grid
// arithmetic, host-tested), caching_allocator.h (the memory pool, host-tested).
//
// Every entry point runs on the device that holds its operands (TensorView::device_index) and
// queues its work on that device's current stream; none waits for the GPU except the copies to
// the host, which must. A copy between two devices runs on the source's current stream, ordered
// with the destination's by events (copy_between_devices).
#include "backend/backend.h"

namespace ember::cuda_impl {

class CudaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const noexcept override;
  void* allocate(size_t nbytes, int device_index) override;
  void deallocate(void* ptr, size_t nbytes, int device_index) noexcept override;
  void copy(const TensorView& dst, const TensorView& src) override;
  void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) override;
  void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) override;
  void* allocate_pinned(size_t nbytes) override;
  void free_pinned(void* ptr) noexcept override;
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
  uint64_t initial_seed(int device_index) override;
  std::vector<uint8_t> rng_state(int device_index) override;
  void set_rng_state(int device_index, std::span<const uint8_t> state) override;
};

/// The process-wide CUDA backend (registered in src/backend/registry.cpp when CUDA is built).
CudaBackend& cuda_backend();

}  // namespace ember::cuda_impl
