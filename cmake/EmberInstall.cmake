# `cmake --install build --prefix P` puts under P:
#   include/ember/*.h (with the generated version.h), lib/libember.so* (and lib/libember_cuda.so, the
#   CUDA backend, when built), bin/ember,
#   lib/cmake/ember/{emberConfig,emberConfigVersion,emberTargets}.cmake exporting ember::ember.
include(CMakePackageConfigHelpers)

# The installed library keeps the RPATH to the OpenBLAS it was linked with (Debian's openblas-openmp
# folder), so it does not fall back to whichever OpenBLAS variant the alternatives system prefers.
set_target_properties(ember PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS ember EXPORT emberTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The CUDA backend goes beside libember.so, where libember looks for it at run time. It is not
# exported (nothing links it); it finds libember.so beside itself, and cuBLAS and cuDNN where it
# was linked with them.
if(EMBER_HAVE_CUDA)
  set_target_properties(ember_cuda PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH TRUE)
  install(TARGETS ember_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(DIRECTORY include/ember DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/include/ember/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember)

# The tool is installed but not exported: programs link the library, not the tool. Its RPATH is
# relative, so an installed tree works wherever it lies, with no LD_LIBRARY_PATH or ldconfig.
file(RELATIVE_PATH EMBER_BIN_TO_LIB ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_BINDIR}
     ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR})
set_target_properties(ember_cli PROPERTIES INSTALL_RPATH "$ORIGIN/${EMBER_BIN_TO_LIB}")
install(TARGETS ember_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
install(EXPORT emberTargets NAMESPACE ember:: DESTINATION ${EMBER_CMAKE_DIR})
configure_package_config_file(cmake/emberConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/emberConfig.cmake
                              INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
# Before 1.0 a minor release may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/emberConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/emberConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/emberConfigVersion.cmake
        DESTINATION ${EMBER_CMAKE_DIR})
