// SPDX-License-Identifier: Apache-2.0
// Lists the live ULTs of a runtime, for people: when the runtime's end waits
// too long, and on request (a dump). Reads other workers' state without
// stopping them, so a line may be a moment out of date; never used for
// decisions.
#pragma once

#include <cstdint>
#include <cstdio>

namespace ito::sched {

struct runtime_state;

// One line per live ULT: its id and state (running on worker N, runnable,
// blocked in what on which object, finished but not joined). Returns how many.
std::size_t report_live_ults(runtime_state* rt, std::FILE* out);

// For the deadlock watch (deadlock.cpp), with every worker idle: true when
// each live ULT, the main one included, is suspended on one of ito's
// synchronisation objects or in a join, and the registry holds every ULT
// forked and not finished. Unlike the report, used for a decision: the
// caller makes sure nothing ran meanwhile.
bool all_blocked_on_each_other(runtime_state* rt);

}  // namespace ito::sched
