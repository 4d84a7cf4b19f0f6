# Installs a built ember into a fresh prefix, builds tests/install (the README walkthrough as a
# separate project using find_package(ember)) against that prefix, runs it and the installed
# `ember` tool, and checks what they print. Run by ctest as
#   cmake -DEMBER_BUILD_DIR=... -DEMBER_SOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DMAKE_PROGRAM=... -DCXX_COMPILER=... -DBUILD_TYPE=... -DEXPECTED_VERSION=... -P run_install_test.cmake
cmake_minimum_required(VERSION 3.25)

foreach(var EMBER_BUILD_DIR EMBER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER BUILD_TYPE EXPECTED_VERSION)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_install_test.cmake needs -D${var}=...")
  endif()
endforeach()

set(prefix "${WORK_DIR}/prefix")
set(consumer_build "${WORK_DIR}/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")

# Runs a command; on failure stops the test with its output.
function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed (${rc}):\n${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# The walkthrough picks its device from the availability checks; an EMBER_DEVICE in the caller's
# environment would make best_device() disagree with that chain on purpose.
unset(ENV{EMBER_DEVICE})

# ---- install ----
run_step("cmake --install" "${CMAKE_COMMAND}" --install "${EMBER_BUILD_DIR}" --prefix "${prefix}" --config "${BUILD_TYPE}")
foreach(installed include/ember/ember.h include/ember/version.h bin/ember)
  if(NOT EXISTS "${prefix}/${installed}")
    message(FATAL_ERROR "cmake --install did not install ${installed}")
  endif()
endforeach()
file(GLOB_RECURSE config_files "${prefix}/*/emberConfig.cmake" "${prefix}/*/emberConfigVersion.cmake"
     "${prefix}/*/emberTargets.cmake" "${prefix}/*/libember.so")
list(LENGTH config_files found_count)
if(NOT found_count EQUAL 4)
  message(FATAL_ERROR "expected libember.so, emberConfig.cmake, emberConfigVersion.cmake and emberTargets.cmake "
                      "under ${prefix}, found: ${config_files}")
endif()

# ---- the installed tool: must find its library through its RPATH, without LD_LIBRARY_PATH ----
run_step("ember --version" "${prefix}/bin/ember" --version)
string(STRIP "${step_output}" version_line)
if(NOT version_line STREQUAL "ember ${EXPECTED_VERSION}")
  message(FATAL_ERROR "installed `ember --version` printed '${version_line}', expected 'ember ${EXPECTED_VERSION}'")
endif()
run_step("ember devices" "${prefix}/bin/ember" devices)
if(NOT step_output MATCHES "CUDA available: (True|False)" OR NOT step_output MATCHES "Chosen device:  ")
  message(FATAL_ERROR "installed `ember devices` printed an unexpected report:\n${step_output}")
endif()

# ---- a separate project against the installed package ----
set(configure_args -S "${EMBER_SOURCE_DIR}/tests/install" -B "${consumer_build}" -G "${GENERATOR}"
                   "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
                   "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(DEFINED MAKE_PROGRAM AND NOT MAKE_PROGRAM STREQUAL "")
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run_step("configuring the consumer" "${CMAKE_COMMAND}" ${configure_args})
file(REAL_PATH "${prefix}" real_prefix)
if(NOT step_output MATCHES "ember ${EXPECTED_VERSION} found in ([^\n]*)")
  message(FATAL_ERROR "the consumer did not report finding ember ${EXPECTED_VERSION}:\n${step_output}")
endif()
file(REAL_PATH "${CMAKE_MATCH_1}" found_dir)
string(FIND "${found_dir}" "${real_prefix}/" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "the consumer found ember in ${found_dir}, not in the test prefix ${real_prefix}")
endif()
run_step("building the consumer" "${CMAKE_COMMAND}" --build "${consumer_build}" --config "${BUILD_TYPE}")

# ---- run the walkthrough and check its shape ----
# Its values depend on the machine (a GPU machine prints true and cuda:0; y is random), so the
# checks are on structure and on the lines that are the same everywhere.
run_step("running the walkthrough" "${consumer_build}/devices")
set(output "${step_output}")

# Split by hand: a CMake list would treat the brackets of printed tensors as grouping.
set(line_count 0)
set(rest "${output}")
while(NOT rest STREQUAL "")
  string(FIND "${rest}" "\n" newline)
  if(newline EQUAL -1)
    message(FATAL_ERROR "the walkthrough's output does not end with a newline:\n${output}")
  endif()
  math(EXPR line_count "${line_count} + 1")
  string(SUBSTRING "${rest}" 0 ${newline} line_${line_count})
  math(EXPR next "${newline} + 1")
  string(SUBSTRING "${rest}" ${next} -1 rest)
endwhile()

function(walkthrough_mismatch what)
  message(FATAL_ERROR "walkthrough output: ${what}\n--- output\n${output}")
endfunction()

# Two booleans, x, "Device: ...", y (2x2: two lines), x on the cpu, x on my_device, best_device().
if(NOT line_count EQUAL 9)
  walkthrough_mismatch("expected 9 lines, got ${line_count}")
endif()
foreach(i 1 2)
  if(NOT line_${i} MATCHES "^(true|false)$")
    walkthrough_mismatch("line ${i} should be true or false, is '${line_${i}}'")
  endif()
endforeach()
set(x_on_cpu "tensor([1., 2., 3.]) cpu")
if(NOT line_3 STREQUAL x_on_cpu)
  walkthrough_mismatch("line 3 should be '${x_on_cpu}', is '${line_3}'")
endif()
if(NOT line_4 MATCHES "^Device: (cpu|cuda|mps)$")
  walkthrough_mismatch("line 4 should be 'Device: cpu|cuda|mps', is '${line_4}'")
endif()
set(my_device "${CMAKE_MATCH_1}")
if(line_1 STREQUAL "true" AND NOT my_device STREQUAL "cuda")
  walkthrough_mismatch("CUDA is available but the chain chose ${my_device}")
endif()
if(line_1 STREQUAL "false" AND line_2 STREQUAL "false" AND NOT my_device STREQUAL "cpu")
  walkthrough_mismatch("no GPU is available but the chain chose ${my_device}")
endif()
if(NOT line_5 MATCHES "^tensor\\(\\[\\[[0-9.e+-]+, [0-9.e+-]+\\],$")
  walkthrough_mismatch("line 5 should open a 2x2 tensor of values in [0, 1), is '${line_5}'")
endif()
if(NOT line_6 MATCHES "^        \\[[0-9.e+-]+, [0-9.e+-]+\\]\\]")
  walkthrough_mismatch("line 6 should close the 2x2 tensor, is '${line_6}'")
endif()
if(NOT line_7 STREQUAL x_on_cpu)
  walkthrough_mismatch("line 7 should be '${x_on_cpu}', is '${line_7}'")
endif()
if(my_device STREQUAL "cpu")
  set(x_on_my_device "${x_on_cpu}")
else()
  set(x_on_my_device "tensor([1., 2., 3.], device='${my_device}:0') ${my_device}:0")
endif()
if(NOT line_8 STREQUAL x_on_my_device)
  walkthrough_mismatch("line 8 should be '${x_on_my_device}', is '${line_8}'")
endif()
if(NOT line_9 MATCHES "^${my_device}(:0)?$")
  walkthrough_mismatch("line 9 (best_device) should be the chain's choice ${my_device}, is '${line_9}'")
endif()

message(STATUS "install test passed: ${line_count} lines, device ${my_device}")
