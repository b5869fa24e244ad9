// SPDX-License-Identifier: Apache-2.0
// Waits keyed by the address of a 32-bit word, for a primitive with no room
// for a queue of its own (once_flag lives in pthread_once_t's 4 bytes): a
// futex for ULTs and plain OS threads alike. Waiters queue in a fixed table
// of buckets hashed by address, each bucket a spinlock and a queue; a record
// remembers its word (waiter::key).
#pragma once

#include <atomic>
#include <cstdint>

namespace ito::detail {

// Parks the caller while word == expected: the comparison is made under the
// bucket's lock, so a wake_all(&word) issued after the word changed cannot
// miss it. Returns at once if the word differs, else after a wake_all. The
// caller looks at the word again either way.
void wait_on_word(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
                  const char* what) noexcept;
// Wakes every caller parked on `word`. Change the word first.
void wake_all_on_word(const std::atomic<std::uint32_t>& word) noexcept;

// A futex's wait and wake for ULTs (compat/posix_futex.cpp): parks the
// caller while word == expected, until woken or deadline_ns
// (CLOCK_MONOTONIC; sched::timer_queue::never for none). Returns 0 when
// woken, EAGAIN when the word differed, ETIMEDOUT. A ULT's timer may throw
// std::bad_alloc before anything is queued.
int wait_on_word_until(const std::atomic<std::uint32_t>& word, std::uint32_t expected,
                       std::int64_t deadline_ns, const char* what);
// Wakes up to n callers parked on `word`, first come first woken; returns
// how many.
std::uint32_t wake_on_word(const std::atomic<std::uint32_t>& word, std::uint32_t n) noexcept;

}  // namespace ito::detail
