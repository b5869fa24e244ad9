# SPDX-License-Identifier: Apache-2.0
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ito_installed_libraries ito_static)
if(TARGET ito_shared)  # not with ITO_SHARED=OFF
  list(APPEND ito_installed_libraries ito_shared)
endif()
install(TARGETS ${ito_installed_libraries} EXPORT itoTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(ITO_HAVE_SPLIT_STACK)
  # ito::split_stack: the lazy/fair_use build interface (flags, linker, and
  # ito's split-stack runtime linked whole), as in the build tree.
  set_target_properties(ito_split_stack PROPERTIES EXPORT_NAME split_stack)
  set_target_properties(ito_split_runtime PROPERTIES EXPORT_NAME split_runtime)
  install(TARGETS ito_split_runtime ito_split_static ito_split_stack EXPORT itoTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
# Everything is in the install component `ito` (CMAKE_INSTALL_DEFAULT_COMPONENT_NAME,
# set in the top-level CMakeLists.txt) except the distributed mode, component
# `dist`: its library, headers, linker script, ito-dist.pc and an export set of
# its own (itoDistTargets.cmake, which itoConfig.cmake loads when it is there),
# so that the ito package works without the ito-dist one and its MPI
# (cmake/packaging.cmake). `cmake --install` installs both.
if(ITO_HAVE_DIST)
  # ito::dist: the distributed mode; find_package(ito) gives it MPI's C library.
  install(TARGETS ito_dist EXPORT itoDistTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          COMPONENT dist)
  install(FILES ${PROJECT_SOURCE_DIR}/include/ito/dist.h ${PROJECT_SOURCE_DIR}/include/ito/dist.hpp
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ito COMPONENT dist)
  install(EXPORT itoDistTargets NAMESPACE ito:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ito
          COMPONENT dist)
endif()
# ito/dist.h and ito/dist.hpp only with the library they declare (above).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ito DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        PATTERN "dist.h" EXCLUDE PATTERN "dist.hpp" EXCLUDE)
install(FILES ${PROJECT_BINARY_DIR}/include/ito/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ito)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/CHANGELOG.md
        ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The gdb helper: `source <prefix>/share/ito/ito-gdb.py`, then `info ito-ults`.
install(FILES ${PROJECT_SOURCE_DIR}/scripts/ito-gdb.py DESTINATION ${CMAKE_INSTALL_DATADIR}/ito)
install(EXPORT itoTargets NAMESPACE ito:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ito)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/itoConfig.cmake.in
  ${PROJECT_BINARY_DIR}/itoConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ito)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/itoConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/itoConfig.cmake ${PROJECT_BINARY_DIR}/itoConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ito)

# Relative to the .pc file, so `cmake --install --prefix X` needs no reconfigure.
file(RELATIVE_PATH ito_pc_prefix_from_pcdir "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(${PROJECT_SOURCE_DIR}/cmake/ito.pc.in ${PROJECT_BINARY_DIR}/ito.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ito.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
