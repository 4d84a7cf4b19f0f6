// Asks the CUDA driver, through the statically linked runtime, whether GPUs are usable. libember
// calls this once, through CudaRuntime::probe(), right after loading this library
// (src/backend/cuda_loader.cpp), and keeps the answer as cuda_probe().
#include "backend/cuda_probe.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

#include "backend/cuda/arch_support.h"

namespace ember::cuda_impl {
cudaError_t kernel_image_status(int device);  // kernel_image.cu
namespace {

std::string version_str(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

CudaProbe probe() {
  CudaProbe p;
  p.built = true;
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  p.runtime_version = version_str(runtime);
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) p.driver_version = version_str(driver);

  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count <= 0) {
    if (driver == 0) {
      p.reason = "no NVIDIA driver found (libcuda.so could not be loaded); install the NVIDIA driver";
    } else if (err == cudaErrorInsufficientDriver || driver < runtime) {
      p.reason = "the NVIDIA driver (CUDA " + p.driver_version +
                 ") is older than the CUDA runtime ember was built with (" + p.runtime_version + "); update the driver";
    } else if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
      p.reason = "the driver reports no CUDA devices (check CUDA_VISIBLE_DEVICES)";
    } else {
      p.reason = std::string("CUDA initialisation failed: ") + cudaGetErrorString(err);
    }
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return p;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) == cudaSuccess) {
      p.device_names.push_back(std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
                               std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 20) + " MiB)");
    } else {
      p.device_names.emplace_back("unknown");
    }
  }
  // A GPU this binary has no code for would fail at the first kernel; say so up front instead.
  // Decided from the architecture list where it names them, because asking the runtime (loading
  // a kernel) creates a CUDA context on device 0 in every process (arch_support.h).
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    ArchVerdict verdict = arch_list_runs_on(EMBER_CUDA_ARCHITECTURES_STR, prop.major, prop.minor);
    if (verdict == ArchVerdict::Unknown) {
      const cudaError_t image = kernel_image_status(0);
      const bool no_code = image == cudaErrorNoKernelImageForDevice || image == cudaErrorInvalidDeviceFunction ||
                           image == cudaErrorUnsupportedPtxVersion;
      verdict = no_code ? ArchVerdict::DoesNotRun : ArchVerdict::Runs;
    }
    if (verdict == ArchVerdict::DoesNotRun) {
      p.reason = "this ember was built for CUDA architectures " EMBER_CUDA_ARCHITECTURES_STR ", which cannot run on " +
                 std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
                 std::to_string(prop.minor) +
                 "); rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major) +
                 std::to_string(prop.minor);
      return p;
    }
  }
  p.device_count = count;
  return p;
}

}  // namespace

CudaProbe probe_driver() noexcept {
  try {
    return probe();
  } catch (...) {
    CudaProbe p;
    p.built = true;
    p.reason = "CUDA initialisation failed unexpectedly";
    return p;
  }
}

}  // namespace ember::cuda_impl
