// SPDX-License-Identifier: Apache-2.0
#include "distributed/dsm/race_check.hpp"

#include <cstdio>

#include "common/setting_values.hpp"

namespace ito::dist::detail {

bool resolve_race_check() {
#ifdef NDEBUG
  constexpr bool by_default = false;
#else
  constexpr bool by_default = true;
#endif
  return config::boolean_setting(config::setting_id::dsm_check).value_or(by_default);
}

std::size_t report_races(int rank, int home, const void* page_address, const char* now,
                         const char* twin, const char* master, std::size_t bytes) {
  std::size_t races = 0, first = 0;
  for (std::size_t k = 0; k < bytes; ++k) {
    if (now[k] == twin[k] || master[k] == twin[k] || master[k] == now[k]) continue;
    if (races++ == 0) first = k;
  }
  if (races != 0) {
    const auto* at = static_cast<const unsigned char*>(page_address) + first;
    char more[64] = "";
    if (races > 1) std::snprintf(more, sizeof more, " (and %zu more in its page)", races - 1);
    std::fprintf(stderr,
                 "ito: dsm: data race: rank %d and another rank wrote byte %p%s between the same "
                 "fences: the home, rank %d, has 0x%02x, this rank wrote 0x%02x over 0x%02x; this "
                 "rank's write wins\n",
                 rank, static_cast<const void*>(at), more, home,
                 static_cast<unsigned char>(master[first]), static_cast<unsigned char>(now[first]),
                 static_cast<unsigned char>(twin[first]));
  }
  return races;
}

}  // namespace ito::dist::detail
