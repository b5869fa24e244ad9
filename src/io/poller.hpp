// SPDX-License-Identifier: Apache-2.0
// The readiness poller: one OS thread blocked in epoll_wait. Sockets are
// registered once, edge-triggered, for both directions; a ULT whose call would
// block parks on the descriptor's entry, and the poller makes exactly the ULTs
// waiting for the direction that became ready runnable (direct wake-up). An
// edge that arrives while nobody waits is remembered in the entry, so a ULT
// about to park sees it and retries instead of sleeping through it.
//
// Why a thread and not workers polling when idle: a loaded worker never goes
// idle, and a parked worker sleeps on a futex that epoll cannot wake; the
// scheduler loop (src/sched) has no hook for a second event source besides
// the flow layer's task source. The poller thread sleeps in the kernel when
// there is nothing to do, and under load each epoll_wait returns a batch.
#pragma once

#include <cstdint>
#include <limits>

#include "io/fd_table.hpp"

namespace ito::detail {

inline constexpr std::int64_t no_deadline = std::numeric_limits<std::int64_t>::max();

struct fd_waiter;

// From a ULT only. Parks until the poller reports `interest` (ready_in and/or
// ready_out) on fd, or until deadline_ns (CLOCK_MONOTONIC). Returns 1 when
// woken, 0 on timeout, -1 with errno when fd cannot be watched, and -1 with
// EBADF once io::close has ended `generation` (the st.generation the caller's
// call began under: its descriptor is gone, and the number may already be
// another's). A wake-up is a hint: the caller retries its call.
// in_edges_seen >= 0: the value of st.in_edges the caller's failed read
// followed; a later read edge, even one another ULT took, ends the park.
int park_until_ready(int fd, fd_state& st, std::uint32_t generation, std::uint32_t interest,
                     std::int64_t deadline_ns = no_deadline, std::int64_t in_edges_seen = -1);

// io::close, before it closes the descriptor: starts a new generation of st,
// so that every call begun before fails with EBADF instead of parking or
// retrying, and takes the ULTs parked on st. Returns them for wake_closed.
fd_waiter* begin_close(fd_state& st) noexcept;
// After the descriptor is closed: wakes what begin_close returned (their
// calls fail with EBADF; none touches the descriptor again).
void wake_closed(fd_waiter* parked) noexcept;

// io::forget: wakes every ULT parked on st, and makes the next one to park
// retry at once (the descriptor may still be open: they retry their calls).
void wake_all_parked(fd_state& st) noexcept;

}  // namespace ito::detail
