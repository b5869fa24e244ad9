# SPDX-License-Identifier: Apache-2.0
# Cross build for 64-bit ARM Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu); tests run under qemu-user (qemu-user-static), which
# ctest and gtest_discover_tests put in front of every test program
# (CMAKE_CROSSCOMPILING_EMULATOR). See README: "Other architectures".
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ito_cross_prefix aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${ito_cross_prefix}-gcc)
set(CMAKE_CXX_COMPILER ${ito_cross_prefix}-g++)
set(CMAKE_ASM_COMPILER ${ito_cross_prefix}-gcc)

# The target's libraries and headers only; the host's programs (cmake, git).
set(CMAKE_FIND_ROOT_PATH /usr/${ito_cross_prefix})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

find_program(ITO_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(ITO_QEMU_AARCH64)
  # -L: where the emulated dynamic loader finds the target's libraries.
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ITO_QEMU_AARCH64} -L /usr/${ito_cross_prefix})
endif()
