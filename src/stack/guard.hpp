// SPDX-License-Identifier: Apache-2.0
// The guard region below each pool stack, and how it is made: with
// MADV_GUARD_INSTALL (Linux 6.13+: page-table markers, the mapping is not
// split), else mprotect (two more mappings each, so only for a share of
// vm.max_map_count), else none (the stack gets a canary instead).
#pragma once

#include <cstddef>

namespace ito::stack {

enum class guard_method { unknown, madvise, mprotect, none };

// Makes [at, at + bytes) inaccessible; false when this stack goes unguarded.
// Called with the pool's lock held (the method is process-wide state).
bool install_guard(char* at, std::size_t bytes);
guard_method current_guard_method() noexcept;
// Tests only: use `m` from now on instead of probing the kernel.
void force_guard_method(guard_method m) noexcept;

}  // namespace ito::stack
