// SPDX-License-Identifier: Apache-2.0
// New ULTs sent to where their data lives: create_thread(near(p)) on a rank
// other than the one holding p (sched::fork_near asks `where`). Steals alone
// put work wherever an idle rank happened to ask, so a loop over a
// distributed array computed its parts on ranks that held none of their
// data and moved nearly all of it every sweep (the stencil, one node per
// rank: ~20x the 1-rank time at 2 ranks). A placed ULT goes help-first: its
// creator queues it for the progress thread and goes on; the ULT travels as
// a stolen one does (ult_moves: stack copy, home table, DAG fences) and is
// joined as one.
#pragma once

namespace ito::sched {
struct ult;
}

namespace ito::dist::detail::placement {

// Nothing queued (ult_moves receives placed ULTs).
void start();

// The rank child should start on to be near data; extension::placement_here
// when this rank holds it; placement_none when data is not DSM data, its home
// is not known here yet, or the child may not leave (ult_moves::may_leave).
// No MPI, no block: on the creator's stack.
int where(const sched::ult* child, const void* data) noexcept;

// child (startable, help-first) goes to `rank` at the progress thread's next
// round; it counts as live here until it has left.
void send(sched::ult* child, int rank) noexcept;

// On the progress thread, under the wire's poll lock: what send queued
// leaves.
void send_queued();

}  // namespace ito::dist::detail::placement
