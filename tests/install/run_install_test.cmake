# SPDX-License-Identifier: Apache-2.0
# One step of the install test (cmake -P). STEP=install: `cmake --install` this
# build into WORK_DIR/prefix and check what lands there. STEP=find_package /
# pkg_config: build the consumer project against that prefix and run it
# (find_package: with the languages LANGUAGES names enabled in its project()).
# STEP=subproject: build a project that takes ito with FetchContent.
# The Debian packages (cmake/packaging.cmake), with WORK_DIR a folder of their
# own: STEP=deb: cpack -G DEB, check each package's control data and files,
# and extract them (dpkg-deb -x) into WORK_DIR/root; then STEP=find_package and
# pkg_config with PREFIX=WORK_DIR/root/usr consume the extracted files, and
# STEP=deb_preload runs a pthread program under the extracted preload library.
# STEP=deb also configures tests/install/components against the ito package
# alone: find_package(ito) works without ito-dist, COMPONENTS dist does not.
cmake_minimum_required(VERSION 3.25)

if(PREFIX)
  set(prefix ${PREFIX})
else()
  set(prefix ${WORK_DIR}/prefix)
endif()
separate_arguments(san_flags UNIX_COMMAND "${SAN_FLAGS}")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
  set(last_error "${err}" PARENT_SCOPE)
endfunction()

# The installed library folder (lib, lib64 or lib/<multiarch>): where ito.pc is.
function(find_libdir out)
  file(GLOB_RECURSE pc LIST_DIRECTORIES false ${prefix}/*/pkgconfig/ito.pc)
  if(NOT pc)
    message(FATAL_ERROR "install test: no pkgconfig/ito.pc under ${prefix}")
  endif()
  list(GET pc 0 pc)
  get_filename_component(pcdir ${pc} DIRECTORY)
  get_filename_component(libdir ${pcdir} DIRECTORY)
  set(${out} ${libdir} PARENT_SCOPE)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${WORK_DIR})
  set(config_args)
  if(CONFIG)
    set(config_args --config ${CONFIG})
  endif()
  run("cmake --install" ${CMAKE_COMMAND} --install ${ITO_BINARY_DIR} --prefix ${prefix} ${config_args})
  find_libdir(libdir)
  foreach(f ${prefix}/include/ito/ito.h ${prefix}/include/ito/thread.hpp
            ${prefix}/include/ito/runtime.hpp ${libdir}/libito.a ${libdir}/libito.so
            ${libdir}/cmake/ito/itoConfig.cmake ${libdir}/cmake/ito/itoConfigVersion.cmake
            ${libdir}/cmake/ito/itoTargets.cmake ${libdir}/pkgconfig/ito.pc)
    if(NOT EXISTS ${f})
      message(FATAL_ERROR "install test: ${f} was not installed")
    endif()
  endforeach()
  # Nothing internal may leak into the public include folder.
  file(GLOB_RECURSE internal ${prefix}/include/sched/* ${prefix}/include/arch/*)
  if(internal)
    message(FATAL_ERROR "install test: internal headers installed: ${internal}")
  endif()

elseif(STEP STREQUAL "find_package")
  # LANGUAGES: what the consumer's project() enables (C,CXX; CXX; C).
  if(NOT LANGUAGES)
    set(LANGUAGES C,CXX)
  endif()
  string(REPLACE "," ";" languages "${LANGUAGES}")
  string(REPLACE "," "_" build_suffix "${LANGUAGES}")
  set(build ${WORK_DIR}/find_package_build_${build_suffix})
  file(REMOVE_RECURSE ${build})
  set(build_type ${CONFIG})
  if(NOT build_type)
    set(build_type Debug)
  endif()
  run("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${build} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=${build_type}
      -DCONSUMER_LANGUAGES=${LANGUAGES}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      "-DCMAKE_C_FLAGS=${SAN_FLAGS}" "-DCMAKE_CXX_FLAGS=${SAN_FLAGS}"
      "-DCMAKE_EXE_LINKER_FLAGS=${SAN_FLAGS}")
  run("build the consumer" ${CMAKE_COMMAND} --build ${build} --config ${build_type} --parallel 2)
  set(exes)
  if("CXX" IN_LIST languages)
    list(APPEND exes consumer_cxx_shared consumer_cxx_static)
    if(HAVE_SPLIT_STACK)
      list(APPEND exes consumer_split)  # ito::split_stack, lazy policy
    endif()
    if(HAVE_DIST AND RUN_DIST)
      list(APPEND exes consumer_dist)  # ito::dist, one rank without mpiexec
    endif()
  endif()
  if("C" IN_LIST languages)
    list(APPEND exes consumer_c_shared consumer_c_static)
    if(HAVE_DIST AND RUN_DIST)
      list(APPEND exes consumer_dist_c)  # ito::dist from C (ito/dist.h)
    endif()
  endif()
  foreach(exe ${exes})
    file(GLOB_RECURSE path LIST_DIRECTORIES false ${build}/${exe} ${build}/*/${exe})
    if(NOT path)
      message(FATAL_ERROR "install test: ${exe} was not built")
    endif()
    list(GET path 0 path)
    run("run ${exe}" ${path})
    if(NOT last_output MATCHES "consumer: ok")
      message(FATAL_ERROR "install test: ${exe} printed:\n${last_output}")
    endif()
    # ito::ito_static brings ito-text.ld: preemption is available (it is
    # refused, with its reason, in a program whose ito code is not apart).
    if(exe MATCHES "_static$" AND NOT SAN_FLAGS MATCHES "thread")
      run("run ${exe} with ITO_PREEMPT" ${CMAKE_COMMAND} -E env ITO_PREEMPT=10000 ${path})
      if(NOT last_output MATCHES "consumer: ok")
        message(FATAL_ERROR "install test: ${exe} with ITO_PREEMPT printed:\n${last_output}")
      endif()
    endif()
  endforeach()

elseif(STEP STREQUAL "pkg_config")
  find_libdir(libdir)
  set(build ${WORK_DIR}/pkg_config_build)
  file(REMOVE_RECURSE ${build})
  file(MAKE_DIRECTORY ${build})
  set(pkg ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${libdir}/pkgconfig PKG_CONFIG_LIBDIR=${libdir}/pkgconfig ${PKG_CONFIG})
  run("pkg-config --modversion ito" ${pkg} --modversion ito)
  run("pkg-config --cflags ito" ${pkg} --cflags ito)
  separate_arguments(cflags UNIX_COMMAND "${last_output}")
  run("pkg-config --libs ito" ${pkg} --libs ito)
  separate_arguments(libs UNIX_COMMAND "${last_output}")
  # ito.pc must describe this prefix, not the one the build was configured with.
  set(include_ok FALSE)
  set(lib_ok FALSE)
  file(REAL_PATH ${prefix}/include want_include)
  file(REAL_PATH ${libdir} want_lib)
  foreach(flag ${cflags} ${libs})
    if(flag MATCHES "^-([IL])(.+)$")
      set(kind ${CMAKE_MATCH_1})
      set(dir "${CMAKE_MATCH_2}")
      if(EXISTS "${dir}")
        file(REAL_PATH "${dir}" dir)
        if(kind STREQUAL "I" AND dir STREQUAL want_include)
          set(include_ok TRUE)
        elseif(kind STREQUAL "L" AND dir STREQUAL want_lib)
          set(lib_ok TRUE)
        endif()
      endif()
    endif()
  endforeach()
  if(NOT include_ok OR NOT lib_ok)
    message(FATAL_ERROR "install test: ito.pc does not point into the prefix it was installed "
      "to (${prefix}): --cflags gives '${cflags}', --libs gives '${libs}'. "
      "It is configured with CMAKE_INSTALL_PREFIX at configure time; `cmake --install "
      "--prefix` (as `make install PREFIX=...` does) leaves it pointing elsewhere.")
  endif()
  run("compile the C consumer with pkg-config flags" ${C_COMPILER} -std=c11 -Wall -Werror
      ${san_flags} ${cflags} ${CONSUMER_DIR}/consumer.c -o ${build}/consumer_c ${libs})
  run("compile the C++ consumer with pkg-config flags" ${CXX_COMPILER} -std=c++20 -Wall -Werror
      ${san_flags} ${cflags} ${CONSUMER_DIR}/consumer.cpp -o ${build}/consumer_cxx ${libs})
  # Below C++20 the C++ headers stop with a message naming C++20.
  execute_process(COMMAND ${CXX_COMPILER} -std=c++17 ${cflags} -c ${CONSUMER_DIR}/consumer.cpp
                  -o ${build}/cxx17.o RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0 OR NOT err MATCHES "ito's C\\+\\+ headers need C\\+\\+20")
    message(FATAL_ERROR "install test: a C++17 build of the consumer must stop naming C++20:\n${err}")
  endif()
  message(STATUS "C++17 build stops naming C++20: ok")
  # A C program linked with the static library: Libs.private brings libstdc++.
  run("pkg-config --static --libs ito" ${pkg} --static --libs ito)
  separate_arguments(static_libs UNIX_COMMAND "${last_output}")
  list(TRANSFORM static_libs REPLACE "^-lito$" "${libdir}/libito.a")
  run("link the C consumer statically with pkg-config --static flags" ${C_COMPILER} -std=c11
      -Wall -Werror ${san_flags} ${cflags} ${CONSUMER_DIR}/consumer.c -o ${build}/consumer_c_static
      ${static_libs})
  set(pkg_exes consumer_c consumer_c_static consumer_cxx)
  if(HAVE_DIST)  # ito-dist.pc: the distributed mode with its MPI
    run("pkg-config --cflags --libs ito-dist" ${pkg} --cflags --libs ito-dist)
    separate_arguments(dist_flags UNIX_COMMAND "${last_output}")
    run("compile the ito::dist consumer with pkg-config flags" ${CXX_COMPILER} -std=c++20 -Wall
        -Werror ${san_flags} ${CONSUMER_DIR}/consumer_dist.cpp -o ${build}/consumer_dist ${dist_flags})
    # From C: MPI's C library and the C++ runtime come from ito-dist.pc.
    run("compile the C ito::dist consumer with pkg-config flags" ${C_COMPILER} -std=c11 -Wall
        -Werror ${san_flags} ${CONSUMER_DIR}/consumer_dist.c -o ${build}/consumer_dist_c ${dist_flags})
    if(RUN_DIST)
      list(APPEND pkg_exes consumer_dist consumer_dist_c)
    endif()
  endif()
  foreach(exe ${pkg_exes})
    run("run ${exe}" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${build}/${exe})
    if(NOT last_output MATCHES "consumer: ok")
      message(FATAL_ERROR "install test: ${exe} printed:\n${last_output}")
    endif()
  endforeach()
  # --static brings ito-text.ld (Libs.private): preemption is available.
  if(NOT san_flags MATCHES "thread")
    run("run consumer_c_static with ITO_PREEMPT" ${CMAKE_COMMAND} -E env ITO_PREEMPT=10000
        ${build}/consumer_c_static)
    if(NOT last_output MATCHES "consumer: ok")
      message(FATAL_ERROR "install test: consumer_c_static with ITO_PREEMPT printed:\n${last_output}")
    endif()
  endif()

elseif(STEP STREQUAL "subproject")
  # FetchContent of the source tree: only the library is built (no tests,
  # benchmarks or examples, so no GTest, oneTBB or Boost look-ups), and the
  # consumers run.
  set(build ${WORK_DIR}/subproject-build)
  file(REMOVE_RECURSE ${build})
  run("configure the subproject consumer" ${CMAKE_COMMAND} -S ${CONSUMER_DIR}/../subproject
      -B ${build} -G ${GENERATOR} -DITO_SOURCE_DIR=${SOURCE_DIR} -DCMAKE_BUILD_TYPE=Debug
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
  if(last_output MATCHES "GTest|oneTBB|Boost.Fiber")
    message(FATAL_ERROR "install test: the subproject looked up test or benchmark packages:\n${last_output}")
  endif()
  run("build the subproject consumer" ${CMAKE_COMMAND} --build ${build} --parallel 2
      --target consumer_cxx consumer_c)
  foreach(dir tests bench examples)
    if(EXISTS ${build}/_deps/ito-build/${dir})
      message(FATAL_ERROR "install test: ito's ${dir} were configured in a subproject build")
    endif()
  endforeach()
  foreach(exe consumer_cxx consumer_c)
    run("run ${exe}" ${build}/${exe})
    if(NOT last_output MATCHES "consumer: ok")
      message(FATAL_ERROR "install test: ${exe} printed:\n${last_output}")
    endif()
  endforeach()

elseif(STEP STREQUAL "deb")
  file(REMOVE_RECURSE ${WORK_DIR})
  set(packages ${WORK_DIR}/packages)
  set(root ${WORK_DIR}/root)
  file(MAKE_DIRECTORY ${root})
  set(config_args)
  if(CONFIG)
    set(config_args -C ${CONFIG})
  endif()
  # Uncompressed: the same files and control data, in 3 s instead of 16 (a
  # debug build's libito.a is 50 MB).
  run("cpack -G DEB" ${CPACK_COMMAND} -G DEB --config ${ITO_BINARY_DIR}/CPackConfig.cmake
      -B ${packages} ${config_args} -D CPACK_DEBIAN_COMPRESSION_TYPE=none)
  file(REMOVE_RECURSE ${packages}/_CPack_Packages)  # cpack's staging copy, 140 MB
  # <name>_depends: what its Depends must have (regular expressions, each
  # matched alone); <name>_summary: how its description starts.
  set(expected_packages ito)
  set(ito_depends "(^|, )libc6( |,|$)" "(^|, )libstdc\\+\\+6( |,|$)")
  set(ito_summary "very many, very cheap user-level threads")
  if(HAVE_DIST)
    list(APPEND expected_packages ito-dist)
    string(REPLACE "." "\\." version_re "${VERSION}")
    set(ito-dist_depends "(^|, )ito \\(= ${version_re}\\)" "(^|, )lib[a-z0-9]*mpi[a-z0-9-]*-dev( |,|$)")
    set(ito-dist_summary "distributed mode of ito")
  endif()
  file(GLOB debs ${packages}/*.deb)
  list(LENGTH debs n_debs)
  list(LENGTH expected_packages n_expected)
  if(NOT n_debs EQUAL n_expected)
    message(FATAL_ERROR "install test: cpack made ${debs}, expected the packages ${expected_packages}")
  endif()
  execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE arch
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  foreach(name ${expected_packages})
    set(deb ${packages}/${name}_${VERSION}_${arch}.deb)
    if(NOT EXISTS ${deb})
      message(FATAL_ERROR "install test: no ${deb} among ${debs}")
    endif()
    run("dpkg-deb -I ${name}" ${DPKG_DEB} -I ${deb})
    set(control "${last_output}")
    foreach(field "Package: ${name}" "Version: ${VERSION}" "Architecture: ${arch}"
                  "Section: libdevel" "Maintainer: [^\n]+<[^\n]+@[^\n]+>"
                  "Description: ${${name}_summary}[^\n]*")
      if(NOT control MATCHES "\n ${field}\n")
        message(FATAL_ERROR "install test: ${name}'s control has no '${field}':\n${control}")
      endif()
    endforeach()
    if(NOT control MATCHES "\n Depends: ([^\n]+)\n")
      message(FATAL_ERROR "install test: ${name} has no Depends:\n${control}")
    endif()
    set(depends "${CMAKE_MATCH_1}")
    foreach(re ${${name}_depends})
      if(NOT depends MATCHES "${re}")
        message(FATAL_ERROR "install test: ${name}'s Depends '${depends}' lacks ${re}")
      endif()
    endforeach()
    message(STATUS "${name}: Depends: ${depends}")
    # libito.so's shlibs file, for packages built against it.
    if(name STREQUAL "ito" AND NOT control MATCHES "\n +[0-9]+ bytes, +[0-9]+ lines +shlibs")
      message(FATAL_ERROR "install test: ito has no shlibs file:\n${control}")
    endif()
    run("dpkg-deb -c ${name}" ${DPKG_DEB} -c ${deb})
    if(last_output MATCHES "\\./usr/local/|\\./(home|tmp|work)/")
      message(FATAL_ERROR "install test: ${name} has files outside /usr:\n${last_output}")
    endif()
    run("dpkg-deb -x ${name}" ${DPKG_DEB} -x ${deb} ${root})
  endforeach()
  # What a user of each package needs: a missing one is a missing install rule.
  set(usr ${root}/usr)
  find_libdir(libdir)  # (prefix is root/usr here)
  set(needed
    include/ito/ito.h include/ito/ito.hpp include/ito/thread.hpp include/ito/runtime.hpp
    include/ito/pthread.h include/ito/version.h
    share/ito/ito-gdb.py share/ito/ito-text.ld share/doc/ito/copyright share/doc/ito/README.md
    share/doc/ito/CHANGELOG.md share/doc/ito/LICENSE share/doc/ito/NOTICE)
  file(RELATIVE_PATH libdir_rel ${usr} ${libdir})
  foreach(f libito.a libito.so libito.so.${VERSION_MAJOR} libito-preload.so pkgconfig/ito.pc
            cmake/ito/itoConfig.cmake cmake/ito/itoConfigVersion.cmake cmake/ito/itoTargets.cmake)
    list(APPEND needed ${libdir_rel}/${f})
  endforeach()
  if(HAVE_SPLIT_STACK)
    list(APPEND needed ${libdir_rel}/libito_split.a ${libdir_rel}/libito_split_runtime.a)
  endif()
  if(HAVE_DIST)
    list(APPEND needed include/ito/dist.h include/ito/dist.hpp share/ito/ito-dsm.ld
         share/doc/ito-dist/copyright ${libdir_rel}/libito-dist.a ${libdir_rel}/pkgconfig/ito-dist.pc
         ${libdir_rel}/cmake/ito/itoDistTargets.cmake)
  endif()
  foreach(f ${needed})
    if(NOT EXISTS ${usr}/${f})
      message(FATAL_ERROR "install test: /usr/${f} is not in the packages")
    endif()
  endforeach()
  message(STATUS "${n_expected} package(s), ${VERSION}, every needed file: ok")
  # The ito package alone (no ito-dist, no MPI): find_package(ito) works, and
  # the dist component is reported missing; with both it is found.
  if(HAVE_DIST)
    set(ito_only ${WORK_DIR}/root_ito_only)
    run("dpkg-deb -x ito alone" ${DPKG_DEB} -x ${packages}/ito_${VERSION}_${arch}.deb ${ito_only})
    foreach(case "root_ito_only;OFF" "root;ON")
      list(GET case 0 dir)
      list(GET case 1 want_dist)
      run("find_package(ito [COMPONENTS dist]) in ${dir}" ${CMAKE_COMMAND}
          -S ${CONSUMER_DIR}/../components -B ${WORK_DIR}/components_${dir} -G ${GENERATOR}
          -DCMAKE_PREFIX_PATH=${WORK_DIR}/${dir}/usr -DWANT_DIST=${want_dist}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
      if(NOT last_output MATCHES "components: ok")
        message(FATAL_ERROR "install test: components project in ${dir}:\n${last_output}")
      endif()
    endforeach()
    file(REMOVE_RECURSE ${ito_only})  # 100 MB of a debug build, checked
  endif()

elseif(STEP STREQUAL "deb_preload")
  # An unmodified pthread program (built here, with nothing of ito) on ULTs:
  # the extracted libito-preload.so's runtime prints its stats at exit.
  find_libdir(libdir)
  set(build ${WORK_DIR}/preload_build)
  file(REMOVE_RECURSE ${build})
  file(MAKE_DIRECTORY ${build})
  run("compile the pthread program" ${C_COMPILER} -std=c11 -O1 -pthread ${PTHREAD_PROGRAM}
      -o ${build}/pthread_program)
  run("run it under the extracted libito-preload.so" ${CMAKE_COMMAND} -E env
      LD_PRELOAD=${libdir}/libito-preload.so ITO_WORKERS=2 ITO_STATS=1 ${build}/pthread_program)
  if(NOT last_output MATCHES "sum of squares 1\\.\\.20000: 2666866670000 \\(right\\)")
    message(FATAL_ERROR "install test: the pthread program printed:\n${last_output}")
  endif()
  if(NOT last_error MATCHES "ito: stats: 2 workers")
    message(FATAL_ERROR "install test: no ito stats from the program under the preload "
                        "(did the preload load?):\n${last_error}")
  endif()
  message(STATUS "the program's threads ran on ito (ITO_STATS): ok")

else()
  message(FATAL_ERROR "install test: unknown STEP '${STEP}'")
endif()
