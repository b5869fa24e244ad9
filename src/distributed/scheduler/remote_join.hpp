// SPDX-License-Identifier: Apache-2.0
// Joins, detaches and ends of ULTs that crossed processes. A ULT's home (the
// process whose slice of the stack area holds it) keeps its join: while it is
// away, or its joiner is elsewhere, its join word says remote
// (sched/join_word.hpp) and the home's table says what the word would have
// said (a local joiner, a remote one, detached). A process hosting a copy of
// a foreign ULT keeps only its local joiners, waiting for the home's answer.
// docs/DISTRIBUTED.md has the protocol as sequence diagrams.
//
// Its handlers run on the progress thread; its processes-extension hooks on
// the stacks sched/extension.hpp says. The table's lock is never held across
// MPI, a fence or a suspension.
#pragma once

#include "distributed/scheduler/wire.hpp"

namespace ito::sched {
struct ult;
struct worker;
}  // namespace ito::sched

namespace ito::dist::detail::remote_join {

// Registers its message handlers; with the wire open, before the runtime.
void start();
// After the runtime stopped.
void stop() noexcept;

// ---- For the steals (ult_moves) -------------------------------------------
// u, of this process, is leaving: its join goes to the table (state remote).
void departing(sched::ult* u);
// u came home with the bytes of message h: written over its descriptor and
// stack, and its join word gets back what the table kept.
void returned(sched::ult* u, const header& h, const char* payload);
// The local ULT waiting for foreign child `child`, which it now stops waiting
// for here (it goes to the child's home instead).
sched::ult* take_waiting_joiner(const sched::ult* child);

// ---- The processes extension's join hooks (sched/extension.hpp) ----------
int wait(sched::ult* child);
int detach(sched::ult* child);
void ended(sched::worker* w, sched::ult* self) noexcept;
void release(sched::ult* u) noexcept;

}  // namespace ito::dist::detail::remote_join
