#pragma once
// How the CUDA all_finite check packs its tensors into kernel launches. Plain host C++ (no CUDA
// headers), so the tests check it on machines without a GPU.
//
// One launch reads up to kFiniteBatch tensors of one dtype: the kernel's parameter block carries
// their pointers and sizes, and blockIdx.y picks the tensor. A step's loss and gradients (a few
// to a few hundred tensors, nearly always of one dtype) then cost one launch per 32 tensors
// instead of several reductions each.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cuda/launch.h"
#include "ember/dtype.h"

namespace ember::cuda_impl {

/// Tensors per launch: 32 pointers and sizes are 512 bytes of the 4 KiB parameter block.
inline constexpr int kFiniteBatch = 32;
/// Blocks along x per tensor: enough to fill an H100-class GPU for the largest gradient, and
/// cheap to retire for the small ones in the same launch, whose surplus blocks exit at once.
inline constexpr int64_t kFiniteMaxBlocksX = 512;

struct FiniteLaunch {
  Dtype dtype = kFloat32;
  std::vector<int> tensors;  // indices into the checked list, at most kFiniteBatch
  unsigned blocks_x = 0;     // grid is blocks_x by tensors.size()
};

/// The launches covering every tensor with elements: grouped by dtype in order of first
/// appearance, kFiniteBatch at a time; empty tensors need no launch.
inline std::vector<FiniteLaunch> plan_all_finite(std::span<const Dtype> dtypes, std::span<const int64_t> numels) {
  std::vector<FiniteLaunch> launches;
  std::vector<Dtype> seen;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    if (std::find(seen.begin(), seen.end(), dtypes[i]) != seen.end()) continue;
    seen.push_back(dtypes[i]);
    FiniteLaunch current{dtypes[i], {}, 0};
    for (size_t j = i; j < dtypes.size(); ++j) {
      if (dtypes[j] != dtypes[i] || numels[j] == 0) continue;
      current.tensors.push_back(static_cast<int>(j));
      const int64_t blocks = std::min<int64_t>(launch_1d(numels[j]).blocks, kFiniteMaxBlocksX);
      current.blocks_x = std::max(current.blocks_x, static_cast<unsigned>(blocks));
      if (static_cast<int>(current.tensors.size()) == kFiniteBatch) {
        launches.push_back(current);
        current = FiniteLaunch{dtypes[i], {}, 0};
      }
    }
    if (!current.tensors.empty()) launches.push_back(current);
  }
  return launches;
}

}  // namespace ember::cuda_impl
