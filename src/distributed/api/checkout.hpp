// SPDX-License-Identifier: Apache-2.0
// ito::dist::checkout's two ends (ito/dist.hpp), for the C++ class and the C
// calls: the DSM's pins (dsm.hpp check_out_pages, unpin), on a stack large
// enough for MPI, and the holding ULT kept on this process.
#pragma once

#include <cstddef>

#include "ito/dist.hpp"

namespace ito::dist::detail {

// The checkin, throwing what unpin throws, or usage_error(EPERM) without a
// runtime (check_in, noexcept, reports that and stops the program).
void check_in_or_throw(void* p, std::size_t bytes);

}  // namespace ito::dist::detail
