# Build-time check of the CUDA kernels' resources: for every kernel in a target's binary and every
# architecture it carries machine code for, registers x threads per block and static shared memory
# must fit one block (64 K registers, 48 KiB), the threads being the kernel's __launch_bounds__ or,
# without one, the hardware's largest block of 1024. tools/check-cuda-resources.py reads the
# numbers from the cubins in the binary and says why it checks this way.
#
#   ember_check_cuda_resources(<target>)
#     Adds a POST_BUILD step to <target> (a shared or static library, module or executable):
#     the build fails, naming each kernel with its registers, block size and the limit, when one
#     does not fit, or when an architecture of the target's CUDA_ARCHITECTURES has no machine
#     code in it.
#   ember_add_cuda_resources_test()
#     Registers the ctest `cuda_resource_check`: nvcc compiles small kernels, one of them over the
#     limit, and the check must pass and fail on them as it should, with the register counts that
#     `ptxas -v` prints.
include_guard(GLOBAL)

set(EMBER_CUDA_RESOURCES_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/../tools/check-cuda-resources.py")
cmake_path(NORMAL_PATH EMBER_CUDA_RESOURCES_SCRIPT)

function(ember_check_cuda_resources target)
  if(NOT TARGET ${target})
    message(FATAL_ERROR "ember_check_cuda_resources: no target named ${target}")
  endif()
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY|STATIC_LIBRARY|EXECUTABLE)$")
    message(FATAL_ERROR "ember_check_cuda_resources: ${target} is a ${type}; give a target that produces a "
                        "library or an executable (the check reads the device code in that file)")
  endif()
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_Interpreter_FOUND)
    message(FATAL_ERROR "ember_check_cuda_resources: the check of the CUDA kernels' resources needs python3")
  endif()
  # The target's own architectures (CUDA_ARCHITECTURES starts as CMAKE_CUDA_ARCHITECTURES), passed
  # as one argument: the script reads "80-real;90".
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND Python3::Interpreter ${EMBER_CUDA_RESOURCES_SCRIPT} "--archs=$<TARGET_PROPERTY:${target},CUDA_ARCHITECTURES>"
            $<TARGET_FILE:${target}>
    COMMENT "Checking the registers and shared memory of the CUDA kernels in ${target}"
    VERBATIM)
endfunction()

function(ember_add_cuda_resources_test)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "ember_add_cuda_resources_test: CUDA is not enabled (enable_language(CUDA) first)")
  endif()
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME cuda_resource_check
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../tests/cuda/check_cuda_resources_test.py
                   --nvcc ${CMAKE_CUDA_COMPILER} --script ${EMBER_CUDA_RESOURCES_SCRIPT})
  # nvcc compiles a few small files (about 10 s on two cores).
  set_tests_properties(cuda_resource_check PROPERTIES LABELS cpu TIMEOUT 300)
endfunction()
