// SPDX-License-Identifier: Apache-2.0
// Preemption: a ULT that runs longer than a time slice while others wait for
// its worker is interrupted and goes to the back of that worker's queue, as a
// pthread under NPTL would be descheduled (docs/ARCHITECTURE.md, "Preemption").
//
// A watch thread (like Go's sysmon) looks at every worker each half slice,
// with plain loads and no help from the switch path: a worker whose running
// ULT has not changed for a slice while a ULT waits for it (its queues, the
// bound inbox where the main ULT waits, the injector, a due timer) is sent
// `preempt_signal`. The handler yields the ULT from inside the signal frame,
// so the frame keeps every register, the FP state and the mask; sigreturn
// restores them wherever the ULT resumes. It yields only at a safe point: the
// interrupted instruction lies in the program's own code, not in ito, libc,
// the loader, libstdc++ or libgcc (whose locks a preempted ULT could hold
// while another ULT of its worker waits for them), and on the ULT's own stack.
// Elsewhere it returns at once and the watch asks again at its next look.
#pragma once

#include <signal.h>

#include <cstdint>

namespace ito {
struct options;
}

namespace ito::sched {

struct runtime_state;
struct ult;

// The signal the watch sends (SIGURG, as Go's runtime: unused by almost every
// program; a handler the program had installed before still runs for the
// signals ito did not send).
inline constexpr int preempt_signal = SIGURG;

// The default slice under libito-preload.so (µs); source mode leaves it off.
inline constexpr unsigned default_preempt_slice_us = 10'000;

// Why preemption cannot run with these options in this process, or nullptr:
// a ThreadSanitizer build, a split-stack policy, or ito linked into the
// program itself (libito.a), where its code cannot be told from the program's.
const char* preemption_unavailable(const options& resolved) noexcept;

// Throws config_error (from the environment when ITO_PREEMPT is set) when
// the options ask for preemption where it is unavailable.
void check_preemption_available(const options& resolved);

// Whether a runtime with preemption on runs (the main ULT's signal mask
// keeps preempt_signal open then: posix_signal.cpp).
bool preemption_active() noexcept;

// With rt->opts.preempt_us > 0: installs the handler and starts the watch
// (once the other workers run: a program that makes no thread pays nothing).
void start_preemption(runtime_state* rt);
// Stops and joins the watch; before the workers end (it signals them).
void stop_preemption(runtime_state* rt) noexcept;
// Frees it, once the workers have ended (until then they may look at it).
void free_preemption(runtime_state* rt) noexcept;
// Signals the watch has sent (ITO_STATS).
std::uint64_t preempt_signals_sent(const runtime_state* rt) noexcept;
// A worker left the idle list: a watch that slept while every worker was
// parked looks again. One relaxed load when it does not sleep.
void wake_preempt_watch(runtime_state* rt) noexcept;

// Asynchronous actions on a running ULT (POSIX asynchronous cancellation).
// The action runs in the preemption handler, at a safe point, with the
// interrupted code's signal mask back in place; it calls async_action_done
// and returns when it has nothing to do, and does not return when it acts
// (it unwinds the ULT from inside the signal frame).
using async_action_fn = void (*)(ult* self);
void set_async_action(async_action_fn action) noexcept;
// Marks u and has the watch interrupt it whenever it runs (at once if it
// does). Without an active preemption watch, nothing interrupts it: the
// caller's other means (cancellation points) remain.
void ask_async_action(ult* u) noexcept;
// The action ran, or has nothing to do for u (it is no longer wanted): the
// watch stops interrupting u for it. Called by u itself.
void async_action_done(ult* u) noexcept;

}  // namespace ito::sched
