// SPDX-License-Identifier: Apache-2.0
// Bringing pages in from their homes: a fault's page (as one of its readers,
// in one round trip where it can), a checkout's range or a fault's block
// (one transfer per run of pages homed on one rank), and the master a merge
// or a race check compares with.
#pragma once

#include <cstddef>
#include <cstdint>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// A rank's bit in a readers mask: ranks 64 apart share one (a notice then
// reaches all of them, which is safe: a notice only costs a refetch).
inline std::uint64_t reader_bit(int rank) noexcept { return std::uint64_t{1} << (rank % 64); }

// Page `page` from its home `from` into this rank's copy, complete.
void fetch(dsm& d, std::size_t page, int from);
// The same, this rank joining the page's readers first (register_reader).
void fetch_as_reader(dsm& d, std::size_t page, int h);
// The home's copy of `page` into d.master.
void fetch_master(dsm& d, std::size_t page);
// A checkout's pages [first, last] (p in [begin, end)) that this rank neither
// holds nor homes: shared afterwards, or, if `overwrite`, the ones the range
// covers whole modified and marked overwritten, neither fetched nor twinned.
void bring_in(dsm& d, const char* begin, const char* end, std::size_t first, std::size_t last,
              bool overwrite);
// ITO_DSM_BLOCK: a fault's page with its block's missing neighbours, shared.
void bring_in_block(dsm& d, std::size_t page);

}  // namespace ito::dist::detail
