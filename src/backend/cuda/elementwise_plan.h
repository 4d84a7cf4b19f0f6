#pragma once
// The CUDA element-wise launcher's decisions and its kernels' bodies, free of CUDA headers so
// that the tests make the same decisions and run the same bodies on the host.
//
// Two paths, chosen per launch from the simplified shape (kernels::StridedIndexer):
//  * contiguous: the output is one contiguous run, every input is too or is a broadcast scalar,
//    and every contiguous operand is aligned to the widest vector the types allow
//    (kVectorBytes: 4 floats, 8 halves). Whole vectors per load and store, no index math, and a
//    scalar tail after the last whole vector. Any length (64-bit counters);
//  * strided: offsets from kernels::StridedIndexer32, a multiply-high per dimension instead of
//    a 64-bit division. A shape with more than 2^31 - 1 elements, or an operand reaching
//    further than that, is first cut into pieces that fit (split_for_32bit, PyTorch's
//    with_32bit_indexing), each launched with its base offsets: no 64-bit kernel is compiled.
//    A contiguous run not aligned for vectors (a view starting mid-vector) comes here too: on
//    one dimension the indexer does no division, only a multiply per operand.
// Every path gives each thread several elements per step (vectors_per_thread vectors, or
// kStridedItems), loaded before any is stored, so a thread has several loads in flight; a
// grid-stride loop covers what a capped grid does not. The loop over (block, thread) is the
// body below, which elementwise.cuh's kernels call with blockIdx/threadIdx and the tests call
// in loops.
//
// The scalar math stays kernels/elementwise_ops.h's functors; MapArgs only loads, calls and
// stores.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "backend/cuda/launch.h"
#include "ember/half.h"  // EMBER_HD
#include "kernels/elementwise_ops.h"
#include "kernels/indexer.h"
#include "kernels/indexer32.h"

namespace ember::cuda_impl {

/// Bytes of one vector load or store: the widest a thread issues (LDG.128 / STG.128).
inline constexpr int kVectorBytes = 16;
/// Elements a thread of the strided kernel takes per grid step.
inline constexpr int kStridedItems = 4;

/// Vectors a thread of the contiguous kernel takes per grid step: two for 4- and 8-byte types
/// (8 floats, 4 doubles: 32 bytes of each operand in flight), one for narrower types, whose one
/// vector already holds 8 or 16 elements: each element inlines the op's math once, and 16
/// copies of a half-precision erf would bloat the code more than a second load in flight gains.
constexpr int vectors_per_thread(int vec) { return vec >= 8 ? 1 : (vec >= 4 ? 2 : kStridedItems / vec); }

enum class ElementwisePath : uint8_t { Contiguous, Strided };

template <int N>
struct ElementwisePlan {
  ElementwisePath path = ElementwisePath::Strided;
  int64_t n = 0;
  int64_t flat[N] = {};  // Contiguous: each operand's stride along the run, 1 or 0 (broadcast)
  int vec = 1;           // Contiguous: elements per vector access (> 1)
  Launch1d launch;       // Contiguous (a strided piece's grid is grid_for(piece, kStridedItems))
};

/// Whether `ix` (built with memory_order) is one run along which the output is contiguous and
/// every input is contiguous or a broadcast scalar; fills flat[] with the strides (1 or 0).
template <int N, int MaxDims>
bool is_flat(const kernels::StridedIndexer<N, MaxDims>& ix, int64_t (&flat)[N]) {
  if (ix.ndim != 1) return false;
  const bool single = ix.sizes[0] == 1;  // strides of a 1-element run never matter
  for (int k = 0; k < N; ++k) {
    const int64_t s = ix.strides[k][0];
    if (single) {
      flat[k] = 1;
    } else if (s == 1 || (s == 0 && k > 0)) {
      flat[k] = s;
    } else {
      return false;
    }
  }
  return true;
}

/// The widest vector, in elements (a power of two, at most `max_vec`), that every contiguous
/// operand (flat[k] == 1) can be accessed with: its address a multiple of vec * elem_size[k].
/// Broadcast operands are read one element at a time and do not limit it.
template <int N>
int widest_vector(const int64_t (&flat)[N], const int (&elem_size)[N], const uintptr_t (&addr)[N], int max_vec) {
  int vec = max_vec;
  while (vec > 1) {
    bool aligned = true;
    for (int k = 0; k < N; ++k) {
      if (flat[k] == 1 && addr[k] % (static_cast<uintptr_t>(vec) * static_cast<uintptr_t>(elem_size[k])) != 0) {
        aligned = false;
      }
    }
    if (aligned) break;
    vec /= 2;
  }
  return vec;
}

/// Blocks for `work` items per grid step of kBlockThreads threads taking `per_thread` each; at
/// least one block (the contiguous kernel's scalar tail may be all there is).
inline Launch1d grid_for(int64_t work, int per_thread) {
  const int64_t per_block = static_cast<int64_t>(kBlockThreads) * per_thread;
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxStrideBlocks) blocks = kMaxStrideBlocks;
  return {static_cast<unsigned>(blocks), static_cast<unsigned>(kBlockThreads)};
}

/// The plan for `ix` (numel > 0). `max_vec` is the widest vector the kernel was compiled for
/// (1: no vector kernel, as for launch_elementwise's bodies). The contiguous kernel exists for
/// that width only: a narrower alignment takes the strided path, as cheap on one dimension.
template <int N, int MaxDims>
ElementwisePlan<N> plan_elementwise(const kernels::StridedIndexer<N, MaxDims>& ix, const int (&elem_size)[N],
                                    const uintptr_t (&addr)[N], int max_vec) {
  ElementwisePlan<N> p;
  p.n = ix.numel();
  if (max_vec > 1 && is_flat(ix, p.flat) && widest_vector(p.flat, elem_size, addr, max_vec) == max_vec) {
    p.path = ElementwisePath::Contiguous;
    p.vec = max_vec;
    p.launch = grid_for(p.n / p.vec, vectors_per_thread(p.vec));
    return p;
  }
  for (int k = 0; k < N; ++k) p.flat[k] = 0;
  p.path = ElementwisePath::Strided;
  return p;
}

/// Element offsets of each operand (a strided piece's base, an element's offsets).
template <int N>
using Offsets64 = typename kernels::StridedIndexer<N>::Offsets;

/// Calls piece(sub, base) for pieces of `ix` that together cover each of its elements once:
/// `sub` is ix with one dimension narrowed, `base` the element offset of each operand at the
/// piece's first element, and each piece satisfies StridedIndexer32::fits(sub, limit). A shape
/// that fits is one piece with base 0. Otherwise the dimension reaching furthest in any operand
/// ((size - 1) * |stride|, then size) is halved, recursively: a piece of size-1 dimensions
/// always fits, so this ends, after about log2(reach / limit) levels.
template <int N, int MaxDims, typename Piece>
void split_for_32bit(const kernels::StridedIndexer<N, MaxDims>& ix, const Offsets64<N>& base, Piece&& piece,
                     int64_t limit = kernels::kMaxIndex32) {
  static_assert(MaxDims <= kernels::kMaxDims, "a GPU indexer: StridedIndexer32 holds kMaxDims dims");
  if (kernels::StridedIndexer32<N>::fits(ix, limit)) {
    piece(ix, base);
    return;
  }
  int split = -1;
  int64_t widest = -1, widest_size = 0;
  for (int d = 0; d < ix.ndim; ++d) {
    if (ix.sizes[d] < 2) continue;
    int64_t reach = 0;
    for (int k = 0; k < N; ++k) {
      const int64_t stride = ix.strides[k][d] < 0 ? -ix.strides[k][d] : ix.strides[k][d];
      const int64_t r = (ix.sizes[d] - 1) * stride;  // within one operand's storage: no overflow
      if (r > reach) reach = r;
    }
    if (reach > widest || (reach == widest && ix.sizes[d] > widest_size)) {
      split = d;
      widest = reach;
      widest_size = ix.sizes[d];
    }
  }
  const int64_t half = ix.sizes[split] / 2;
  kernels::StridedIndexer<N, MaxDims> part = ix;
  part.sizes[split] = half;
  split_for_32bit(part, base, piece, limit);
  part.sizes[split] = ix.sizes[split] - half;
  Offsets64<N> next = base;
  for (int k = 0; k < N; ++k) next.v[k] += half * ix.strides[k][split];
  split_for_32bit(part, next, piece, limit);
}

// ---- the kernels' bodies ----------------------------------------------------------------------

/// V elements, aligned as one access of their total size.
template <typename T, int V>
struct alignas(sizeof(T) * V) AlignedVec {
  T val[V];
};

template <int V, typename T>
EMBER_HD AlignedVec<T, V> load_vec(const T* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const AlignedVec<T, V>*>(p);
#else
  AlignedVec<T, V> v;  // the host: the same bytes, without breaking C++'s aliasing rules
  std::memcpy(static_cast<void*>(&v), p, sizeof(v));
  return v;
#endif
}

template <int V, typename T>
EMBER_HD void store_vec(T* p, const AlignedVec<T, V>& v) {
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<AlignedVec<T, V>*>(p) = v;
#else
  std::memcpy(static_cast<void*>(p), &v, sizeof(v));
#endif
}

/// out = f(in_0, ..., in_{K-1}) element by element. Operand 0 is the output, k > 0 input k - 1,
/// in the order of the launcher's views. `broadcast` has bit k - 1 set for each input that the
/// contiguous path reads as a scalar (flat stride 0).
template <typename F, typename Out, typename... In>
struct MapArgs {
  static constexpr int kInputs = static_cast<int>(sizeof...(In));
  static constexpr int N = kInputs + 1;
  template <size_t I>
  using In_t = std::tuple_element_t<I, std::tuple<In...>>;
  /// The widest vector (in elements) of kVectorBytes that every operand's type allows.
  static constexpr int kMaxVec = kVectorBytes / static_cast<int>(std::max({sizeof(Out), sizeof(In)...}));

  F f;
  Out* out;
  const void* in[kInputs];
  uint32_t broadcast = 0;

  template <size_t I>
  EMBER_HD const In_t<I>* input() const {
    return static_cast<const In_t<I>*>(in[I]);
  }

  // The strided path: one element at its operands' offsets (Offsets64).
  template <typename Offs>
  EMBER_HD Out compute_at(const Offs& o) const {
    return compute_at(o, std::index_sequence_for<In...>{});
  }
  template <typename Offs>
  EMBER_HD void store_at(const Offs& o, const Out& v) const {
    out[o[0]] = v;
  }

  // The contiguous path: element e of every operand (broadcast inputs: their only element).
  EMBER_HD Out compute_flat(int64_t e) const { return compute_flat(e, std::index_sequence_for<In...>{}); }
  EMBER_HD void store_flat(int64_t e, const Out& v) const { out[e] = v; }

  // The contiguous path with vectors: elements [e, e + V), e a multiple of V.
  template <int V>
  EMBER_HD AlignedVec<Out, V> compute_vec(int64_t e) const {
    return compute_vec<V>(e, std::index_sequence_for<In...>{});
  }
  template <int V>
  EMBER_HD void store_vec_at(int64_t e, const AlignedVec<Out, V>& v) const {
    store_vec<V>(out + e, v);
  }

 private:
  template <typename Offs, size_t... I>
  EMBER_HD Out compute_at(const Offs& o, std::index_sequence<I...>) const {
    return f(input<I>()[o[static_cast<int>(I) + 1]]...);
  }
  template <size_t... I>
  EMBER_HD Out compute_flat(int64_t e, std::index_sequence<I...>) const {
    return f(input<I>()[(broadcast >> I) & 1u ? 0 : e]...);
  }
  template <int V, typename T>
  EMBER_HD AlignedVec<T, V> load_operand(const T* p, int64_t e, bool scalar) const {
    if (scalar) {
      AlignedVec<T, V> v;
      const T s = p[0];
      for (int l = 0; l < V; ++l) v.val[l] = s;
      return v;
    }
    return load_vec<V>(p + e);
  }
  template <int V, typename... Vecs>
  EMBER_HD AlignedVec<Out, V> lanes(const Vecs&... v) const {
    AlignedVec<Out, V> r;
    for (int l = 0; l < V; ++l) r.val[l] = f(v.val[l]...);
    return r;
  }
  template <int V, size_t... I>
  EMBER_HD AlignedVec<Out, V> compute_vec(int64_t e, std::index_sequence<I...>) const {
    return lanes<V>(load_operand<V>(input<I>(), e, ((broadcast >> I) & 1u) != 0)...);
  }
};

/// Thread `thread` of block `block` (of `blocks` blocks of `threads`) of the contiguous kernel:
/// vectors v = step_base + u * threads + thread for u < vectors_per_thread(V) (neighbouring
/// threads, neighbouring vectors), all loaded and computed before any is stored; then the global
/// thread g < n % V takes tail element n - n % V + g.
template <int V, typename M>
EMBER_HD void contiguous_thread(const M& m, int64_t n, int64_t block, int thread, int64_t blocks, int threads) {
  static_assert(V > 1, "scalar accesses take the strided path");
  constexpr int U = vectors_per_thread(V);
  const int64_t nvec = n / V;
  const int64_t tile = static_cast<int64_t>(threads) * U;
  for (int64_t base = block * tile; base < nvec; base += blocks * tile) {
    AlignedVec<decltype(m.compute_flat(0)), V> r[U] = {};
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + static_cast<int64_t>(u) * threads + thread;
      if (v < nvec) r[u] = m.template compute_vec<V>(v * V);
    }
    for (int u = 0; u < U; ++u) {
      const int64_t v = base + static_cast<int64_t>(u) * threads + thread;
      if (v < nvec) m.template store_vec_at<V>(v * V, r[u]);
    }
  }
  const int64_t g = block * threads + thread, e = nvec * V + g;
  if (e < n) m.store_flat(e, m.compute_flat(e));
}

/// The offsets of element i of a strided piece: 32-bit index math, then the piece's base.
template <int N>
EMBER_HD Offsets64<N> piece_offsets(const kernels::StridedIndexer32<N>& ix, const Offsets64<N>& base, uint32_t i) {
  const typename kernels::StridedIndexer32<N>::Offsets o = ix.offsets(i);
  Offsets64<N> r;
  for (int k = 0; k < N; ++k) r.v[k] = base.v[k] + o.v[k];
  return r;
}

/// Thread `thread` of block `block` (of `blocks`) of the strided kernel over one piece of n
/// elements: elements i = step_base + u * threads + thread for u < kStridedItems, all loaded
/// and computed before any is stored. n <= 2^31 - 1 and one grid step is at most
/// kMaxStrideBlocks * 1024 = 2^26, so no index passes 2^32.
template <int N, typename M>
EMBER_HD void strided_thread(const kernels::StridedIndexer32<N>& ix, const Offsets64<N>& base, const M& m, uint32_t n,
                             uint32_t block, int thread, uint32_t blocks, int threads) {
  const uint32_t tile = static_cast<uint32_t>(threads) * kStridedItems;
  for (uint32_t start = block * tile; start < n; start += blocks * tile) {
    Offsets64<N> offs[kStridedItems] = {};
    decltype(m.compute_at(offs[0])) r[kStridedItems] = {};
    for (int u = 0; u < kStridedItems; ++u) {
      const uint32_t i = start + static_cast<uint32_t>(u * threads + thread);
      if (i < n) {
        offs[u] = piece_offsets(ix, base, i);
        r[u] = m.compute_at(offs[u]);
      }
    }
    for (int u = 0; u < kStridedItems; ++u) {
      const uint32_t i = start + static_cast<uint32_t>(u * threads + thread);
      if (i < n) m.store_at(offs[u], r[u]);
    }
  }
}

/// The same walk for a body that loads, computes and stores itself, body(offsets) (copy and
/// fill).
template <int N, typename Body>
EMBER_HD void body_thread(const kernels::StridedIndexer32<N>& ix, const Offsets64<N>& base, const Body& body,
                          uint32_t n, uint32_t block, int thread, uint32_t blocks, int threads) {
  const uint32_t tile = static_cast<uint32_t>(threads) * kStridedItems;
  for (uint32_t start = block * tile; start < n; start += blocks * tile) {
    for (int u = 0; u < kStridedItems; ++u) {
      const uint32_t i = start + static_cast<uint32_t>(u * threads + thread);
      if (i < n) body(piece_offsets(ix, base, i));
    }
  }
}

// ---- the typed functions the backends map ------------------------------------------------------

/// out = O(f(C(x))): x of type T, computed in C, stored as O (unary ops and clamp).
template <typename T, typename C, typename O, typename F>
struct ConvertedUnary {
  F f;
  EMBER_HD O operator()(T x) const { return kernels::convert<O>(f(kernels::convert<C>(x))); }
};

/// out = O(f(C(a), C(b))) (binary ops and add with alpha).
template <typename T, typename C, typename O, typename F>
struct ConvertedBinary {
  F f;
  EMBER_HD O operator()(T a, T b) const {
    return kernels::convert<O>(f(kernels::convert<C>(a), kernels::convert<C>(b)));
  }
};

}  // namespace ember::cuda_impl
