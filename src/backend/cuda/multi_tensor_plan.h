#pragma once
// How the CUDA multi-tensor optimizer updates (optim.cu, Backend::multi_tensor_*_step) pack many
// parameters into one kernel launch. Plain host C++ (no CUDA headers), so the tests check it on
// machines without a GPU.
//
// The idea is PyTorch's multi_tensor_apply: a launch's parameter block carries the addresses of
// up to kMultiTensorMaxTensors parameters (with their gradients and state) and every block of the
// grid updates one chunk of kMultiTensorChunk elements of one of them. Where PyTorch lists each
// block's tensor and chunk in the parameter block, which caps a launch at a few hundred blocks,
// this plan gives each tensor a run of consecutive blocks and lists only where each run starts:
// a block finds its tensor by a binary search over those starts, and a launch holds as many
// blocks as its tensors need. A step's launches are then one per kMultiTensorMaxTensors
// parameters (or per kMultiTensorMaxSteps distinct hyper-parameter sets), where they were one
// per parameter.
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cuda/launch.h"
#include "core/check.h"
#include "ember/half.h"  // EMBER_HD
#include "kernels/optim_ops.h"

namespace ember::cuda_impl {

/// Elements one block updates: 8 per thread, enough to amortise the block's set-up (finding its
/// tensor, loading its step), and few enough that a small model still fills the GPU: the check's
/// mlp (669,706 parameters) is 330 blocks, where PyTorch's 65,536-element chunks would give it 13
/// blocks on an H100's 132 SMs. A launch has no cap on its blocks, so large models lose nothing.
inline constexpr int64_t kMultiTensorChunk = 2048;
/// Threads per block of the multi-tensor kernels (their __launch_bounds__).
inline constexpr int kMultiTensorThreads = 256;
/// Tensors per launch: with five addresses each (Adam with amsgrad, RMSprop with everything), a
/// size, a block start and a step slot, 64 of them fill about 3.4 KiB of the 4 KiB a kernel's
/// parameters may take on every architecture and driver (optim.cu checks the real sizes).
inline constexpr int kMultiTensorMaxTensors = 64;
/// Distinct steps (a hyper-parameter set: each parameter group's options, each step count) per
/// launch: two or three groups, such as parameters with and without weight decay, share one.
inline constexpr int kMultiTensorMaxSteps = 4;

struct MultiTensorLimits {
  int max_tensors = kMultiTensorMaxTensors;
  int max_steps = kMultiTensorMaxSteps;
  int64_t chunk = kMultiTensorChunk;
  int64_t max_blocks = kMaxGridX;  // the grid's x limit
};

struct MultiTensorLaunch {
  std::vector<int> tensors;           // indices into the update's list, in their order
  std::vector<int> steps;             // the step ids its tensors use, in order of first use
  std::vector<uint8_t> step_slot;     // per tensor: the position of its step id in `steps`
  std::vector<uint32_t> first_block;  // per tensor: the first block of its run; then the total
  uint32_t blocks() const { return first_block.empty() ? 0 : first_block.back(); }
};

/// The launches that update every tensor with elements exactly once, in order: `numels[i]` is
/// tensor i's size and `step_ids[i]` names its step (equal ids: one step, see step_ids()). A
/// launch ends when the next tensor would exceed its tensors, its distinct steps or its blocks;
/// an empty tensor needs no block and is left out.
inline std::vector<MultiTensorLaunch> plan_multi_tensor(std::span<const int64_t> numels, std::span<const int> step_ids,
                                                        const MultiTensorLimits& limits = {}) {
  EMBER_CHECK(numels.size() == step_ids.size(), "plan_multi_tensor: ", numels.size(), " tensors but ", step_ids.size(),
              " step ids");
  EMBER_CHECK(limits.max_tensors > 0 && limits.max_steps > 0 && limits.max_steps <= 256 && limits.chunk > 0 &&
                  limits.max_blocks > 0 && limits.max_blocks <= kMaxGridX,
              "plan_multi_tensor: invalid limits");
  std::vector<MultiTensorLaunch> launches;
  MultiTensorLaunch current;
  for (size_t i = 0; i < numels.size(); ++i) {
    if (numels[i] <= 0) continue;
    const int64_t chunks = (numels[i] + limits.chunk - 1) / limits.chunk;
    // Beyond any real memory (2^31 chunks of 2048 elements are 17.6 TB of float32); said anyway.
    EMBER_CHECK(chunks <= limits.max_blocks, "multi-tensor update: a tensor of ", numels[i],
                " elements needs more blocks than one launch may have");
    size_t slot = 0;
    while (slot < current.steps.size() && current.steps[slot] != step_ids[i]) ++slot;
    const bool new_step = slot == current.steps.size();
    const int64_t blocks = current.blocks();
    if (static_cast<int>(current.tensors.size()) == limits.max_tensors ||
        (new_step && static_cast<int>(current.steps.size()) == limits.max_steps) ||
        blocks + chunks > limits.max_blocks) {
      launches.push_back(std::move(current));
      current = MultiTensorLaunch{};
      slot = 0;
    }
    if (slot == current.steps.size()) current.steps.push_back(step_ids[i]);
    if (current.first_block.empty()) current.first_block.push_back(0);
    current.tensors.push_back(static_cast<int>(i));
    current.step_slot.push_back(static_cast<uint8_t>(slot));
    current.first_block.push_back(static_cast<uint32_t>(current.blocks() + chunks));
  }
  if (!current.tensors.empty()) launches.push_back(std::move(current));
  return launches;
}

/// Which of a launch's `count` tensors block `block` updates: the run first_block[t] <= block <
/// first_block[t + 1] holding it (first_block as MultiTensorLaunch has it, count + 1 entries,
/// strictly increasing), by binary search. The kernel's own lookup; the tests run it on the host.
EMBER_HD inline int run_of_block(const uint32_t* first_block, int count, uint32_t block) {
  int lo = 0, hi = count;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (first_block[mid] <= block) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/// For each step, the index of the first step equal to it (`same` decides): the ids
/// plan_multi_tensor groups by. Steps are few and mostly equal, so the quadratic worst case
/// (every step different) costs nothing that matters.
template <typename Step, typename Same>
std::vector<int> step_ids(std::span<const Step> steps, Same same) {
  std::vector<int> ids(steps.size());
  std::vector<int> distinct;
  for (size_t i = 0; i < steps.size(); ++i) {
    ids[i] = static_cast<int>(i);
    for (int d : distinct) {
      if (same(steps[static_cast<size_t>(d)], steps[i])) {
        ids[i] = d;
        break;
      }
    }
    if (ids[i] == static_cast<int>(i)) distinct.push_back(ids[i]);
  }
  return ids;
}

// Whether two steps compute the same update. Doubles compare by their bits: -0.0 and 0.0 give
// different results in a fused multiply-add whose other terms are zeros, so they are not one
// step. Every field of each struct is listed; one added to kernels/optim_ops.h must be added here.
// (A field added to one of them usually changes its size, which these catch.)
static_assert(sizeof(kernels::SgdStep) == 4 * sizeof(double) + 8, "SgdStep changed: update same_step");
static_assert(sizeof(kernels::AdamStep) == 7 * sizeof(double) + 8, "AdamStep changed: update same_step");
static_assert(sizeof(kernels::AdadeltaStep) == 4 * sizeof(double) + 8, "AdadeltaStep changed: update same_step");
static_assert(sizeof(kernels::RmspropStep) == 5 * sizeof(double) + 8, "RmspropStep changed: update same_step");

inline bool same_bits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

inline bool same_step(const kernels::SgdStep& a, const kernels::SgdStep& b) {
  return same_bits(a.lr, b.lr) && same_bits(a.weight_decay, b.weight_decay) && same_bits(a.momentum, b.momentum) &&
         same_bits(a.dampening, b.dampening) && a.nesterov == b.nesterov && a.maximize == b.maximize &&
         a.first_step == b.first_step;
}

inline bool same_step(const kernels::AdamStep& a, const kernels::AdamStep& b) {
  return same_bits(a.lr, b.lr) && same_bits(a.beta1, b.beta1) && same_bits(a.beta2, b.beta2) &&
         same_bits(a.eps, b.eps) && same_bits(a.weight_decay, b.weight_decay) && same_bits(a.step_size, b.step_size) &&
         same_bits(a.bias_correction2_sqrt, b.bias_correction2_sqrt) && a.decoupled == b.decoupled &&
         a.maximize == b.maximize && a.amsgrad == b.amsgrad;
}

inline bool same_step(const kernels::AdadeltaStep& a, const kernels::AdadeltaStep& b) {
  return same_bits(a.lr, b.lr) && same_bits(a.rho, b.rho) && same_bits(a.eps, b.eps) &&
         same_bits(a.weight_decay, b.weight_decay) && a.maximize == b.maximize;
}

inline bool same_step(const kernels::RmspropStep& a, const kernels::RmspropStep& b) {
  return same_bits(a.lr, b.lr) && same_bits(a.alpha, b.alpha) && same_bits(a.eps, b.eps) &&
         same_bits(a.weight_decay, b.weight_decay) && same_bits(a.momentum, b.momentum) && a.centered == b.centered &&
         a.maximize == b.maximize;
}

}  // namespace ember::cuda_impl
