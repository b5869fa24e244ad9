// SPDX-License-Identifier: Apache-2.0
// The DSM's counters (dsm_stats, ito/dist.hpp): kept in dsm::stats by each
// room, read by stats() (dsm.hpp), printed at the end with ITO_DIST_STATS.
#pragma once

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// ITO_DIST_STATS=yes: this rank's counters on stderr (stop_dsm).
void print_stats(const dsm& d);

}  // namespace ito::dist::detail
