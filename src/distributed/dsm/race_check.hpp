// SPDX-License-Identifier: Apache-2.0
// The DSM's data-race check: at sd_fence, before a diff goes out, the home's
// bytes are read back; a byte this rank changed that the home also no longer
// holds as this rank's twin did was written by someone else too, between the
// same fences: a race a data-race-free program never has.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ito::dist::detail {

// ITO_DSM_CHECK (1/true/yes, 0/false/no); unset: on in builds without NDEBUG.
// A bad value is config_error (from the environment).
bool resolve_race_check();

// Compares one page's three versions over the bytes this rank changed
// (now != twin): reports, once per page, a byte whose master differs from
// both. Returns the number of such bytes.
std::size_t report_races(int rank, int home, const void* page_address, const char* now,
                         const char* twin, const char* master, std::size_t bytes);

}  // namespace ito::dist::detail
