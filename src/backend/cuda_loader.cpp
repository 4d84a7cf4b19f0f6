// Finds and loads the CUDA backend, libember_cuda.so (src/backend/cuda_runtime.h), once.
//
// The order matters for what a CPU user pays: first the driver (libcuda.so.1, which the NVIDIA
// driver installs); only where there is one is the backend loaded, and with it cuBLAS, cuBLASLt
// and cuDNN. On a machine without a driver nothing but that one failed dlopen happens.
#include <dlfcn.h>

#include <string>

#include "backend/cuda_runtime.h"

namespace ember {
namespace {

struct Loaded {
  CudaProbe probe;
  CudaRuntime* runtime = nullptr;
  void* handle = nullptr;  // the loaded plugin, for its other entry points
};

#if defined(EMBER_CUDA_BACKEND_BUILT)
/// The folder libember.so was loaded from: the plugin is installed (and built) beside it.
std::string library_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cuda_runtime), &info) == 0 || info.dli_fname == nullptr) return {};
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown error";
}

Loaded load() {
  Loaded l;
  CudaProbe& p = l.probe;
  p.built = true;
  p.runtime_version = EMBER_CUDA_RUNTIME_VERSION;
  // RTLD_LAZY|RTLD_LOCAL: only asks whether the driver is there; the CUDA runtime inside the
  // plugin opens it again for itself.
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL) == nullptr) {
    p.reason = "no NVIDIA driver found (libcuda.so could not be loaded); install the NVIDIA driver";
    return l;
  }
  const std::string plugin = library_folder() + "libember_cuda.so";
  void* handle = dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    p.reason = "ember's CUDA backend could not be loaded (" + dl_error() +
               "); it needs the CUDA toolkit's cuBLAS and cuDNN (or pip's nvidia-cublas and nvidia-cudnn wheels) "
               "on the library path";
    return l;
  }
  using Entry = CudaRuntime* (*)(int);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaRuntimeEntry));
  CudaRuntime* runtime = entry != nullptr ? entry(kCudaRuntimeAbi) : nullptr;
  if (runtime == nullptr) {
    p.reason = plugin + " is not the CUDA backend of this build of ember (reinstall ember)";
    return l;
  }
  p = runtime->probe();
  l.runtime = runtime;
  l.handle = handle;
  return l;
}
#else
Loaded load() {
  Loaded l;
  l.probe.reason = "ember was built without CUDA (no CUDA toolkit at build time; rebuild with -DEMBER_WITH_CUDA=ON)";
  return l;
}
#endif

const Loaded& loaded() noexcept {
  static const Loaded result = [] {
    try {
      return load();
    } catch (...) {
      Loaded l;
      l.probe.built = true;
      l.probe.reason = "CUDA initialisation failed unexpectedly";
      return l;
    }
  }();
  return result;
}

}  // namespace

const CudaProbe& cuda_probe() noexcept { return loaded().probe; }

CudaRuntime* cuda_runtime() noexcept { return loaded().runtime; }

void* cuda_plugin_symbol(const char* name) noexcept {
#if defined(EMBER_CUDA_BACKEND_BUILT)
  void* handle = loaded().handle;
  return handle != nullptr ? dlsym(handle, name) : nullptr;
#else
  (void)name;
  return nullptr;
#endif
}

}  // namespace ember
