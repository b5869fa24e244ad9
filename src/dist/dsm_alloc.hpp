// SPDX-License-Identifier: Apache-2.0
// Allocation in the DSM region. The region is cut in P + 1 parts: the first
// for collective allocations (every rank takes the same bytes, in the same
// order, so all get the same pointer without a message), then one heap per
// rank, from which that rank allocates with no communication at all. The
// allocator's bookkeeping is process-local (never in the DSM).
#pragma once

#include <cstddef>

namespace ito::dist::detail {

struct dist_state;

void start_allocator(const dist_state& st);
void stop_allocator() noexcept;

void* allocate(std::size_t bytes);
void deallocate(void* p);
void* allocate_collective(std::size_t bytes);

}  // namespace ito::dist::detail
