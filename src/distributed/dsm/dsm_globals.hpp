// SPDX-License-Identifier: Apache-2.0
// ITO_DSM_GLOBAL variables: the linker gathers them in the section `ito_dsm`,
// which cmake/ito-dsm.ld (linked into every ito::dist program) aligns and
// pads to whole pages, so that the runtime can map it onto DSM memory.
#pragma once

#include <cstddef>

namespace ito::dist::detail {

struct globals_section {
  char* begin = nullptr;
  std::size_t bytes = 0;  // 0: the program has none
};

// The program's section, page-aligned; a section that is not (the program
// was linked without ito-dsm.ld) stops it with an `ito: dsm:` message.
globals_section find_globals_section();

}  // namespace ito::dist::detail
