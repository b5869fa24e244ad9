// SPDX-License-Identifier: Apache-2.0
// Stacks that do not come from the runtime's pool of equal stacks: one of
// the size asked for, mapped for a single ULT (pthread_attr_setstacksize)
// and a caller's own memory (pthread_attr_setstack). Both are slow paths.
#pragma once

#include <cstddef>

#include "stack/stack_pool.hpp"

namespace ito::sched {

enum class stack_origin : unsigned char;

// The smallest stack a caller may hand over: ito's descriptor, the start
// frame and a little room to run (POSIX's PTHREAD_STACK_MIN is 16 KiB too).
inline constexpr std::size_t min_custom_stack = 16 * 1024;

// What ito keeps at the top of every ULT stack it places a descriptor on:
// the top word, the descriptor (64-aligned) and the start frame of
// `frame_bytes` (16-aligned) below it.
std::size_t stack_top_reserve(std::size_t frame_bytes) noexcept;

// A stack of at least `bytes` above a guard page, from a small process-wide
// cache of such stacks or a new mapping; an empty block when out of memory.
// A new mapping (or a cached one within a page of it) ends `bytes` (rounded
// up to 64) above its guard page.
stack::stack_block take_dedicated_stack(std::size_t bytes);
// The usable part of caller memory [base, base + bytes): 64-byte aligned ends.
stack::stack_block caller_stack(void* base, std::size_t bytes);
// Where a released ULT's custom stack goes: dedicated ones back to the cache
// (kept mapped, so a stale handle still reads a generation, never unmapped
// memory, until the cache overflows), caller memory nowhere.
void release_custom_stack(stack::stack_block s, stack_origin origin);

}  // namespace ito::sched
