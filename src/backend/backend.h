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
#include "kernels/grid_sample_args.h"
#include "kernels/op_list.h"
#include "kernels/scatter_reduce_op.h"

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
enum class ActivationOp : uint8_t { EMBER_ACTIVATION_OPS(EMBER_ENUM) };
/// The running reductions of the scan family (cumsum, cumprod, cummax, cummin, logcumsumexp).
enum class ScanOp : uint8_t { EMBER_SCAN_OPS(EMBER_ENUM) };
#undef EMBER_ENUM

const char* op_name(UnaryOp op);
const char* op_name(BinaryOp op);
const char* op_name(ReduceOp op);
const char* op_name(ActivationOp op);
const char* op_name(ScanOp op);
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

/// The parameters of an ActivationOp, in PyTorch's argument order; unused ones are 0.
///   elu: alpha, scale, input_scale (ELU: a, 1, 1; SELU: its constants; CELU: a, 1, 1/a)
///   leaky_relu: negative_slope;  hardtanh: min_val, max_val;  softplus: beta, threshold
///   threshold: threshold, value;  hardshrink, softshrink: lambd
///   hardsigmoid, hardswish, mish, log_sigmoid: none
struct ActivationArgs {
  double p[3] = {0.0, 0.0, 0.0};
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

/// How embedding_bag reduces a bag (torch.nn.functional.embedding_bag's mode).
enum class EmbeddingBagMode : uint8_t { Sum, Mean, Max };
struct EmbeddingBagArgs {
  EmbeddingBagMode mode = EmbeddingBagMode::Sum;
  int64_t padding_idx = -1;         // a row of the table that bags skip; -1 for none (never negative otherwise)
  bool scale_grad_by_freq = false;  // backward: each row's gradient divided by its count in the batch
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

  // Host copies: contiguous bytes between host memory and this device (copy(), which converts
  // dtypes and handles strides on the device, is an entry point of entry_points.def).
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

  // ---- the op families' kernels, declared once in entry_points.def ----
#define EMBER_BACKEND_ENTRY(family, name, params, args) virtual void name params = 0;
#include "backend/entry_points.def"
#undef EMBER_BACKEND_ENTRY

  // ---- the default generator's seed and state ----
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
/// Throws unless the views are what Backend::pool2d takes: x and out 4-D [N, C, H, W], agreeing
/// on N and C, contiguous and of one dtype; valid window arguments (check_pool2d_args); for Max
/// with indices, `indices` contiguous int64 shaped like out. Names the op (pool2d_name).
void check_pool2d_views(const TensorView& x, const TensorView& out, const TensorView& indices, const Pool2dArgs& args);
/// The same for Backend::pool2d_backward; Max needs the forward pass's indices.
void check_pool2d_backward_views(const TensorView& grad_out, const TensorView& indices, const TensorView& grad_x,
                                 const Pool2dArgs& args);
/// Throws unless the views are what Backend::softmax takes: contiguous, of one dtype.
void check_softmax_views(const TensorView& x, const TensorView& out, bool log);
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
