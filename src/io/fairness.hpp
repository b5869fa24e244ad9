// SPDX-License-Identifier: Apache-2.0
// A fairness point in the socket calls. A ULT whose calls keep completing at
// once never gives its worker back: a client that pipelines without end, or
// a handler that answers in a loop, would hold a worker for as long as it
// likes while other connections wait. So one ULT's run of socket calls that
// did not park yields every `calls_before_yield` calls, to the back of the
// run queue (a plain yield would put it at its deque's bottom, to run again
// right after the next ULT). Nothing on the common path but a thread-local
// compare and increment.
#pragma once

namespace ito::detail {

inline constexpr unsigned calls_before_yield = 64;

// From a ULT, after a socket call that completed without parking.
void count_call_without_park() noexcept;
// From a ULT about to park: its run ends.
void end_run_without_park() noexcept;

}  // namespace ito::detail
