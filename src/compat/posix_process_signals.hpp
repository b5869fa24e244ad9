// SPDX-License-Identifier: Apache-2.0
// Process-directed signals that the main thread blocks (kill, a terminal,
// alarm): POSIX gives them to any thread that does not block them, but a ULT
// has no kernel thread whose mask the kernel could consult. So, once the
// main thread blocks a signal while other threads exist, a catcher thread
// (posix_process_signals.cpp) takes those of them that have a handler and
// gives each to a thread: one that waits for it in sigwait/sigsuspend first,
// else a ULT whose own mask leaves it open (the handler runs on it, as for
// pthread_kill: posix_thread_signals.hpp). When every thread blocks it, it
// stays pending for the process here, and goes to the first thread that
// unblocks it or waits for it.
#pragma once

#include <signal.h>

#include <cstdint>

#include "sched/ult.hpp"

namespace ito::posix {

// Starts the catcher (once) if the main thread blocks any signal now.
void watch_process_signals() noexcept;

// Takes the lowest signal kept pending for the process that is in `set`
// (in_set) or that `set` leaves open (!in_set); 0 if none. *info: its
// information.
int take_process_pending(const sigset_t& set, bool in_set, siginfo_t* info) noexcept;

// Whether the catcher was started (watch_process_signals): one load.
bool process_signals_watched() noexcept;

// A thread (self, handle h) about to end, leaving the signals `open`
// unblocked: process signals on their way to a thread (pending in the
// kernel, or taken by the catcher and not handed on yet) that it could take
// are handed to it first, so that its end does not leave them to nobody.
void take_in_flight_process_signals(sched::ult* self, std::uint64_t h, const sigset_t& open);

// Adds the signals kept pending for the process to *out.
void add_process_pending(sigset_t* out) noexcept;

}  // namespace ito::posix
