// SPDX-License-Identifier: Apache-2.0
// A release (sd_fence): the diffs of this rank's modified and pinned pages
// go to their homes (diffs.hpp), the hot pages of this home are compared
// with their twins, and write notices go to the readers of every page this
// rank wrote.
#pragma once

#include <cstddef>

#include "distributed/dsm/dsm_bookkeeping.hpp"

namespace ito::dist::detail {

// The memory of free twin frames is kept while at most kept_twins_max are
// (16 MiB a rank): a page written in the next interval, the usual loop, or a
// new page then takes its twin without the kernel's first-touch fault, and
// the release makes no madvise (in a process with several threads, each one
// shoots down the others' TLBs). A release that would go beyond gives back
// the memory of all the frames it frees.
inline constexpr std::size_t kept_twins_max = (16u << 20) / page_bytes;

// A page this rank wrote: notices go to its other readers (at once for this
// node's pages, at complete_release for others).
void note_written(dsm& d, std::size_t page);
// With d.lock held: the release. Modified pages become shared, or invalid
// where `d.noticed` says another rank wrote them too (release_and_invalidate).
void release(dsm& d);

}  // namespace ito::dist::detail
