// The oneDNN path of the CPU's 2-D convolution (conv_paths.h): oneDNN's convolution primitives,
// float32 and bfloat16. Primitives are cached per geometry, so a training loop creates each of
// them once; the operands are reordered between ember's NCHW and the layouts the primitives
// choose.
#include <array>
#include <cstdint>
#include <dnnl.hpp>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "backend/cpu/conv_paths.h"
#include "backend/cpu/onednn_primitives.h"
#include "core/check.h"

namespace ember::cpu::conv2d_paths {
namespace {

using dnnl::memory;

/// One operand: its plain (user) layout, the layout the primitive chose, and the reorder between
/// them when they differ (into the primitive for inputs, out of it for outputs).
struct Operand {
  memory::desc user, inner;
  std::optional<dnnl::reorder> reorder;
  memory::desc reorder_scratchpad;

  static Operand input(const memory::desc& user, const memory::desc& inner) { return make(user, inner, true); }
  static Operand output(const memory::desc& user, const memory::desc& inner) { return make(user, inner, false); }
  static Operand make(const memory::desc& user, const memory::desc& inner, bool into_inner) {
    Operand op{user, inner, std::nullopt, memory::desc()};
    if (user == inner) return op;
    dnnl::reorder::primitive_desc pd(onednn_engine(), into_inner ? user : inner, onednn_engine(),
                                     into_inner ? inner : user, user_scratchpad());
    op.reorder = dnnl::reorder(pd);
    op.reorder_scratchpad = pd.scratchpad_desc();
    return op;
  }
  /// The memory the primitive reads: the user's buffer, or a reordered copy of it.
  memory bind_input(const void* data, int slot, dnnl::stream& stream) const {
    memory mem(user, onednn_engine(), const_cast<void*>(data));
    if (!reorder) return mem;
    memory staged(inner, onednn_engine(), staging(slot, inner.get_size()));
    execute(*reorder, reorder_scratchpad, stream, {{DNNL_ARG_FROM, mem}, {DNNL_ARG_TO, staged}});
    return staged;
  }
  /// The memory the primitive writes; finish_output copies it to the user's buffer when staged.
  memory bind_output(void* data) const {
    return reorder ? memory(inner, onednn_engine(), staging(2, inner.get_size())) : memory(user, onednn_engine(), data);
  }
  void finish_output(memory written, void* data, dnnl::stream& stream) const {
    if (!reorder) return;
    execute(*reorder, reorder_scratchpad, stream,
            {{DNNL_ARG_FROM, written}, {DNNL_ARG_TO, memory(user, onednn_engine(), data)}});
  }
};

/// Plain descriptors and the geometry in oneDNN's terms (dilation counts skipped taps, so d - 1).
struct OneDnnGeometry {
  memory::desc src, weights, bias, dst;
  memory::desc src_any, weights_any, dst_any;
  memory::dims strides, dilates, pad_l, pad_r;
};

OneDnnGeometry onednn_geometry(const ConvShape& s, bool with_bias, memory::data_type dt) {
  using tag = memory::format_tag;
  const auto f32 = dt;  // every operand in the same dtype (float32, or bfloat16 computed natively)
  const memory::dims src_dims{s.n, s.c, s.h, s.w};
  const memory::dims dst_dims{s.n, s.o, s.ho, s.wo};
  const memory::dims w_dims =
      s.groups == 1 ? memory::dims{s.o, s.c, s.kh, s.kw} : memory::dims{s.groups, s.og(), s.cg(), s.kh, s.kw};
  OneDnnGeometry g;
  g.src = memory::desc(src_dims, f32, tag::nchw);
  g.dst = memory::desc(dst_dims, f32, tag::nchw);
  g.weights = memory::desc(w_dims, f32, s.groups == 1 ? tag::oihw : tag::goihw);
  if (with_bias) g.bias = memory::desc({s.o}, f32, tag::x);
  g.src_any = memory::desc(src_dims, f32, tag::any);
  g.dst_any = memory::desc(dst_dims, f32, tag::any);
  g.weights_any = memory::desc(w_dims, f32, tag::any);
  g.strides = {s.sh, s.sw};
  g.dilates = {s.dh - 1, s.dw - 1};
  g.pad_l = {s.ph, s.pw};
  // PyTorch floors the output size; oneDNN wants the right padding that produces exactly it.
  g.pad_r = {(s.ho - 1) * s.sh + (s.kh - 1) * s.dh + 1 - s.h - s.ph,
             (s.wo - 1) * s.sw + (s.kw - 1) * s.dw + 1 - s.w - s.pw};
  return g;
}

// oneDNN 3 folded the operation descriptors into the primitive descriptors' constructors.
dnnl::convolution_forward::primitive_desc forward_pd(const OneDnnGeometry& g, bool with_bias) {
  const memory::desc bias = with_bias ? g.bias : memory::desc();
#if DNNL_VERSION_MAJOR >= 3
  return {onednn_engine(),
          dnnl::prop_kind::forward_training,
          dnnl::algorithm::convolution_direct,
          g.src_any,
          g.weights_any,
          bias,
          g.dst_any,
          g.strides,
          g.dilates,
          g.pad_l,
          g.pad_r,
          user_scratchpad()};
#else
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                       g.src_any, g.weights_any, bias, g.dst_any, g.strides, g.dilates, g.pad_l,
                                       g.pad_r);
  return {desc, user_scratchpad(), onednn_engine()};
#endif
}

struct ForwardPrimitive {
  dnnl::convolution_forward prim;
  memory::desc scratchpad;
  Operand src, weights, dst;
};

struct BackwardDataPrimitive {
  dnnl::convolution_backward_data prim;
  memory::desc scratchpad;
  Operand diff_dst, weights, diff_src;
};

struct BackwardWeightsPrimitive {
  dnnl::convolution_backward_weights prim;
  memory::desc scratchpad;
  Operand src, diff_dst, diff_weights;
};

std::shared_ptr<const ForwardPrimitive> make_forward(const ConvShape& s, bool with_bias, memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, with_bias, dt);
  auto pd = forward_pd(g, with_bias);
  return std::make_shared<const ForwardPrimitive>(
      ForwardPrimitive{dnnl::convolution_forward(pd), pd.scratchpad_desc(), Operand::input(g.src, pd.src_desc()),
                       Operand::input(g.weights, pd.weights_desc()), Operand::output(g.dst, pd.dst_desc())});
}

std::shared_ptr<const BackwardDataPrimitive> make_backward_data(const ConvShape& s, memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, false, dt);
  const auto hint = forward_pd(g, false);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_backward_data::primitive_desc pd(onednn_engine(), dnnl::algorithm::convolution_direct, g.src_any,
                                                     g.weights_any, g.dst_any, g.strides, g.dilates, g.pad_l, g.pad_r,
                                                     hint, user_scratchpad());
#else
  dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, g.src_any, g.weights_any, g.dst_any,
                                             g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_data::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), hint);
#endif
  return std::make_shared<const BackwardDataPrimitive>(BackwardDataPrimitive{
      dnnl::convolution_backward_data(pd), pd.scratchpad_desc(), Operand::input(g.dst, pd.diff_dst_desc()),
      Operand::input(g.weights, pd.weights_desc()), Operand::output(g.src, pd.diff_src_desc())});
}

std::shared_ptr<const BackwardWeightsPrimitive> make_backward_weights(const ConvShape& s, bool with_bias,
                                                                      memory::data_type dt) {
  const OneDnnGeometry g = onednn_geometry(s, with_bias, dt);
  const auto hint = forward_pd(g, with_bias);
  const memory::desc bias = with_bias ? g.bias : memory::desc();
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_backward_weights::primitive_desc pd(onednn_engine(), dnnl::algorithm::convolution_direct, g.src_any,
                                                        g.weights_any, bias, g.dst_any, g.strides, g.dilates, g.pad_l,
                                                        g.pad_r, hint, user_scratchpad());
#else
  dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, g.src_any, g.weights_any, bias,
                                                g.dst_any, g.strides, g.dilates, g.pad_l, g.pad_r);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, user_scratchpad(), onednn_engine(), hint);
#endif
  return std::make_shared<const BackwardWeightsPrimitive>(BackwardWeightsPrimitive{
      dnnl::convolution_backward_weights(pd), pd.scratchpad_desc(), Operand::input(g.src, pd.src_desc()),
      Operand::input(g.dst, pd.diff_dst_desc()), Operand::output(g.weights, pd.diff_weights_desc())});
}

using CacheKey = std::array<int64_t, 17>;

CacheKey key_of(const ConvShape& s, int64_t kind, bool with_bias, memory::data_type dt) {
  return {kind * 256 + static_cast<int64_t>(dt),
          s.n,
          s.c,
          s.h,
          s.w,
          s.o,
          s.kh,
          s.kw,
          s.ho,
          s.wo,
          s.groups,
          s.sh,
          s.sw,
          s.ph,
          s.pw,
          s.dh,
          s.dw * 2 + (with_bias ? 1 : 0)};
}

PrimitiveCache<CacheKey, ForwardPrimitive>& forward_cache() {
  static PrimitiveCache<CacheKey, ForwardPrimitive> cache;
  return cache;
}
PrimitiveCache<CacheKey, BackwardDataPrimitive>& backward_data_cache() {
  static PrimitiveCache<CacheKey, BackwardDataPrimitive> cache;
  return cache;
}
PrimitiveCache<CacheKey, BackwardWeightsPrimitive>& backward_weights_cache() {
  static PrimitiveCache<CacheKey, BackwardWeightsPrimitive> cache;
  return cache;
}

memory::data_type data_type_of(Dtype dtype) {
  EMBER_CHECK(dtype == kFloat32 || dtype == kBFloat16, "[cpu conv2d] oneDNN's path takes float32 or bfloat16, got ",
              dtype_name(dtype));
  return dtype == kFloat32 ? memory::data_type::f32 : memory::data_type::bf16;
}

}  // namespace

void onednn_forward(const void* x, const void* w, const void* bias, void* out, const ConvShape& s, Dtype dtype) {
  const memory::data_type dt = data_type_of(dtype);
  const bool with_bias = bias != nullptr;
  auto p = forward_cache().get(key_of(s, 0, with_bias, dt), [&] { return make_forward(s, with_bias, dt); });
  dnnl::stream stream(onednn_engine());
  memory src = p->src.bind_input(x, 0, stream);
  memory wei = p->weights.bind_input(w, 1, stream);
  memory dst = p->dst.bind_output(out);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  if (with_bias) {
    args.emplace(DNNL_ARG_BIAS,
                 memory(memory::desc({s.o}, dt, memory::format_tag::x), onednn_engine(), const_cast<void*>(bias)));
  }
  execute(p->prim, p->scratchpad, stream, std::move(args));
  p->dst.finish_output(dst, out, stream);
  stream.wait();
}

void onednn_backward(const void* grad_out, const void* x, const void* w, const ConvShape& s, void* grad_x, void* grad_w,
                     void* grad_b, Dtype dtype) {
  const memory::data_type dt = data_type_of(dtype);
  dnnl::stream stream(onednn_engine());
  if (grad_x != nullptr) {
    auto p = backward_data_cache().get(key_of(s, 1, false, dt), [&] { return make_backward_data(s, dt); });
    memory diff_dst = p->diff_dst.bind_input(grad_out, 0, stream);
    memory wei = p->weights.bind_input(w, 1, stream);
    memory diff_src = p->diff_src.bind_output(grad_x);
    execute(p->prim, p->scratchpad, stream,
            {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_SRC, diff_src}});
    p->diff_src.finish_output(diff_src, grad_x, stream);
  }
  if (grad_w != nullptr) {
    // The bias gradient comes out of the same pass when both are wanted.
    const bool with_bias = grad_b != nullptr;
    auto p = backward_weights_cache().get(key_of(s, 2, with_bias, dt),
                                          [&] { return make_backward_weights(s, with_bias, dt); });
    memory src = p->src.bind_input(x, 0, stream);
    memory diff_dst = p->diff_dst.bind_input(grad_out, 1, stream);
    memory diff_wei = p->diff_weights.bind_output(grad_w);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_wei}};
    if (with_bias) {
      args.emplace(DNNL_ARG_DIFF_BIAS, memory(memory::desc({s.o}, dt, memory::format_tag::x), onednn_engine(), grad_b));
    }
    execute(p->prim, p->scratchpad, stream, std::move(args));
    p->diff_weights.finish_output(diff_wei, grad_w, stream);
  }
  stream.wait();
}

}  // namespace ember::cpu::conv2d_paths
