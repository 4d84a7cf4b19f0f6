# Finds what ember links privately: threads, OpenMP, the BLAS; and what its CUDA backend links.
# The library is shared and these stay private, so programs that use ember need none of them.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
# zlib reads gzipped data sets (IDX files as Debian's dataset packages ship them).
find_package(ZLIB REQUIRED)
# Intel's ISA-L, when present, computes the CRC-32 that ZIP archives (torch.save files, .npz) carry
# at about 22 GB/s against zlib's 2.6 (docs/PERFORMANCE.md §15); without it zlib computes it.
# Debian: libisal-dev.
find_path(EMBER_ISAL_INCLUDE_DIR isa-l/crc.h)
find_library(EMBER_ISAL_LIBRARY isal)
if(EMBER_ISAL_INCLUDE_DIR AND EMBER_ISAL_LIBRARY)
  set(EMBER_HAVE_ISAL ON)
  message(STATUS "ember: CRC-32 with ISA-L (${EMBER_ISAL_LIBRARY})")
else()
  set(EMBER_HAVE_ISAL OFF)
  message(STATUS "ember: CRC-32 with zlib (ISA-L not found; on Debian: sudo apt-get install libisal-dev)")
endif()
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

include(EmberCuda)

# MPI launches the processes of a distributed job and carries CPU tensors between them (Debian:
# libopenmpi-dev openmpi-bin). NCCL carries CUDA tensors; it ships with the CUDA toolkit, and its
# communicators are set up through MPI, so it is used only when both are there.
set(EMBER_HAVE_MPI OFF)
set(EMBER_HAVE_NCCL OFF)
if(NOT EMBER_WITH_MPI STREQUAL "OFF")
  # ember calls MPI's C API from C++; the deprecated MPI C++ bindings are not wanted.
  set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(EMBER_HAVE_MPI ON)
    find_program(EMBER_MPIEXEC NAMES mpirun mpiexec )
    if(EMBER_HAVE_CUDA)
      find_library(EMBER_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
      find_path(EMBER_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
      if(EMBER_NCCL_LIBRARY AND EMBER_NCCL_INCLUDE_DIR)
        set(EMBER_HAVE_NCCL ON)
      endif()
    endif()
    message(STATUS "ember: distributed support ON (MPI ${MPI_CXX_VERSION}; NCCL ${EMBER_HAVE_NCCL})")
  elseif(EMBER_WITH_MPI STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_MPI=ON but no MPI was found. On Debian: sudo apt-get install libopenmpi-dev openmpi-bin "
                        "(or configure with -DEMBER_WITH_MPI=OFF)")
  else()
    message(STATUS "ember: distributed support OFF (no MPI found; Debian: libopenmpi-dev openmpi-bin)")
  endif()
else()
  message(STATUS "ember: distributed support OFF (EMBER_WITH_MPI=OFF)")
endif()

# Flags for ember's own CUDA sources: constexpr host functions callable in kernels, and the host
# compiler told, like for the .cpp files, that errno is never read.
function(ember_cuda_flags target)
  if(EMBER_HAVE_CUDA)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr;-Xcompiler=-fno-math-errno>")
  endif()
endfunction()

function(ember_link_private_dependencies target)
  target_link_libraries(${target} PRIVATE Threads::Threads OpenMP::OpenMP_CXX ZLIB::ZLIB nlohmann_json::nlohmann_json ${OpenBLAS_LIBRARIES}
                                           ${EMBER_DNNL_LIBRARY})
  target_include_directories(${target} PRIVATE ${OpenBLAS_INCLUDE_DIRS} ${EMBER_DNNL_INCLUDE_DIR})
  if(EMBER_HAVE_ISAL)
    target_link_libraries(${target} PRIVATE ${EMBER_ISAL_LIBRARY})
    target_include_directories(${target} PRIVATE ${EMBER_ISAL_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_ISAL=1)
  endif()
  if(EMBER_HAVE_MPI)
    target_link_libraries(${target} PRIVATE MPI::MPI_CXX)
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_MPI=1)
  endif()
endfunction()

# What the CUDA backend (libember_cuda.so) links, and the host-side tests of its internals: the
# CUDA runtime (static, so that the library asks the driver itself), cuBLAS, cuDNN and, with MPI,
# NCCL. libember.so links none of these: it loads the backend at run time
# (src/backend/cuda_loader.cpp).
function(ember_link_cuda target)
  target_link_libraries(${target} PRIVATE ember_cuda_libraries)  # cmake/EmberCuda.cmake
  target_compile_definitions(${target} PRIVATE EMBER_HAVE_CUDA=1)
  if(EMBER_HAVE_NCCL)
    target_link_libraries(${target} PRIVATE ${EMBER_NCCL_LIBRARY})
    target_include_directories(${target} PRIVATE ${EMBER_NCCL_INCLUDE_DIR})
    target_compile_definitions(${target} PRIVATE EMBER_HAVE_NCCL=1)
  endif()
endfunction()
