// SPDX-License-Identifier: Apache-2.0
// An acquire (si_fence): the write notices on this rank's `stale` board drop
// the shared copies they name, and merge the master into the pages this rank
// is writing (pinned ones in place, their access kept).
#pragma once

#include <cstddef>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// A notice for `page`: a shared copy nobody pinned joins d.dropped (to_drop
// of them so far), dropped by drop_copies; any other is acted on now.
void take_notice(dsm& d, std::size_t page, std::size_t* to_drop);
// Makes the first n pages of d.dropped invalid, one mprotect per run.
void drop_copies(dsm& d, std::size_t n);
// With d.lock held: every notice on the board, taken.
void take_write_notices(dsm& d);

}  // namespace ito::dist::detail
