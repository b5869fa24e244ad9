// SPDX-License-Identifier: Apache-2.0
// The distributed scheduler (seed 003 §4): one ito runtime per rank, joined
// into one scheduler. ULTs whose stacks live in the iso-address stack area
// migrate between processes, and so do the joins and detaches that reach
// them there. It plugs into the scheduler as its processes extension
// (sched/extension.hpp). Its parts, each owning its state:
//   wire             message types, queue, the poller (progress thread)
//   remote_steal     steals between ranks
//   ult_moves        a ULT or a joiner moving with its stack
//   remote_join      joins, detaches and ends across processes (home tables)
//   error_transport  an exception crossing processes
//   ult_image        a ULT's bytes written where they land
//   quiescence       stop, and the end of a run
//   counts           what ITO_STATS prints
// docs/DISTRIBUTED.md has the protocol as sequence diagrams.
#pragma once

#include <vector>

#include "ito/dist.hpp"

namespace ito::sched {
struct runtime_state;
}  // namespace ito::sched

namespace ito::dist::detail {

struct stack_area;

// Collective. Installs the processes extension (with the stack area's chunk
// source) and the progress thread's poller; before the ito runtime starts.
// node_of_rank: every rank's node (steals ask this rank's node first).
void start_migration(const stack_area& area, int rank, int size,
                     const std::vector<int>& node_of_rank);
// The rank's runtime, once started (before that, steal requests find no
// work); null before it stops.
void set_runtime(sched::runtime_state* rt);
// After the ito runtime stopped: uninstalls; ITO_STATS prints the counts.
void stop_migration() noexcept;

// Between start_migration and stop_migration: the distributed scheduler runs
// here, and only rank 0 runs the main function.
bool scheduler_running() noexcept;

// Counted since start_migration (after stop_migration: the last run's).
ito::dist::scheduler_stats current_counts() noexcept;

}  // namespace ito::dist::detail
