#pragma once
// The interface every device backend implements, and the table that holds one per DeviceType.
//
// Front-end ops (src/ops) check arguments, infer the output's shape and dtype, allocate it and
// then call one of these entry points with plain views. By then:
//  * every operand is on this backend's device;
//  * the inputs of an element-wise op are already broadcast to the output's sizes (stride 0 on
//    broadcast dimensions) and already have the dtype the op computes in;
//  * outputs are freshly allocated and contiguous unless the op is in-place.
// Backends never see a Tensor, only TensorView, so kernels can be tested in isolation.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/device_memory.h"
#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/small_vector.h"
#include "kernels/op_list.h"

namespace ember {
class Tensor;
namespace kernels {
struct SgdStep;  // kernels/optim_ops.h
struct AdamStep;
struct AdadeltaStep;
struct RmspropStep;
}  // namespace kernels

enum class UnaryOp : uint8_t {
#define EMBER_ENUM(name, str) name,
  EMBER_UNARY_OPS(EMBER_ENUM)
};
enum class BinaryOp : uint8_t { EMBER_BINARY_OPS(EMBER_ENUM) };
enum class ReduceOp : uint8_t { EMBER_REDUCE_OPS(EMBER_ENUM) };
#undef EMBER_ENUM

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);
bool is_comparison(BinaryOp op);

/// A non-owning view of a tensor's elements: what kernels receive.
struct TensorView {
  void* data = nullptr;  // first element, storage offset applied
  Dims sizes;
  Dims strides;  // in elements
  Dtype dtype = kFloat32;
  int device_index = 0;  // which device of the backend's type holds the data (cuda:N)

  int64_t ndim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const;
  bool is_contiguous() const;
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

/// Builds a view of a tensor (no checks: the caller has done them).
TensorView view_of(const Tensor& t);

/// One parameter's views in a multi-tensor optimizer update (Backend::multi_tensor_sgd_step and
/// the others): the parameter, its gradient and the rule's state views in the order its
/// single-tensor entry point takes them; a state view the update does not use has null data.
struct OptimTensors {
  TensorView param;
  TensorView grad;
  TensorView state[3];
};

enum class Distribution : uint8_t { Uniform, Normal, RandInt };
struct RandomArgs {
  Distribution distribution = Distribution::Uniform;
  double a = 0.0;  // uniform: low;  normal: mean;  randint: low
  double b = 1.0;  // uniform: high; normal: std;   randint: high (exclusive)
};

/// A 2-D convolution's geometry, [height, width] pairs as in torch.nn.functional.conv2d.
struct Conv2dArgs {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};

enum class PoolKind : uint8_t { Max, Avg, AdaptiveAvg };

/// A 2-D pooling window. For AdaptiveAvg only `kind` matters: the windows follow from the input
/// and output sizes (start = floor(i*in/out), end = ceil((i+1)*in/out)), as in PyTorch.
struct Pool2dArgs {
  PoolKind kind = PoolKind::Max;
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};  // Max only
  bool ceil_mode = false;
  bool count_include_pad = true;  // Avg only
  int64_t divisor_override = 0;   // Avg only; 0 means none
};

class Backend : public detail::DeviceMemory {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  /// Number of usable devices of this type; never throws.
  virtual int device_count() const noexcept = 0;

  // Memory: allocate, deallocate, allocate_pinned and free_pinned (core/device_memory.h). Only
  // backends of devices with their own memory have pinned memory; the others' allocate_pinned
  // throws.
  void* allocate_pinned(size_t nbytes) override;
  void free_pinned(void* ptr) noexcept override;

  // Copies. copy() converts dtype and handles any strides (dst and src have equal sizes, or src
  // is broadcast); the host copies move contiguous bytes between host memory and this device.
  virtual void copy(const TensorView& dst, const TensorView& src) = 0;
  /// With non_blocking the copy may still be running when the call returns: the host memory
  /// must then be pinned (allocate_pinned) and must not be touched until the device has
  /// synchronised. Without it, the call returns once the copy is complete.
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index, bool non_blocking) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index, bool non_blocking) = 0;
  /// Copies `nbytes` contiguous bytes from `src` on device `src_index` to `dst` on device
  /// `dst_index`, two devices of this backend's type (or the same one), without going through
  /// host memory: peer to peer where the devices allow it (ggml's cpy_tensor_async, the copy
  /// PyTorch's copy_ makes between two GPUs). The host does not wait. The copy runs after the
  /// work queued so far on both devices' current streams (which may still be reading or writing
  /// `dst`), and work queued afterwards on either device's current stream runs after it: the
  /// destination's users read the copied bytes and the source's next writer does not race it.
  virtual void copy_between_devices(void* dst, int dst_index, const void* src, int src_index, size_t nbytes) = 0;
  virtual void fill(const TensorView& out, const Scalar& value) = 0;

  // Element-wise.
  virtual void unary(UnaryOp op, const TensorView& x, const TensorView& out) = 0;
  virtual void binary(BinaryOp op, const TensorView& a, const TensorView& b, const TensorView& out) = 0;
  /// out = a + alpha * b (add and sub with alpha, in the computation dtype).
  virtual void add_scaled(const TensorView& a, const TensorView& b, const Scalar& alpha, const TensorView& out) = 0;
  virtual void where(const TensorView& cond, const TensorView& a, const TensorView& b, const TensorView& out) = 0;
  /// Unset bounds are passed as NaN (floating) or the type's limits (integral) by the front end.
  virtual void clamp(const TensorView& x, const Scalar& lo, const Scalar& hi, bool has_lo, bool has_hi,
                     const TensorView& out) = 0;

  /// Reduces `x` over its last `reduced_dims` dimensions (the front end permutes the reduced
  /// dimensions to the end) into `out`, whose sizes are x's leading dimensions. ArgMax/ArgMin
  /// write int64 indices; Max/Min also write indices when `indices` has data. Var uses
  /// `correction` (and Mean/Var divide by the reduced count).
  virtual void reduce(ReduceOp op, const TensorView& x, int64_t reduced_dims, const TensorView& out,
                      const TensorView& indices, int64_t correction) = 0;

  /// out[b] = a[b] @ m[b] for 3-D views [B,M,K] x [B,K,N] -> [B,M,N]; any strides on a and b,
  /// out contiguous. Same dtype everywhere.
  virtual void matmul(const TensorView& a, const TensorView& b, const TensorView& out) = 0;

  /// Softmax (or log-softmax) along the last dimension of a contiguous x.
  virtual void softmax(const TensorView& x, const TensorView& out, bool log) = 0;

  /// out[N,Cout,Ho,Wo] = conv(x[N,Cin,H,W], weight[Cout,Cin/groups,kH,kW]) + bias[Cout]. All views
  /// contiguous and of one floating dtype; bias.data is null when there is no bias. The front end
  /// has checked the geometry and computed out's sizes.
  virtual void conv2d(const TensorView& x, const TensorView& weight, const TensorView& bias, const TensorView& out,
                      const Conv2dArgs& args) = 0;
  /// The gradients of conv2d with respect to x, weight and bias for grad_out (all contiguous).
  /// A gradient view whose data is null is not wanted and is left alone; the others are
  /// overwritten (not accumulated into). x (or weight) may have null data when no wanted
  /// gradient needs it: grad_x needs only weight, grad_weight only x.
  virtual void conv2d_backward(const TensorView& grad_out, const TensorView& x, const TensorView& weight,
                               const Conv2dArgs& args, const TensorView& grad_x, const TensorView& grad_weight,
                               const TensorView& grad_bias) = 0;

  /// out[N,C,Ho,Wo] pools x[N,C,H,W] (contiguous, floating). For Max, `indices` (int64, shaped
  /// like out) receives the flat position h*W+w of each maximum within its plane, as PyTorch's
  /// return_indices gives it; a NaN in a window wins, as in PyTorch.
  virtual void pool2d(const TensorView& x, const TensorView& out, const TensorView& indices,
                      const Pool2dArgs& args) = 0;
  /// grad_x (contiguous, overwritten) from grad_out; Max uses `indices` from pool2d.
  virtual void pool2d_backward(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                               const Pool2dArgs& args) = 0;

  // Indexing along `dim`. index is int64.
  virtual void index_select(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) = 0;
  virtual void gather(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) = 0;
  /// out (already holding a copy of the input) += src scattered at index along dim.
  virtual void scatter_add(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src) = 0;

  /// Cross-entropy of each row of `logits` ([N, C], contiguous, float32 or float64) against its
  /// class in `target` ([N], int64), the forward pass of log_softmax and nll_loss in one:
  /// loss[n] = -log_softmax(logits[n])[t] * w[t] and row_weight[n] = w[t] (w = `weight`, [C] of
  /// logits' dtype, or all ones when it has null data), both 0 where t == ignore_index. With
  /// `label_smoothing` ε > 0 a kept row's loss is (1 - ε) times that plus ε / C times
  /// sum_c -log_softmax(logits[n])[c] * w[c] (kernels/cross_entropy_ops.h), which PyTorch's
  /// reductions of the two terms amount to. `stats` ([N, 2], logits' dtype) receives each row's
  /// max and log(sum(exp(x - max))) for the backward pass. A target outside [0, C) that is not
  /// ignore_index throws "Target t is out of bounds." on the CPU; CUDA counts the row as ignored
  /// and reports it at the next wait (index_error.h).
  virtual void cross_entropy(const TensorView& logits, const TensorView& target, const TensorView& weight,
                             int64_t ignore_index, double label_smoothing, const TensorView& loss,
                             const TensorView& row_weight, const TensorView& stats) = 0;
  /// The gradient of cross_entropy's `loss` with respect to `logits`, given its gradient
  /// `grad_loss` ([N]). Without smoothing, with s = -(grad_loss[n] * w[t]) (0 on ignored rows),
  /// grad_logits[n, c] = (c == t ? s : 0) - exp(log_softmax(logits[n])[c]) * s, which is what
  /// nll_loss's and log_softmax's backward passes compute one after the other; with smoothing,
  /// kernels::smoothed_logit_grad on kept rows.
  virtual void cross_entropy_backward(const TensorView& grad_loss, const TensorView& logits, const TensorView& target,
                                      const TensorView& weight, int64_t ignore_index, double label_smoothing,
                                      const TensorView& stats, const TensorView& grad_logits) = 0;

  /// The LSTM cell's update (kernels/rnn_ops.h) of B rows of H units: `input_gates` and
  /// `hidden_gates` ([B, 4H], contiguous, float32 or float64) add up to the gates'
  /// pre-activations in PyTorch's i, f, g, o order, and `cx` ([B, H]) is the cell state. Writes
  /// `out` ([2, B, H]): hy to out[0], cy to out[1]. All views contiguous, of one dtype.
  virtual void lstm_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& cx,
                         const TensorView& out) = 0;
  /// Its gradient, from the forward pass's inputs and `grad_out` ([2, B, H]: the gradients of hy
  /// and cy): writes `grad_gates` ([B, 4H], the gradient of either gate input, since they are
  /// summed) and `grad_cx` ([B, H]), recomputing the activations rather than storing them.
  virtual void lstm_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                  const TensorView& hidden_gates, const TensorView& cx, const TensorView& grad_gates,
                                  const TensorView& grad_cx) = 0;

  /// The GRU cell's update (kernels/rnn_ops.h): `input_gates` (x W_ih^T + b_ih) and
  /// `hidden_gates` (h W_hh^T + b_hh), [B, 3H] in PyTorch's r, z, n order, and the state `hx`
  /// ([B, H]) give `out` = hy ([B, H]). All views contiguous, of one dtype, float32 or float64.
  virtual void gru_cell(const TensorView& input_gates, const TensorView& hidden_gates, const TensorView& hx,
                        const TensorView& out) = 0;
  /// Its gradient from `grad_out` ([B, H]): writes the input gates' ([B, 3H]), the hidden gates'
  /// ([B, 3H]; they differ in the n gate, which r scales) and hx's ([B, H]).
  virtual void gru_cell_backward(const TensorView& grad_out, const TensorView& input_gates,
                                 const TensorView& hidden_gates, const TensorView& hx,
                                 const TensorView& grad_input_gates, const TensorView& grad_hidden_gates,
                                 const TensorView& grad_hx) = 0;

  /// Writes 1 to `out` (a 0-dim bool on this device) when every element of every view is finite,
  /// 0 otherwise, without waiting for the device. The views are contiguous, of floating dtypes,
  /// on out's device; there may be none.
  virtual void all_finite(std::span<const TensorView> xs, const TensorView& out) = 0;

  /// Fused optimizer updates, one pass over a parameter (kernels/optim_ops.h has the math). All
  /// views are contiguous, of one size and of one dtype, float32 or float64; state views are
  /// updated in place, and a state view the update does not use (no momentum, no amsgrad, an
  /// RMSprop that is not centered) has null data. `skip` is null or a 0-dim bool on the
  /// parameter's device: when it holds true the update writes nothing. The kernel reads it, so a
  /// step can depend on a device-side check (Optimizer::step(skip)) without the host waiting.
  virtual void sgd_step(const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                        const kernels::SgdStep& step, const TensorView& skip) = 0;
  virtual void adam_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                         const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, const kernels::AdamStep& step,
                         const TensorView& skip) = 0;
  virtual void adadelta_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                             const TensorView& acc_delta, const kernels::AdadeltaStep& step,
                             const TensorView& skip) = 0;
  virtual void rmsprop_step(const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                            const TensorView& grad_avg, const TensorView& momentum_buffer,
                            const kernels::RmspropStep& step, const TensorView& skip) = 0;

  /// The same updates for many parameters at once (PyTorch's multi_tensor_apply behind its
  /// _foreach and fused optimizers): the result is, bit for bit, that of the single-tensor entry
  /// point called for each tensors[i] with steps[i] (one step per tensor: parameters of other
  /// groups, or with other step counts, differ in it) and `skip`, but a GPU backend launches a
  /// kernel per many parameters instead of one per parameter. OptimTensors::state holds the
  /// single-tensor entry point's state views in its order (SGD: momentum_buffer; Adam:
  /// exp_avg, exp_avg_sq, max_exp_avg_sq; Adadelta: square_avg, acc_delta; RMSprop: square_avg,
  /// grad_avg, momentum_buffer). All tensors have one dtype and lie on one device.
  virtual void multi_tensor_sgd_step(std::span<const OptimTensors> tensors, std::span<const kernels::SgdStep> steps,
                                     const TensorView& skip) = 0;
  virtual void multi_tensor_adam_step(std::span<const OptimTensors> tensors, std::span<const kernels::AdamStep> steps,
                                      const TensorView& skip) = 0;
  virtual void multi_tensor_adadelta_step(std::span<const OptimTensors> tensors,
                                          std::span<const kernels::AdadeltaStep> steps, const TensorView& skip) = 0;
  virtual void multi_tensor_rmsprop_step(std::span<const OptimTensors> tensors,
                                         std::span<const kernels::RmspropStep> steps, const TensorView& skip) = 0;

  /// Fills `out` (contiguous) from this device type's default generator.
  virtual void random(const TensorView& out, const RandomArgs& args) = 0;
  virtual void randperm(const TensorView& out) = 0;
  virtual void manual_seed(uint64_t seed) = 0;
  /// The seed the default generator of device `device_index` started from (torch.initial_seed()
  /// for the CPU, torch.cuda.initial_seed() for a GPU).
  virtual uint64_t initial_seed(int device_index) = 0;
  /// The default generator's complete state on device `device_index` (the CPU has one), in this
  /// backend's own byte layout, and its inverse; set_rng_state throws ember::Error when the bytes
  /// are not a state this backend wrote.
  virtual std::vector<uint8_t> rng_state(int device_index) = 0;
  virtual void set_rng_state(int device_index, std::span<const uint8_t> state) = 0;
};

/// "max_pool2d", "avg_pool2d" or "adaptive_avg_pool2d", with "_backward" for the gradient: the
/// op a pooling error names.
const char* pool2d_name(PoolKind kind, bool backward);
/// Throws unless a (non-adaptive) window is valid: positive kernel, stride and dilation,
/// non-negative padding.
void check_pool2d_args(const Pool2dArgs& args, const char* op);
/// Throws unless the views are what Backend::cross_entropy and its backward pass take: logits
/// [N, C] contiguous float32/float64, target [N] contiguous int64, weight null or [C] of the
/// logits' dtype.
void check_cross_entropy_views(const char* op, const TensorView& logits, const TensorView& target,
                               const TensorView& weight);

/// Throws unless the views are what Backend::lstm_cell takes: gates [B, 4H] (two of them), a
/// state [B, H] and a [2, B, H] pair of states (the output, or its gradient), all contiguous,
/// float32 or float64, of one dtype. Returns {B, H}.
std::pair<int64_t, int64_t> check_lstm_cell_views(const char* op, const TensorView& input_gates,
                                                  const TensorView& hidden_gates, const TensorView& state,
                                                  const TensorView& pair);
/// The same for Backend::gru_cell: gates [B, 3H] twice, a state [B, H] and an output (or its
/// gradient) [B, H]. Returns {B, H}.
std::pair<int64_t, int64_t> check_gru_cell_views(const char* op, const TensorView& input_gates,
                                                 const TensorView& hidden_gates, const TensorView& state,
                                                 const TensorView& out);

/// The checks every backend's fused update makes: a float32/float64 contiguous parameter, and
/// gradient and state views (those with data) of its dtype, size and device, contiguous.
/// `skip`, when it has data, must be a single bool on the parameter's device.
void check_fused_update_views(const char* op, const TensorView& param, std::initializer_list<const TensorView*> others,
                              const TensorView& skip);

/// The checks of each rule's fused update, single-tensor or multi-tensor: the views as
/// check_fused_update_views wants them, and the state the step's options use present (SGD's
/// momentum buffer with momentum, Adam's averages and amsgrad's maximum, Adadelta's averages,
/// RMSprop's square average, centered average and momentum buffer as its options ask).
void check_sgd_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& momentum_buffer,
                    const kernels::SgdStep& step, const TensorView& skip);
void check_adam_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                     const TensorView& exp_avg_sq, const TensorView& max_exp_avg_sq, const kernels::AdamStep& step,
                     const TensorView& skip);
void check_adadelta_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                         const TensorView& acc_delta, const TensorView& skip);
void check_rmsprop_step(const char* op, const TensorView& param, const TensorView& grad, const TensorView& square_avg,
                        const TensorView& grad_avg, const TensorView& momentum_buffer, const kernels::RmspropStep& step,
                        const TensorView& skip);
/// Every check of a multi-tensor update, made before any tensor is written: one step per
/// tensor, every parameter of the first one's dtype and device, and each tensor's rule checks.
void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::SgdStep> steps, const TensorView& skip);
void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::AdamStep> steps, const TensorView& skip);
void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::AdadeltaStep> steps, const TensorView& skip);
void check_multi_tensor_step(const char* op, std::span<const OptimTensors> tensors,
                             std::span<const kernels::RmspropStep> steps, const TensorView& skip);

/// The backend for a device type, or nullptr when this build has none.
Backend* find_backend(DeviceType type);
/// Registers a backend (called by ember's own initialisation, one line per backend).
void register_backend(DeviceType type, Backend* backend);

/// The backend for `device`; throws ember::Error saying why when the device is unusable (not
/// built, no driver, index out of range).
Backend& backend_for(Device device);

/// Fills in the current index for cuda/mps (a tensor's device always has one); cpu stays bare.
Device normalize_device(Device device);

}  // namespace ember
