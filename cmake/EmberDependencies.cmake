# Finds what ember links privately: threads, OpenMP, the BLAS and, when built, the CUDA runtime.
# The library is shared and these stay private, so programs that use ember need none of them.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
# zlib reads gzipped data sets (IDX files as Debian's dataset packages ship them).
find_package(ZLIB REQUIRED)
# JSON for safetensors headers (header-only; Debian nlohmann-json3-dev).
find_package(nlohmann_json 3.2 REQUIRED)

# BLAS. float32 products (and float16/bfloat16 ones, computed in float32) go to oneDNN's sgemm,
# which measured 5.5-6x faster than OpenBLAS 0.3.21 over an MLP training step's products (OpenBLAS
# misdetects recent Xeons and falls back to SSE3 kernels) and 1.2-1.5x faster even with OpenBLAS
# forced onto its AVX-512 kernels; docs/PERFORMANCE.md has the numbers. oneDNN has no float64 GEMM, so float64 stays on
# OpenBLAS. Both are their OpenMP builds (Debian libdnnl-dev, libopenblas-openmp-dev) and so share
# ember's OpenMP thread pool instead of starting their own.
find_package(OpenBLAS CONFIG QUIET)
if(NOT OpenBLAS_FOUND)
  message(FATAL_ERROR "OpenBLAS not found. On Debian: sudo apt-get install libopenblas-openmp-dev")
endif()
# oneDNN's own package config is not used: it insists on the OpenCL headers (for its GPU runtime),
# which Debian's libdnnl-dev does not pull in and ember does not need.
find_path(EMBER_DNNL_INCLUDE_DIR dnnl.h)
find_library(EMBER_DNNL_LIBRARY dnnl)
if(NOT EMBER_DNNL_INCLUDE_DIR OR NOT EMBER_DNNL_LIBRARY)
  message(FATAL_ERROR "oneDNN not found. On Debian: sudo apt-get install libdnnl-dev")
endif()

# CUDA: the runtime is linked statically, so ember loads on machines without CUDA and asks the
# driver (libcuda.so, which the runtime loads at run time) whether a GPU is there.
set(EMBER_HAVE_CUDA OFF)
if(NOT EMBER_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(EMBER_HAVE_CUDA ON)
    message(STATUS "ember: CUDA support ON (toolkit ${CUDAToolkit_VERSION})")
  elseif(EMBER_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_CUDA=ON but no CUDA toolkit was found (is nvcc on PATH?). "
                        "Install the CUDA toolkit or configure with -DEMBER_WITH_CUDA=OFF.")
  else()
    message(STATUS "ember: CUDA support OFF (no CUDA toolkit found)")
  endif()
else()
  message(STATUS "ember: CUDA support OFF (EMBER_WITH_CUDA=OFF)")
endif()

function(ember_link_private_dependencies target)
  target_link_libraries(${target} PRIVATE Threads::Threads OpenMP::OpenMP_CXX ZLIB::ZLIB nlohmann_json::nlohmann_json ${OpenBLAS_LIBRARIES}
                                           ${EMBER_DNNL_LIBRARY})
  target_include_directories(${target} PRIVATE ${OpenBLAS_INCLUDE_DIRS} ${EMBER_DNNL_INCLUDE_DIR})
  if(EMBER_HAVE_CUDA)
    target_link_libraries(${target} PRIVATE CUDA::cudart_static)
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_CUDA=1)
  endif()
endfunction()
