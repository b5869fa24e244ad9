// Giving a free stack's pages back to the kernel, and taking it up again.
// The pool drops the stacks it holds beyond what steady state needs (see
// stack_pool::release_batch); the memory stays mapped, so a stale descriptor
// pointer still reads (zeros), never faults.
#pragma once

#include <cstddef>

#include "stack/stack_pool.hpp"

namespace ito::stack {

// Drops the pages of the n stacks in `in` (each stack_bytes from its lo, above
// a guard of guard_bytes), which it sorts by address; adjacent stacks go in
// one madvise. Writes each stack's record to out[i].
void drop_pages(stack_block* in, std::size_t n, std::size_t stack_bytes, std::size_t guard_bytes,
                dropped_stack* out) noexcept;
// Writes a revived stack's generation back (its first touch: a page fault).
void revive(const dropped_stack& d) noexcept;

}  // namespace ito::stack
