// SPDX-License-Identifier: Apache-2.0
// The calling ULT and its neighbours: yield, exit, this_ult_id, sleep_for and
// sleep_until (ito's one sleep); and, in ito::lowlevel, the low-level ULT API:
// allocate a ULT with room at the top of its stack, construct anything there,
// then fork it; join or detach it by id.
#pragma once

#include "ito/cxx20.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace ito {

struct ult_id {
  void* p = nullptr;
  friend bool operator==(ult_id, ult_id) = default;
};

// Lets other ULTs run. push_to_head: run after everything else on this worker,
// and be the first to be stolen. From a ULT only (else usage_error(EPERM)).
void yield(bool push_to_head = false);
// Ends the calling ULT: unwinds its stack (destructors run) to its entry.
// From a ULT only (else usage_error(EPERM)).
[[noreturn]] void exit();

// The running ULT's id (0 for the main ULT), or ~0 outside a ULT.
unsigned long long this_ult_id() noexcept;

namespace detail {
// d in nanoseconds, rounded up (a sleep is never shorter than asked) and
// saturated to the range of long long: hours::max() is "forever", not a
// product that wraps into the past.
template <class Rep, class Period>
long long saturated_ns(std::chrono::duration<Rep, Period> d) {
  constexpr double limit = 0x1p63;
  const double ns = std::chrono::duration<double, std::nano>(d).count();
  if (ns >= limit) return std::numeric_limits<long long>::max();
  if (ns <= -limit) return std::numeric_limits<long long>::min();
  if (ns != ns) return 0;  // NaN
  return std::chrono::ceil<std::chrono::nanoseconds>(d).count();
}
// ito::sleep_for / sleep_until's bodies (src/io/io_wait.cpp).
void sleep_ns(long long nanoseconds);
void sleep_until_monotonic_ns(long long deadline_ns);
}  // namespace detail

// ito's sleep. From a ULT, the ULT is suspended on the runtime's timers and
// its worker runs others; from any other thread, the thread sleeps. A
// duration too large for the clock (hours::max()) sleeps forever; a negative
// one, or a deadline already past, returns at once.
template <class Rep, class Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  detail::sleep_ns(detail::saturated_ns(d));
}
// Until steady_clock (CLOCK_MONOTONIC) reaches t.
template <class Duration>
void sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> t) {
  detail::sleep_until_monotonic_ns(detail::saturated_ns(t.time_since_epoch()));
}

// Suspends the calling ULT for at least `nanoseconds` (usage_error(EPERM)
// outside a ULT).
[[deprecated("use ito::sleep_for(std::chrono::nanoseconds(n))")]]
void sleep_for_ns(long long nanoseconds);

// The low-level ULT API: what create_thread is made of. A ULT made here has
// no future: it is joined or detached by its id.
namespace lowlevel {

using ito::ult_id;

struct allocated_ult {
  ult_id id;
  void* ptr;  // `size` bytes, 16-byte aligned, at the top of the new ULT's stack
};

// All of these must be called from a ULT; outside one they throw usage_error(EPERM)
// (detach: while the runtime runs).
// allocate throws usage_error(E2BIG) when `size` does not fit the new ULT's
// stack with room left for it to run (docs/ARCHITECTURE.md, Stacks).
allocated_ult allocate(std::size_t size);
// Runs func(th.ptr) as a new ULT, child first: the caller resumes when a worker
// gets to it. An exception escaping func aborts the process.
void fork(allocated_ult th, void (*func)(void*));
// Waits for the ULT to end and frees it; the bytes at ptr are gone afterwards.
// Of two racing join/detach calls on one id exactly one succeeds; the other
// throws usage_error: EINVAL (detached, or being joined), ESRCH (joined),
// EDEADLK (itself). A ULT made by create_thread belongs to its future: EINVAL.
void join(ult_id id);
// The ULT will free itself when it ends; it must not be joined. Errors as join.
void detach(ult_id id);

}  // namespace lowlevel

// The low-level API's former spellings, for one release.
using allocated_ult [[deprecated("use ito::lowlevel::allocated_ult")]] = lowlevel::allocated_ult;
[[deprecated("use ito::lowlevel::allocate")]] inline lowlevel::allocated_ult allocate(
    std::size_t size) {
  return lowlevel::allocate(size);
}
// A template, so that an unqualified fork(th, f) (found in ito::lowlevel by
// argument-dependent lookup) prefers the new one instead of being ambiguous.
template <class = void>
[[deprecated("use ito::lowlevel::fork")]] void fork(lowlevel::allocated_ult th,
                                                    void (*func)(void*)) {
  lowlevel::fork(th, func);
}
[[deprecated("use ito::lowlevel::join")]] inline void join(ult_id id) { lowlevel::join(id); }
[[deprecated("use ito::lowlevel::detach")]] inline void detach(ult_id id) {
  lowlevel::detach(id);
}

}  // namespace ito

#include "ito/detail/ult_entry.hpp"
