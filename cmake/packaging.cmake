# SPDX-License-Identifier: Apache-2.0
# CPack: Debian packages of this build (`make deb`, or `cpack -G DEB` in a build
# folder; `cmake --build <build> --target package` makes the default
# generator's). One package per install component (cmake/install.cmake):
#   ito       libito.so and libito.a, libito-preload.so, the headers, the CMake
#             package (find_package(ito)), ito.pc, ito::split_stack's libraries
#             where built, share/ito/ito-gdb.py and the docs;
#   ito-dist  the distributed mode (libito-dist.a, ito/dist.h(pp), ito-dsm.ld,
#             ito-dist.pc, itoDistTargets.cmake), only where ito::dist is built:
#             it depends on ito and on the Debian package of the MPI it was
#             compiled against, which the ito package does not need.
# Files land under /usr (lib, include, share), with the layout of the install
# rules; ito.pc and the CMake package are relative to where they are, so an
# extracted package (dpkg-deb -x) works from any folder (tests/install:
# install_deb_*). Included from the top-level CMakeLists.txt, not when ito is
# someone else's subproject (their packaging is theirs).

set(CPACK_PACKAGE_NAME ito)
set(CPACK_PACKAGE_VENDOR "the ito authors")
set(ITO_PACKAGE_MAINTAINER "ito maintainers <maintainers@users.noreply.a-seed-2d79f58d.example>"
    CACHE STRING "Maintainer field of the Debian packages (cpack -G DEB)")
set(CPACK_PACKAGE_CONTACT "${ITO_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: CPackDeb would put it before each
# package's own description (whose first line is its summary, as in Debian's
# control files; the rest is indented and an empty line becomes " .").
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_RESOURCE_FILE_README ${PROJECT_SOURCE_DIR}/README.md)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build/" "/\\\\.ci/")
if(NOT DEFINED CPACK_GENERATOR)
  find_program(ITO_DPKG_DEB dpkg-deb)
  if(ITO_DPKG_DEB)
    set(CPACK_GENERATOR DEB)
  else()
    set(CPACK_GENERATOR TGZ)
  endif()
endif()

# One package per component; ito-dist only where the distributed mode is built.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ito)
if(ITO_HAVE_DIST)
  list(APPEND CPACK_COMPONENTS_ALL dist)
endif()

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION})
# The target's Debian architecture, not the build machine's (dpkg's default):
# the aarch64 preset cross-builds on x86-64.
if(ITO_ARCH STREQUAL "x86_64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
elseif(ITO_ARCH STREQUAL "aarch64")
  set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
endif()
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_ITO_PACKAGE_NAME ito)
set(CPACK_DEBIAN_ITO_DESCRIPTION "very many, very cheap user-level threads (M:N, work stealing)
ito is a C++20 runtime, with a C API, for user-level threads (ULTs)
scheduled M:N on worker OS threads by work stealing.

This package has the shared and static libraries, the C and C++ headers,
the CMake package (find_package(ito): ito::ito, ito::ito_static,
ito::split_stack) and ito.pc for pkg-config, libito-preload.so (runs an
unmodified pthread program's threads as ULTs: LD_PRELOAD), the gdb helper
/usr/share/ito/ito-gdb.py and the documentation.")
# The C library, libgcc and libstdc++ of libito.so and libito-preload.so:
# from dpkg-shlibdeps where it is there (and the build is native: it reads the
# host's package database), named otherwise.
find_program(ITO_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(ITO_DPKG_SHLIBDEPS AND NOT CMAKE_CROSSCOMPILING)
  set(CPACK_DEBIAN_ITO_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_ITO_PACKAGE_DEPENDS "libc6, libgcc-s1, libstdc++6")
endif()
# A shlibs file for libito.so.<major> (CPackDeb has no per-package switch; a
# package without a shared library gets none). Policy "=": before 1.0 a minor
# version may change the ABI (CHANGELOG.md).
if(TARGET ito_shared)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
endif()
set(CPACK_DEBIAN_ITO_PACKAGE_SUGGESTS "gdb, pkg-config")

if(ITO_HAVE_DIST)
  set(CPACK_DEBIAN_DIST_PACKAGE_NAME ito-dist)
  set(CPACK_DEBIAN_DIST_DESCRIPTION "distributed mode of ito (one program on many MPI processes)
ito::dist runs one fork/join program on many MPI processes: its user-level
threads migrate between them by work stealing and join across them, and
shared data lives in a page-based distributed shared memory.

This package has libito-dist.a, ito/dist.h and ito/dist.hpp, the linker
script every ito::dist program is linked with, the CMake targets (ito::dist,
find_package(ito COMPONENTS dist)) and ito-dist.pc.")
  # The Debian packages that hold the MPI library and headers ito::dist was
  # compiled against (libmpich-dev with Debian's MPICH): ito::dist links that
  # library by path (itoConfig.cmake's ito::mpi_c, ito-dist.pc).
  set(ito_dist_depends "ito (= ${PROJECT_VERSION})")
  find_program(ITO_DPKG_QUERY dpkg-query)
  set(ito_mpi_packages "")
  if(ITO_DPKG_QUERY)
    foreach(path ${ITO_DIST_MPI_C_LIBRARIES} ${ITO_DIST_MPI_C_INCLUDE_DIRS})
      execute_process(COMMAND ${ITO_DPKG_QUERY} -S ${path} RESULT_VARIABLE rc
                      OUTPUT_VARIABLE owner ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      # "libmpich-dev:amd64: /usr/lib/x86_64-linux-gnu/libmpich.so"
      if(rc EQUAL 0 AND owner MATCHES "^([a-z0-9][a-z0-9.+-]+)(:[a-z0-9]+)?: ")
        list(APPEND ito_mpi_packages ${CMAKE_MATCH_1})
      endif()
    endforeach()
    list(REMOVE_DUPLICATES ito_mpi_packages)
  endif()
  if(ito_mpi_packages)
    list(JOIN ito_mpi_packages ", " ito_mpi_depends)
    string(APPEND ito_dist_depends ", ${ito_mpi_depends}")
  else()
    message(STATUS "ito: packaging: no Debian package holds the MPI of ito::dist "
                   "(${ITO_DIST_MPI_C_LIBRARIES}): ito-dist will not depend on it")
  endif()
  set(CPACK_DEBIAN_DIST_PACKAGE_DEPENDS "${ito_dist_depends}")
  set(CPACK_DEBIAN_DIST_PACKAGE_SECTION libdevel)
endif()

# Every package gets /usr/share/doc/<package>/copyright (Debian policy 12.5),
# written into the staged tree before it is packed: not an install rule, so a
# plain `cmake --install` does not get a Debian file.
set(CPACK_ITO_SOURCE_DIR ${PROJECT_SOURCE_DIR})
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/packaging_copyright.cmake)

include(CPack)
cpack_add_component(ito DISPLAY_NAME "ito" REQUIRED)
if(ITO_HAVE_DIST)
  cpack_add_component(dist DISPLAY_NAME "ito-dist" DEPENDS ito)
endif()
