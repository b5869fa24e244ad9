// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/dsm_globals.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

// Defined by the linker for a section named like a C identifier, when the
// program has one; weak, so a program without ITO_DSM_GLOBAL links too.
extern "C" {
extern char __start_ito_dsm[] __attribute__((weak));
extern char __stop_ito_dsm[] __attribute__((weak));
}

namespace ito::dist::detail {

globals_section find_globals_section() {
  char* begin = __start_ito_dsm;
  char* end = __stop_ito_dsm;
  if (!begin || end <= begin) return {};
  constexpr std::uintptr_t page = 4096;
  if (reinterpret_cast<std::uintptr_t>(begin) % page != 0 ||
      reinterpret_cast<std::uintptr_t>(end) % page != 0) {
    std::fprintf(stderr,
                 "ito: dsm: this program has ITO_DSM_GLOBAL variables but was not linked with "
                 "ito-dsm.ld, which puts them on pages of their own (link with the ito::dist "
                 "CMake target, or add the flags `pkg-config --libs ito-dist` prints)\n");
    std::exit(2);
  }
  return {begin, static_cast<std::size_t>(end - begin)};
}

}  // namespace ito::dist::detail
