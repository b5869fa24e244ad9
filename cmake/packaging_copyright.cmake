# SPDX-License-Identifier: Apache-2.0
# CPACK_PRE_BUILD_SCRIPTS (cmake/packaging.cmake): after CPack has installed
# each component into its staging folder and before it packs it, writes
# usr/share/doc/<package>/copyright (Debian policy 12.5, machine-readable
# format) with the copyright line of NOTICE.
file(STRINGS ${CPACK_ITO_SOURCE_DIR}/NOTICE ito_copyright REGEX "^Copyright ")
string(REGEX REPLACE "^Copyright " "" ito_copyright "${ito_copyright}")
foreach(component ${CPACK_COMPONENTS_ALL})
  string(TOUPPER ${component} upper)
  set(package ${CPACK_DEBIAN_${upper}_PACKAGE_NAME})
  set(stage ${CPACK_TEMPORARY_INSTALL_DIRECTORY}/${component})
  if(NOT package OR NOT IS_DIRECTORY ${stage})
    continue()
  endif()
  file(WRITE ${stage}${CPACK_PACKAGING_INSTALL_PREFIX}/share/doc/${package}/copyright
"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: ito

Files: *
Copyright: ${ito_copyright}
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0 (and in /usr/share/doc/ito/LICENSE).
")
endforeach()
