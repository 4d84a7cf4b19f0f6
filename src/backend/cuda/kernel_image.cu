// Whether this build carries code a given GPU can run: a binary built for sm_80/sm_90 (plus PTX
// for 90) runs on those and newer GPUs, but not on, say, a Turing card. Asking the runtime for a
// trivial kernel's attributes loads the module for that device and reports exactly that.
#include <cuda_runtime_api.h>

namespace ember::cuda_impl {
namespace {
__global__ void probe_kernel() {}
}  // namespace

cudaError_t kernel_image_status(int device) {
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = 0;
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) {
    cudaFuncAttributes attributes{};
    err = cudaFuncGetAttributes(&attributes, probe_kernel);
  }
  cudaGetLastError();  // leave no sticky error behind for the next call
  cudaSetDevice(previous);
  return err;
}

}  // namespace ember::cuda_impl
