// The CUDA probe of a build without the CUDA toolkit.
#include "backend/cuda_probe.h"

#if !defined(EMBER_HAVE_CUDA)
namespace ember {

const CudaProbe& cuda_probe() noexcept {
  static const CudaProbe result = [] {
    CudaProbe p;
    p.reason = "ember was built without CUDA (no CUDA toolkit at build time; rebuild with -DEMBER_WITH_CUDA=ON)";
    return p;
  }();
  return result;
}

}  // namespace ember
#endif
