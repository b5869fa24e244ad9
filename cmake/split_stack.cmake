# SPDX-License-Identifier: Apache-2.0
# ito::split_stack: what a program needs for the lazy and fair_use stack policies
# (docs/SPLIT_STACKS.md). Link it instead of ito::ito:
#   -fsplit-stack -fcf-protection=none on every source (code running on ULTs must
#   be split-stack code), gold or lld with --split-stack-adjust-size (ld.bfd
#   ignores the split-stack notes: non-split callees would run off the segment),
#   -z now (lazy PLT binding needs KBs of stack and clobbers r10), and ito's own
#   split-stack runtime linked whole (libgcc's would block signals per segment).
set(ITO_SPLIT_STACK AUTO CACHE STRING "lazy/fair_use stack policies (-fsplit-stack with gold or lld): AUTO, ON or OFF")
set_property(CACHE ITO_SPLIT_STACK PROPERTY STRINGS AUTO ON OFF)
# Must equal ito::sched::split::adjust_size and ADJUST_SIZE in morestack_x86_64.S.
set(ito_split_adjust_size 8192)
set(ITO_HAVE_SPLIT_STACK FALSE)

if(NOT ITO_SPLIT_STACK MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ITO_SPLIT_STACK must be AUTO, ON or OFF, not '${ITO_SPLIT_STACK}'")
endif()

if(NOT ITO_SPLIT_STACK STREQUAL "OFF")
  set(ito_split_reason "")
  if(NOT ITO_ARCH STREQUAL "x86_64")
    set(ito_split_reason "x86-64 only (GCC has no -fsplit-stack for ${ITO_ARCH}, and ito's __morestack is x86-64 code)")
  elseif(NOT ITO_SANITIZE STREQUAL "")
    set(ito_split_reason "not in sanitizer builds (the sanitizers do not follow split stacks)")
  elseif(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_C_COMPILER_ID STREQUAL "GNU")
    set(ito_split_reason "needs gcc (found ${CMAKE_CXX_COMPILER_ID})")
  else()
    include(CheckCSourceCompiles)
    foreach(linker gold lld)
      set(CMAKE_REQUIRED_FLAGS "-fsplit-stack -fcf-protection=none")
      set(CMAKE_REQUIRED_LINK_OPTIONS -fsplit-stack -fuse-ld=${linker}
          -Wl,--split-stack-adjust-size=${ito_split_adjust_size} -Wl,-z,now)
      check_c_source_compiles("#include <stdio.h>
        static int deep(int n) { char b[512]; b[n % 512] = (char)n; return n ? deep(n - 1) + b[3] : 0; }
        int main(void) { printf(\"%d\", deep(3)); return 0; }" ito_split_stack_with_${linker})
      unset(CMAKE_REQUIRED_FLAGS)
      unset(CMAKE_REQUIRED_LINK_OPTIONS)
      if(ito_split_stack_with_${linker})
        set(ito_split_linker ${linker})
        break()
      endif()
    endforeach()
    if(NOT ito_split_linker)
      set(ito_split_reason "gcc -fsplit-stack did not link with gold or lld (install binutils-gold or lld)")
    endif()
  endif()

  if(ito_split_reason)
    if(ITO_SPLIT_STACK STREQUAL "ON")
      message(FATAL_ERROR "ITO_SPLIT_STACK=ON, but split stacks are unavailable: ${ito_split_reason}")
    endif()
    message(STATUS "ito: lazy/fair_use stack policies skipped: ${ito_split_reason}")
  else()
    set(ITO_HAVE_SPLIT_STACK TRUE)
    message(STATUS "ito: lazy/fair_use stack policies available (ito::split_stack, linker ${ito_split_linker})")
  endif()
endif()

if(ITO_HAVE_SPLIT_STACK)
  # Built WITHOUT -fsplit-stack: it runs while no segment can be grown.
  add_library(ito_split_runtime STATIC
    ${PROJECT_SOURCE_DIR}/src/split/morestack/morestack_x86_64.S
    ${PROJECT_SOURCE_DIR}/src/split/morestack/split_runtime.cpp)
  target_include_directories(ito_split_runtime PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(ito_split_runtime PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>)
  target_compile_options(ito_split_runtime PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${ito_warnings}>)
  # Named as the installed package names it, so that the LINK_LIBRARY below
  # reads the same in the build tree and in the exported targets.
  add_library(ito::split_runtime ALIAS ito_split_runtime)

  # libito again, as split-stack code, for split programs. Split code that
  # calls non-split code pays on every call: the linker enlarges the caller's
  # check by the adjust size, or, for a small frame, sends every call of it
  # through __morestack_non_split (~8 ns: a mispredicted return). Compiled
  # split, libito's spawn/join path costs its split callers nothing. The
  # overflow signal handler runs on a sigaltstack the limit word knows nothing
  # of: it stays non-split (so does ult_main, marked no_split_stack).
  ito_add_objects(ito_split_objects -fsplit-stack -fcf-protection=none)
  set_source_files_properties(${PROJECT_SOURCE_DIR}/src/sched/overflow.cpp
    TARGET_DIRECTORY ito_split_objects PROPERTIES COMPILE_OPTIONS -fno-split-stack)
  ito_add_library(ito_split_static STATIC ito_split_objects ito_split)

  add_library(ito_split_stack INTERFACE)
  target_compile_options(ito_split_stack INTERFACE -fsplit-stack -fcf-protection=none)
  # Non-split functions C++ code calls all the time (every cleanup pad calls
  # _Unwind_Resume, every `new` operator new): ito's shims are split-stack code
  # that checks for room itself, so their callers keep the plain check. The
  # same list as the split_shim lines in src/split/morestack/morestack_x86_64.S (a
  # mismatch fails the link).
  set(ito_split_wrapped _Unwind_Resume __cxa_allocate_exception __cxa_free_exception
    __cxa_throw __cxa_rethrow __cxa_begin_catch __cxa_end_catch
    _Znwm _Znam _ZdlPv _ZdlPvm _ZdaPv _ZdaPvm malloc free)
  list(TRANSFORM ito_split_wrapped PREPEND "-Wl,--wrap=")
  target_link_options(ito_split_stack INTERFACE -fsplit-stack -fuse-ld=${ito_split_linker}
    -Wl,--split-stack-adjust-size=${ito_split_adjust_size} -Wl,-z,now ${ito_split_wrapped})
  # Whole: libstdc++ and libito reference pthread_create, which the driver wraps.
  target_link_libraries(ito_split_stack INTERFACE
    "$<LINK_LIBRARY:WHOLE_ARCHIVE,ito::split_runtime>" ito_split_static)
  add_library(ito::split_stack ALIAS ito_split_stack)
endif()
# Included from src/: tests/ and bench/ look at it too.
set(ITO_HAVE_SPLIT_STACK ${ITO_HAVE_SPLIT_STACK} PARENT_SCOPE)
