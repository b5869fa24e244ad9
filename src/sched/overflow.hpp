// SPDX-License-Identifier: Apache-2.0
// Stack overflows: a SIGSEGV in a ULT's guard prints the ULT and its stack
// size and aborts (any other SIGSEGV goes to the previous handler); a frame
// that cannot fit a new ULT's stack is refused before anything is copied.
#pragma once

#include <cstddef>

namespace ito::sched {

struct worker;

void install_overflow_handler();
// Gives the calling OS thread an alternate signal stack of altstack_bytes
// (reserved, not committed); returns it, or null.
// Every SIGSEGV of a worker runs there, the distributed mode's DSM faults
// included, whose handler calls MPI: a fault served while MPI also handled
// an incoming active message (ucp_am_handler) overflowed 64 KiB. A worker
// pays only for the pages its handlers touched.
inline constexpr std::size_t altstack_bytes = 1024 * 1024;
void* install_overflow_altstack();
void remove_overflow_altstack(void* altstack);

// What a pool stack keeps below the largest frame for the ULT's own frames
// (its entry, the body's call, the unwinder if it throws): half of POSIX's
// PTHREAD_STACK_MIN.
inline constexpr std::size_t min_run_room = 8 * 1024;
// The largest frame (allocate's size, create_thread's callable and arguments)
// that a pool stack of `stack_size` bytes takes: all of it but the top's
// colour offset, the generation word, the descriptor and min_run_room.
std::size_t max_frame_bytes(std::size_t stack_size) noexcept;
// allocate's slow path when frame_bytes > w->stacks.frame_limit: sets that
// limit on the worker's first spawn, and throws usage_error(E2BIG) naming the
// sizes when the frame is too large.
void check_frame(worker* w, std::size_t frame_bytes);

}  // namespace ito::sched
