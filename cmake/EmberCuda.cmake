# Finds the CUDA toolkit, cuDNN and the architectures to build for (EMBER_WITH_CUDA).
# CUDA: the runtime is linked statically, so ember loads on machines without CUDA and asks the
# driver (libcuda.so, which the runtime loads at run time) whether a GPU is there. cuBLAS and
# cuDNN are shared libraries of the toolkit; CUB is header-only.
set(EMBER_HAVE_CUDA OFF)
if(NOT EMBER_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    find_library(EMBER_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    find_path(EMBER_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(NOT EMBER_CUDNN_LIBRARY OR NOT EMBER_CUDNN_INCLUDE_DIR)
      set(EMBER_CUDA_MISSING "cuDNN (libcudnn.so and cudnn.h) was not found beside the CUDA toolkit")
    endif()
  else()
    set(EMBER_CUDA_MISSING "no CUDA toolkit was found (is nvcc on PATH?)")
  endif()
  if(NOT EMBER_CUDA_MISSING)
    set(EMBER_HAVE_CUDA ON)
    # Architectures: the GPU of the build machine when one is visible, else Ampere and Hopper
    # machine code plus Hopper PTX, which newer GPUs compile at load time.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(ember_archs "80-real;90")
      find_program(EMBER_NVIDIA_SMI nvidia-smi)
      if(EMBER_NVIDIA_SMI)
        execute_process(COMMAND ${EMBER_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                        OUTPUT_VARIABLE ember_caps RESULT_VARIABLE ember_smi_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(ember_smi_rc EQUAL 0 AND ember_caps MATCHES "^([0-9]+)\\.([0-9]+)")
          set(ember_archs "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
        endif()
      endif()
      set(CMAKE_CUDA_ARCHITECTURES "${ember_archs}" CACHE STRING "CUDA architectures to build for")
    endif()
    if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    enable_language(CUDA)
    # ember's CUDA sources are C++20 like the rest. CMake 3.25 predates nvcc 13 and does not know
    # its C++20 flag, so it is told here (nvcc has accepted -std=c++20 since CUDA 12.0).
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    message(STATUS "ember: CUDA support ON (toolkit ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(EMBER_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_CUDA=ON but ${EMBER_CUDA_MISSING}. "
                        "Install the CUDA toolkit with cuDNN or configure with -DEMBER_WITH_CUDA=OFF.")
  else()
    message(STATUS "ember: CUDA support OFF (${EMBER_CUDA_MISSING})")
  endif()
else()
  message(STATUS "ember: CUDA support OFF (EMBER_WITH_CUDA=OFF)")
endif()

