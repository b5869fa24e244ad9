// SPDX-License-Identifier: Apache-2.0
// The distributed scheduler's messages (seed 003 §4): remote steals, and the
// joins, detaches and ends of ULTs that crossed processes. It implements
// sched::remote_ops (sched/remote.hpp); docs/DISTRIBUTED.md has the protocol
// as sequence diagrams.
//
// Who handles messages: the progress thread (progress.hpp), on its own 8 MiB
// stack; MPI calls and DSM fences need more than a ULT's. Workers queue what
// they send and nudge it; an idle worker nudges it to ask for work. MPI and
// the fences are never called with a table lock held.
#pragma once

#include <cstdint>

#include "ito/dist.hpp"

namespace ito::sched {
struct runtime_state;
}  // namespace ito::sched

namespace ito::dist::detail {

struct stack_area;

// Collective. Installs sched::g_remote and the pool's chunk source; before the
// ito runtime starts.
void start_migration(const stack_area& area, int rank, int size);
// The rank's runtime, once started (before that, steal requests find no
// work); null before it stops.
void set_runtime(sched::runtime_state* rt);
// Rank 0, once the main function returned: every rank's main ULT may stop.
void request_stop_all();
// From the main ULT of a rank other than 0: polls (and sleeps) until rank 0
// said stop.
void wait_for_stop();
// Collective, from the main ULT after stop: returns once every message any
// rank sent has been handled, so the runtimes can end.
void quiesce();
// After the ito runtime stopped: uninstalls; ITO_STATS=1 prints the counts.
void stop_migration() noexcept;

// Between start_migration and stop_migration: the distributed scheduler runs
// here, and only rank 0 runs the main function.
bool scheduler_running() noexcept;

// Counted since start_migration (after stop_migration: the last run's).
using migration_counts = ito::dist::scheduler_stats;
migration_counts current_counts() noexcept;

}  // namespace ito::dist::detail
