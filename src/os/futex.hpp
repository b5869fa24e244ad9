// SPDX-License-Identifier: Apache-2.0
// The one futex wrapper: every layer that sleeps an OS thread on a word, or
// wakes one, goes through here. Private futexes only (ito's words are never
// shared between processes). A wait returns `woken` for a wake-up, a value
// that no longer matched (EAGAIN), a signal (EINTR) or a spurious return
// alike: callers re-check their condition and loop. errno is left as it was.
//
// A wake on an address whose owner is already gone is harmless (the kernel
// finds no sleeper, or wakes some other sleeper spuriously), which lets a
// waker release its last hold first and wake after.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace ito::os {

using futex_word = std::atomic<std::uint32_t>;

enum class futex_status { woken, timed_out };

// Sleeps while *word == expected.
futex_status futex_wait(futex_word* word, std::uint32_t expected) noexcept;
// The same for at most timeout_ns (CLOCK_MONOTONIC); <= 0 returns timed_out.
futex_status futex_wait_for(futex_word* word, std::uint32_t expected,
                            std::int64_t timeout_ns) noexcept;
// The same until an absolute deadline in ns of `clock` (CLOCK_MONOTONIC or
// CLOCK_REALTIME): a spurious wake-up costs no clock arithmetic.
futex_status futex_wait_until(futex_word* word, std::uint32_t expected, std::int64_t deadline_ns,
                              clockid_t clock = CLOCK_MONOTONIC) noexcept;

// Wakes up to `count` sleepers on word.
void futex_wake(futex_word* word, int count) noexcept;
inline void futex_wake_one(futex_word* word) noexcept { futex_wake(word, 1); }

// The same on a word that other processes may wait on too (a
// PTHREAD_PROCESS_SHARED mutex or condition in shared memory): the kernel's
// shared futexes, keyed by the memory rather than by this process. The wait
// blocks the calling OS thread: from a ULT, run it on a delegation pool
// thread (src/compat/posix_pshared.cpp). deadline_ns: CLOCK_MONOTONIC, or
// INT64_MAX for none.
futex_status futex_wait_until_shared(futex_word* word, std::uint32_t expected,
                                     std::int64_t deadline_ns) noexcept;
void futex_wake_shared(futex_word* word, int count) noexcept;

}  // namespace ito::os
