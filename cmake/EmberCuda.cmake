# Finds the CUDA toolkit, the CUDA libraries ember's backend links and the architectures to build
# for (EMBER_WITH_CUDA). Sets:
#   EMBER_HAVE_CUDA        ON when everything below was found and the CUDA language is enabled;
#   ember_cuda_libraries   an INTERFACE (imported) target with the include directories, libraries and
#                          run paths of the CUDA runtime (static), cuBLAS, cuBLASLt, cuSOLVER and cuDNN;
#   EMBER_CUDART_LIBRARY, EMBER_CUBLAS_LIBRARY, EMBER_CUBLASLT_LIBRARY, EMBER_CUSOLVER_LIBRARY,
#   EMBER_CUDNN_LIBRARY and EMBER_CUBLAS_INCLUDE_DIR, EMBER_CUSOLVER_INCLUDE_DIR,
#   EMBER_CUDNN_INCLUDE_DIR (cache; set them to choose other copies).
#
# Where the libraries come from: the toolkit (or the system's library folders) first. What the
# toolkit lacks is looked for in pip's nvidia-* wheels (nvidia-cuda-runtime, nvidia-cublas,
# nvidia-cusolver, nvidia-cudnn-cu13; CUDA 12's nvidia-*-cu12 layout too), in the site-packages of
# EMBER_CUDA_PYTHON (python3 on PATH by default) or in the nvidia/ folders named by
# EMBER_CUDA_WHEEL_DIRS. A CUDA image with PyTorch has those wheels, and may have an nvcc whose
# toolkit holds no cuBLAS or cuDNN. Each library's headers come from the same place as the
# library. Wheels hold only versioned names (libcublas.so.13), so the files are linked by full
# path, and their folders become run paths: a pip environment is never in the loader's path.
#
# The runtime is linked statically, so the backend asks the driver (libcuda.so, which the runtime
# loads at run time) whether a GPU is there; its headers must stay beside nvcc, which cannot
# compile anything without them. CUB is header-only and comes with nvcc.
set(EMBER_HAVE_CUDA OFF)
set(EMBER_CUDA_MISSING "")
# A library in pip's wheel layout: site-packages/nvidia/<package>/lib/<file>.
set(_ember_wheel_regex "/nvidia/[^/]+/lib/[^/]+$")

# The folders nvidia/ of pip's nvidia-* wheels that EMBER_CUDA_PYTHON sees (a namespace package
# spread over site-packages folders), or those of EMBER_CUDA_WHEEL_DIRS.
function(_ember_cuda_wheel_dirs out)
  if(EMBER_CUDA_WHEEL_DIRS)
    set(${out} ${EMBER_CUDA_WHEEL_DIRS} PARENT_SCOPE)
    return()
  endif()
  set(dirs "")
  if(EMBER_CUDA_PYTHON)
    execute_process(
      COMMAND "${EMBER_CUDA_PYTHON}" -c
              "import importlib.util as u; s = u.find_spec('nvidia'); print(';'.join(s.submodule_search_locations or []) if s else '')"
      OUTPUT_VARIABLE dirs RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 30)
    if(NOT rc EQUAL 0)
      set(dirs "")
    endif()
  endif()
  set(${out} ${dirs} PARENT_SCOPE)
endfunction()

# _ember_cuda_pair(LIB_VAR INCLUDE_VAR HEADER FILE SUBDIRS...): when the toolkit gave the library
# or its header but not both, looks for FILE and HEADER together in the wheels' SUBDIRS (lib/ and
# include/ below each), so that a library is never compiled against another copy's headers.
function(_ember_cuda_pair lib_var include_var header file)
  if(${lib_var})
    if(NOT include_var)
      return()
    elseif(${include_var})
      return()
    endif()
  endif()
  foreach(wheel IN LISTS _ember_wheel_dirs)
    foreach(sub IN LISTS ARGN)
      set(header_there TRUE)
      if(include_var AND NOT EXISTS "${wheel}/${sub}/include/${header}")
        set(header_there FALSE)
      endif()
      if(EXISTS "${wheel}/${sub}/lib/${file}" AND header_there)
        set(${lib_var} "${wheel}/${sub}/lib/${file}" CACHE FILEPATH "" FORCE)
        if(include_var)
          set(${include_var} "${wheel}/${sub}/include" CACHE PATH "" FORCE)
        endif()
        return()
      endif()
    endforeach()
  endforeach()
endfunction()

# _ember_cuda_pair_glob(LIB_VAR INCLUDE_VAR HEADER PATTERN SUBDIRS...): _ember_cuda_pair for a
# library whose major version is not CUDA's (cuSOLVER 12 comes with CUDA 13, 11 with CUDA 12):
# the first file matching PATTERN (its shortest name, the soname) beside HEADER.
function(_ember_cuda_pair_glob lib_var include_var header pattern)
  if(${lib_var} AND ${include_var})
    return()
  endif()
  foreach(wheel IN LISTS _ember_wheel_dirs)
    foreach(sub IN LISTS ARGN)
      if(NOT EXISTS "${wheel}/${sub}/include/${header}")
        continue()
      endif()
      file(GLOB found "${wheel}/${sub}/lib/${pattern}")
      if(found)
        list(SORT found)
        list(GET found 0 first)
        set(${lib_var} "${first}" CACHE FILEPATH "" FORCE)
        set(${include_var} "${wheel}/${sub}/include" CACHE PATH "" FORCE)
        return()
      endif()
    endforeach()
  endforeach()
endfunction()

if(NOT EMBER_WITH_CUDA STREQUAL "OFF")
  set(EMBER_CUDA_WHEEL_DIRS "" CACHE STRING
      "nvidia/ folders of pip's wheels to take CUDA libraries from when the toolkit lacks them (empty: ask EMBER_CUDA_PYTHON)")
  find_program(EMBER_CUDA_PYTHON NAMES python3 python
               DOC "Python whose pip nvidia-* wheels supply the CUDA libraries that the toolkit lacks")
  find_package(CUDAToolkit QUIET)
  # FindCUDAToolkit reports no toolkit when libcudart.so is missing, though nvcc and its headers
  # are there and the runtime can come from a wheel: nvcc and cuda_runtime.h are what is needed.
  if(CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_INCLUDE_DIR}/cuda_runtime.h")
    set(_ember_cuda_major ${CUDAToolkit_VERSION_MAJOR})
    get_filename_component(_ember_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
    set(_ember_toolkit_libs ${CUDAToolkit_LIBRARY_DIR} ${_ember_cuda_root}/lib64 ${_ember_cuda_root}/lib
                            ${_ember_cuda_root}/targets/${CMAKE_SYSTEM_PROCESSOR}-linux/lib)
    find_library(EMBER_CUDART_LIBRARY NAMES cudart_static HINTS ${_ember_toolkit_libs})
    find_library(EMBER_CUBLAS_LIBRARY NAMES cublas HINTS ${_ember_toolkit_libs})
    find_library(EMBER_CUBLASLT_LIBRARY NAMES cublasLt HINTS ${_ember_toolkit_libs})
    find_path(EMBER_CUBLAS_INCLUDE_DIR cublas_v2.h HINTS ${CUDAToolkit_INCLUDE_DIR})
    find_library(EMBER_CUSOLVER_LIBRARY NAMES cusolver HINTS ${_ember_toolkit_libs})
    find_path(EMBER_CUSOLVER_INCLUDE_DIR cusolverDn.h HINTS ${CUDAToolkit_INCLUDE_DIR})
    find_library(EMBER_CUDNN_LIBRARY NAMES cudnn HINTS ${_ember_toolkit_libs})
    find_path(EMBER_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIR})

    if(NOT (EMBER_CUDART_LIBRARY AND EMBER_CUBLAS_LIBRARY AND EMBER_CUBLASLT_LIBRARY AND EMBER_CUBLAS_INCLUDE_DIR
            AND EMBER_CUSOLVER_LIBRARY AND EMBER_CUSOLVER_INCLUDE_DIR AND EMBER_CUDNN_LIBRARY
            AND EMBER_CUDNN_INCLUDE_DIR))
      _ember_cuda_wheel_dirs(_ember_wheel_dirs)
      # CUDA 13's wheels share nvidia/cu13/{include,lib}; CUDA 12's have a folder per library.
      _ember_cuda_pair(EMBER_CUDART_LIBRARY "" "" libcudart_static.a cu${_ember_cuda_major} cuda_runtime)
      if(NOT EMBER_CUBLASLT_LIBRARY OR NOT EMBER_CUBLAS_LIBRARY)
        set(EMBER_CUBLAS_LIBRARY NOTFOUND CACHE FILEPATH "" FORCE)  # cuBLAS and cuBLASLt from one place
      endif()
      _ember_cuda_pair(EMBER_CUBLAS_LIBRARY EMBER_CUBLAS_INCLUDE_DIR cublas_v2.h libcublas.so.${_ember_cuda_major}
                       cu${_ember_cuda_major} cublas)
      if(EMBER_CUBLAS_LIBRARY MATCHES "${_ember_wheel_regex}")
        get_filename_component(_ember_dir "${EMBER_CUBLAS_LIBRARY}" DIRECTORY)
        set(EMBER_CUBLASLT_LIBRARY "${_ember_dir}/libcublasLt.so.${_ember_cuda_major}" CACHE FILEPATH "" FORCE)
      endif()
      # cuSOLVER (with the cuSPARSE and nvJitLink it loads from its own folder) and its header
      # from one place.
      if(NOT EMBER_CUSOLVER_LIBRARY OR NOT EMBER_CUSOLVER_INCLUDE_DIR)
        set(EMBER_CUSOLVER_LIBRARY NOTFOUND CACHE FILEPATH "" FORCE)
        set(EMBER_CUSOLVER_INCLUDE_DIR NOTFOUND CACHE PATH "" FORCE)
        _ember_cuda_pair_glob(EMBER_CUSOLVER_LIBRARY EMBER_CUSOLVER_INCLUDE_DIR cusolverDn.h "libcusolver.so.[0-9]*"
                              cu${_ember_cuda_major} cusolver)
      endif()
      # cuDNN's wheel has no unversioned libcudnn.so: the major version comes from its header.
      foreach(_ember_wheel IN LISTS _ember_wheel_dirs)
        set(_ember_cudnn_major "")
        if(EXISTS "${_ember_wheel}/cudnn/include/cudnn_version.h")
          file(STRINGS "${_ember_wheel}/cudnn/include/cudnn_version.h" _ember_cudnn_major REGEX "^#define CUDNN_MAJOR ")
        endif()
        if(_ember_cudnn_major MATCHES "CUDNN_MAJOR ([0-9]+)")
          _ember_cuda_pair(EMBER_CUDNN_LIBRARY EMBER_CUDNN_INCLUDE_DIR cudnn.h libcudnn.so.${CMAKE_MATCH_1} cudnn)
          break()
        endif()
      endforeach()
    endif()

    set(_ember_missing "")
    foreach(_ember_what CUDART_LIBRARY CUBLAS_LIBRARY CUBLASLT_LIBRARY CUBLAS_INCLUDE_DIR CUSOLVER_LIBRARY
                        CUSOLVER_INCLUDE_DIR CUDNN_LIBRARY CUDNN_INCLUDE_DIR)
      if(NOT EMBER_${_ember_what} OR NOT EXISTS "${EMBER_${_ember_what}}")
        list(APPEND _ember_missing ${_ember_what})
      endif()
    endforeach()
    if(_ember_missing)
      list(JOIN _ember_missing ", " _ember_missing)
      set(EMBER_CUDA_MISSING
          "not all of the CUDA runtime (static), cuBLAS, cuBLASLt, cuSOLVER and cuDNN were found (missing: ${_ember_missing}), "
          "neither beside nvcc (${_ember_cuda_root}) nor in pip's nvidia-* wheels of ${EMBER_CUDA_PYTHON} "
          "(${_ember_wheel_dirs}); set EMBER_CUDA_PYTHON or EMBER_CUDA_WHEEL_DIRS to the wheels' Python or nvidia/ folders")
    endif()
  elseif(CUDAToolkit_NVCC_EXECUTABLE)
    set(EMBER_CUDA_MISSING "the CUDA runtime's headers (cuda_runtime.h) are not beside ${CUDAToolkit_NVCC_EXECUTABLE}")
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
    # nvcc links every program with the static runtime from its own folder, CMake's test programs
    # too; a runtime from a wheel is found there through the linker's LIBRARY_PATH, for the
    # configure only. CMake then counts that folder among the compiler's own (implicit) link
    # folders, and would leave it out of link lines and run paths: it is taken back out.
    set(_ember_library_path "$ENV{LIBRARY_PATH}")
    set(_ember_cudart_dir "")
    if(EMBER_CUDART_LIBRARY MATCHES "${_ember_wheel_regex}")
      get_filename_component(_ember_cudart_dir "${EMBER_CUDART_LIBRARY}" DIRECTORY)
      set(ENV{LIBRARY_PATH} "${_ember_cudart_dir}:${_ember_library_path}")
    endif()
    enable_language(CUDA)
    set(ENV{LIBRARY_PATH} "${_ember_library_path}")
    if(_ember_cudart_dir)
      list(REMOVE_ITEM CMAKE_CUDA_IMPLICIT_LINK_DIRECTORIES "${_ember_cudart_dir}")
    endif()
    # ember's CUDA sources are C++20 like the rest. CMake 3.25 predates nvcc 13 and does not know
    # its C++20 flag, so it is told here (nvcc has accepted -std=c++20 since CUDA 12.0).
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)

    # The libraries as one target. Imported, so its headers are system headers (no warnings from
    # cuDNN's under -Werror) and it is never part of an export set.
    find_package(Threads REQUIRED)
    add_library(ember_cuda_libraries INTERFACE IMPORTED GLOBAL)
    set(_ember_includes ${CUDAToolkit_INCLUDE_DIR} ${EMBER_CUBLAS_INCLUDE_DIR} ${EMBER_CUSOLVER_INCLUDE_DIR}
                        ${EMBER_CUDNN_INCLUDE_DIR})
    list(REMOVE_DUPLICATES _ember_includes)
    # The static runtime needs the real-time, thread and loader libraries (as CUDA::cudart_static).
    set(_ember_links ${EMBER_CUDART_LIBRARY} ${EMBER_CUBLAS_LIBRARY} ${EMBER_CUBLASLT_LIBRARY} ${EMBER_CUSOLVER_LIBRARY}
                     ${EMBER_CUDNN_LIBRARY} Threads::Threads ${CMAKE_DL_LIBS} rt)
    set_target_properties(ember_cuda_libraries PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_ember_includes}"
                                                          INTERFACE_LINK_LIBRARIES "${_ember_links}")
    set(_ember_from_wheels "")
    foreach(_ember_lib ${EMBER_CUDART_LIBRARY} ${EMBER_CUBLAS_LIBRARY} ${EMBER_CUBLASLT_LIBRARY} ${EMBER_CUSOLVER_LIBRARY}
                       ${EMBER_CUDNN_LIBRARY})
      if(_ember_lib MATCHES "${_ember_wheel_regex}")
        get_filename_component(_ember_dir "${_ember_lib}" DIRECTORY)
        list(APPEND _ember_from_wheels "${_ember_dir}")
      endif()
    endforeach()
    if(_ember_from_wheels)
      list(REMOVE_DUPLICATES _ember_from_wheels)
      # Wheels' folders are in no loader path: each program and library that links them finds them
      # through its run path, installed copies too. CMake's own link of the CUDA runtime
      # (-lcudart_static, for targets with .cu files) searches the link directories.
      foreach(_ember_dir IN LISTS _ember_from_wheels)
        set_property(TARGET ember_cuda_libraries APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath,${_ember_dir}")
      endforeach()
      set_property(TARGET ember_cuda_libraries PROPERTY INTERFACE_LINK_DIRECTORIES "${_ember_from_wheels}")
    endif()
    # FindCUDAToolkit's targets for what came from wheels, until every target links
    # ember_cuda_libraries instead (cmake/EmberDependencies.cmake links these by name).
    foreach(_ember_name cudart_static cublas cublasLt)
      if(NOT TARGET CUDA::${_ember_name})
        add_library(CUDA::${_ember_name} INTERFACE IMPORTED)
        target_link_libraries(CUDA::${_ember_name} INTERFACE ember_cuda_libraries)
      endif()
    endforeach()

    message(STATUS "ember: CUDA support ON (toolkit ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
    message(STATUS "ember: CUDA runtime ${EMBER_CUDART_LIBRARY}; cuBLAS ${EMBER_CUBLAS_LIBRARY}; "
                   "cuBLASLt ${EMBER_CUBLASLT_LIBRARY}; cuSOLVER ${EMBER_CUSOLVER_LIBRARY}; cuDNN ${EMBER_CUDNN_LIBRARY}")
    if(_ember_from_wheels)
      message(STATUS "ember: from pip's wheels, with run paths: ${_ember_from_wheels}")
    endif()
  elseif(EMBER_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EMBER_WITH_CUDA=ON but ${EMBER_CUDA_MISSING}. "
                        "Install the CUDA toolkit with cuDNN (or, beside nvcc, pip's nvidia-* wheels of the CUDA "
                        "runtime, cuBLAS, cuSOLVER and cuDNN) or configure with -DEMBER_WITH_CUDA=OFF.")
  else()
    message(STATUS "ember: CUDA support OFF (${EMBER_CUDA_MISSING})")
  endif()
else()
  message(STATUS "ember: CUDA support OFF (EMBER_WITH_CUDA=OFF)")
endif()
