// SPDX-License-Identifier: Apache-2.0
// Giving a free stack's pages back to the kernel. The pool drops the stacks it
// holds beyond what steady state needs (see stack_pool::release_batch); the
// memory stays mapped (it reads zeros until touched again) and nothing of ito
// reads a free stack: C handles are checked in sched's handle table.
#pragma once

#include <cstddef>

#include "stack/stack_pool.hpp"

namespace ito::stack {

// Drops the pages of the n stacks in `in` (each stack_bytes from its lo, above
// a guard of guard_bytes), which it sorts by address; adjacent stacks go in
// one madvise.
void drop_pages(stack_block* in, std::size_t n, std::size_t stack_bytes,
                std::size_t guard_bytes) noexcept;

}  // namespace ito::stack
