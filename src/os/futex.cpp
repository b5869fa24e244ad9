// SPDX-License-Identifier: Apache-2.0
// The futex system calls (see futex.hpp).
#include "os/futex.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace ito::os {
namespace {

timespec to_timespec(std::int64_t ns) noexcept {
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// Every wait ends here: ETIMEDOUT is the only outcome a caller must tell
// apart; EAGAIN, EINTR and wake-ups all mean "look again".
futex_status wait(futex_word* word, int op, std::uint32_t expected, const timespec* time,
                  std::uint32_t bitset, bool shared = false) noexcept {
  const int saved_errno = errno;
  const long rc = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word),
                          op | (shared ? 0 : FUTEX_PRIVATE_FLAG), expected, time, nullptr, bitset);
  const bool timed_out = rc != 0 && errno == ETIMEDOUT;
  errno = saved_errno;
  return timed_out ? futex_status::timed_out : futex_status::woken;
}

}  // namespace

futex_status futex_wait(futex_word* word, std::uint32_t expected) noexcept {
  return wait(word, FUTEX_WAIT, expected, nullptr, 0);
}

futex_status futex_wait_for(futex_word* word, std::uint32_t expected,
                            std::int64_t timeout_ns) noexcept {
  if (timeout_ns <= 0) return futex_status::timed_out;
  const timespec timeout = to_timespec(timeout_ns);
  return wait(word, FUTEX_WAIT, expected, &timeout, 0);
}

futex_status futex_wait_until(futex_word* word, std::uint32_t expected, std::int64_t deadline_ns,
                              clockid_t clock) noexcept {
  if (deadline_ns < 0) return futex_status::timed_out;
  const timespec deadline = to_timespec(deadline_ns);
  const int op = FUTEX_WAIT_BITSET | (clock == CLOCK_REALTIME ? FUTEX_CLOCK_REALTIME : 0);
  return wait(word, op, expected, &deadline, FUTEX_BITSET_MATCH_ANY);
}

void futex_wake(futex_word* word, int count) noexcept {
  const int saved_errno = errno;
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
          count, nullptr, nullptr, 0);
  errno = saved_errno;
}

futex_status futex_wait_until_shared(futex_word* word, std::uint32_t expected,
                                     std::int64_t deadline_ns) noexcept {
  if (deadline_ns == INT64_MAX) return wait(word, FUTEX_WAIT, expected, nullptr, 0, true);
  if (deadline_ns < 0) return futex_status::timed_out;
  const timespec deadline = to_timespec(deadline_ns);
  return wait(word, FUTEX_WAIT_BITSET, expected, &deadline, FUTEX_BITSET_MATCH_ANY, true);
}

void futex_wake_shared(futex_word* word, int count) noexcept {
  const int saved_errno = errno;
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, count, nullptr, nullptr,
          0);
  errno = saved_errno;
}

}  // namespace ito::os
