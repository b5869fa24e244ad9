// SPDX-License-Identifier: Apache-2.0
// Internal to ito (namespace ito::detail; not for users to name): what the
// sync types embed (their wait queue) and their deadline arithmetic.
// Included by ito/sync.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace ito {

namespace detail {

struct waiter;  // a parked caller's record, on its own stack (src/sync/waiter.hpp)

// An intrusive FIFO of waiter records; guarded by its owner's spinlock.
struct wait_queue {
  waiter* head = nullptr;
  waiter* tail = nullptr;
};

// For the C API: state the C++ API does not expose (destroy's EBUSY checks).
struct sync_access;
// For the C and POSIX layers: shared_mutex's error codes and timed locks.
struct shared_mutex_access;
// For the POSIX layer: mutex kinds, recursion, error codes and timed locks.
struct mutex_access;

// Deadlines of timed waits, in CLOCK_MONOTONIC nanoseconds (INT64_MAX: none).
// Huge timeouts saturate to "none" instead of wrapping into the past.
std::int64_t steady_now_ns() noexcept;

// A wait of rel_time from now, saturating instead of overflowing.
template <class Rep, class Period>
std::int64_t deadline_after(const std::chrono::duration<Rep, Period>& rel_time) {
  const std::chrono::duration<double, std::nano> rel = rel_time;
  if (!(rel.count() > 0)) return steady_now_ns();  // also NaN
  constexpr auto forever = std::numeric_limits<std::int64_t>::max();
  const std::int64_t now = steady_now_ns();
  if (rel.count() >= static_cast<double>(forever - now)) return forever;
  return now + std::chrono::ceil<std::chrono::nanoseconds>(rel_time).count();
}

template <class Clock, class Duration>
std::int64_t deadline_at(const std::chrono::time_point<Clock, Duration>& abs_time) {
  // steady_clock reads CLOCK_MONOTONIC on Linux, so its epoch is ours; any
  // other clock is followed as an interval from now, as libstdc++ does.
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    const std::chrono::duration<double, std::nano> since = abs_time.time_since_epoch();
    if (since.count() >= static_cast<double>(std::numeric_limits<std::int64_t>::max()))
      return std::numeric_limits<std::int64_t>::max();
    if (since.count() <= 0) return 0;
    return std::chrono::ceil<std::chrono::nanoseconds>(abs_time.time_since_epoch()).count();
  } else {
    const auto now = Clock::now();
    // abs_time - now overflows for far time points (hours::max()): decide
    // those in double first; the rest is converted exactly (a double's
    // rounding could end the wait a few hundred nanoseconds early).
    constexpr double far = 0x1p62;  // ns, ~146 years
    using dns = std::chrono::duration<double, std::nano>;
    const double gap =
        dns(abs_time.time_since_epoch()).count() - dns(now.time_since_epoch()).count();
    if (gap >= far) return std::numeric_limits<std::int64_t>::max();
    if (gap <= -far) return steady_now_ns();
    return deadline_after(abs_time - now);
  }
}

}  // namespace detail

}  // namespace ito
