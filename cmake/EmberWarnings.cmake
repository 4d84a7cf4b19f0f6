function(ember_set_warnings target)
  set(host_warnings -Wall -Wextra -Wpedantic -Wshadow=local -Wno-unknown-pragmas)
  # GCC 12 reports false -Wrestrict positives inside libstdc++'s string concatenation (GCC bug 105329).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    list(APPEND host_warnings -Wno-restrict)
  endif()
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${host_warnings}>")
  if(EMBER_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
  # CUDA sources: nvcc's own warnings, and the host compiler's on the host half of each file
  # (-Wpedantic is left out: nvcc's generated host code is not pedantic-clean).
  if(EMBER_HAVE_CUDA)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
    if(EMBER_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings;-Xcompiler=-Werror>")
    endif()
  endif()
endfunction()
