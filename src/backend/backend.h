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
#include <span>
#include <string>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/scalar.h"
#include "ember/small_vector.h"
#include "kernels/op_list.h"

namespace ember {
class Tensor;

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

enum class Distribution : uint8_t { Uniform, Normal, RandInt };
struct RandomArgs {
  Distribution distribution = Distribution::Uniform;
  double a = 0.0;  // uniform: low;  normal: mean;  randint: low
  double b = 1.0;  // uniform: high; normal: std;   randint: high (exclusive)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  /// Number of usable devices of this type; never throws.
  virtual int device_count() const noexcept = 0;

  // Memory. Allocations are at least 64-byte aligned; size 0 is allowed.
  virtual void* allocate(size_t nbytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t nbytes, int device_index) noexcept = 0;

  // Copies. copy() converts dtype and handles any strides (dst and src have equal sizes, or src
  // is broadcast); the host copies move contiguous bytes between host memory and this device.
  virtual void copy(const TensorView& dst, const TensorView& src) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t nbytes, int device_index) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t nbytes, int device_index) = 0;
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

  // Indexing along `dim`. index is int64.
  virtual void index_select(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) = 0;
  virtual void gather(const TensorView& x, int64_t dim, const TensorView& index, const TensorView& out) = 0;
  /// out (already holding a copy of the input) += src scattered at index along dim.
  virtual void scatter_add(const TensorView& out, int64_t dim, const TensorView& index, const TensorView& src) = 0;

  /// Fills `out` (contiguous) from this device type's default generator.
  virtual void random(const TensorView& out, const RandomArgs& args) = 0;
  virtual void randperm(const TensorView& out) = 0;
  virtual void manual_seed(uint64_t seed) = 0;
};

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
