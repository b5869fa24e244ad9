// SPDX-License-Identifier: Apache-2.0
// Allocation in the DSM region. The region is cut in P + 1 parts: the first
// for collective allocations (every rank takes the same bytes, in the same
// order, so all get the same pointer without a message), then one heap per
// rank, from which that rank allocates with no communication at all. The
// allocator's bookkeeping is process-local (never in the DSM).
#pragma once

#include <cstddef>

#include "ito/dist.hpp"

namespace ito::dist::detail {

struct dist_state;

void start_allocator(const dist_state& st);
void stop_allocator() noexcept;

void* allocate(std::size_t bytes);
// Frees p from whichever rank: a block of another rank's heap goes back to
// it by message (remote_free.hpp).
void deallocate(void* p);
// On the owner, from the progress thread: a block another rank (`from`)
// freed. A block that is not live ends the job with a message: the free had
// no caller left to report to.
void free_returned_block(void* p, int from) noexcept;
// Collective; the pages' homes placed as `where` says (dsm.hpp place_pages).
void* allocate_collective(std::size_t bytes, const distribution& where);

}  // namespace ito::dist::detail
