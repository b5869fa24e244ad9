// SPDX-License-Identifier: Apache-2.0
// A suspended ULT moving between processes with its stack: given to a thief
// (remote_steal), a new one sent near its data (placement), or a joiner going to its child's home when the child's
// result must stay there (come_home). Where it lands, it is written at the
// same addresses and made ready after an acquire (DAG consistency).
#pragma once

#include "distributed/scheduler/wire.hpp"

namespace ito::sched {
struct ult;
}

namespace ito::dist::detail::ult_moves {

// Registers the handlers of arriving ULTs and joiners.
void start();

// May u leave this process? Not while it is bound, holds a handle, ULT-local
// values, a caught exception or a reason to stay (ult::must_stay: locks, a
// join; a joiner sent to its child's process may be in its one join), or its
// stack is not in the iso-address area.
bool may_leave(const sched::ult* u, bool in_its_join = false);

// Sends u, suspended here, to process `to` as a stolen ULT.
void give(sched::ult* u, int to);
// Sends u, new and startable here (placement), to process `to` to start there.
void place(sched::ult* u, int to);
// A stolen ULT (message h) arrived: written here and made ready.
void arrived(const header& h, const char* payload);
// On the progress thread, under the poll lock, each round: placed ULTs that
// arrived before this rank's runtime started run now that it has.
void admit_early_arrivals();
// Under the poll lock: a placed ULT that arrived early is still waiting (it
// lives here, though the runtime does not count it yet).
bool early_arrivals_waiting() noexcept;

}  // namespace ito::dist::detail::ult_moves
