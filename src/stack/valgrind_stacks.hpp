// SPDX-License-Identifier: Apache-2.0
// Tells Valgrind where ULT stacks are, so that a switch onto one is a stack
// switch to it (memcheck then keeps every stack's contents defined) rather
// than a frame megabytes deep. Compiled in when <valgrind/valgrind.h> was
// there at build time; outside Valgrind each call is one client request that
// costs a few instructions, and only stack creation and release make them.
#pragma once

#include "stack/stack_pool.hpp"

namespace ito::stack {

// A new stack (pool slot, dedicated mapping, or a caller's memory).
void announce_stack(const stack_block& s) noexcept;
// The stack starting at s.lo is gone (or back with its owner).
void withdraw_stack(const stack_block& s) noexcept;
// Every announced stack that starts in [lo, hi) is gone (a pool's mapping).
void withdraw_stacks_in(const char* lo, const char* hi) noexcept;

}  // namespace ito::stack
