// SPDX-License-Identifier: Apache-2.0
// Shared by the io functions: is the caller a ULT, and the wait loop for a
// socket call that would block.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>

#include "io/errno_now.hpp"
#include "io/fd_table.hpp"
#include "io/poller.hpp"
#include "sched/scheduler.hpp"
#include "sched/timers.hpp"

namespace ito::detail {

// A ULT whose blocking calls must keep off its worker (sched::must_not_block_worker).
inline bool caller_is_ult() noexcept { return sched::must_not_block_worker(); }

inline bool would_block(int e) noexcept { return e == EAGAIN || e == EWOULDBLOCK; }

// True when the program itself made the descriptor non-blocking: then a call
// that would block fails with EAGAIN, as the system call would.
inline bool program_wants_eagain(int fd, fd_state& st) noexcept {
  if (st.ito_nonblock.load(std::memory_order_relaxed)) return false;
  const std::int8_t known = st.user_nonblock.load(std::memory_order_relaxed);
  if (known >= 0) return known != 0;
  const int saved = errno_now();
  const int flags = ::fcntl(fd, F_GETFL);
  errno_now() = saved;
  return flags >= 0 && (flags & O_NONBLOCK);
}

// A socket's SO_RCVTIMEO or SO_SNDTIMEO as the deadline of one call's parks
// (the kernel times the whole call, not each wait). Asked of the kernel only
// when the call is about to park for the first time: a ready socket's call
// never pays the getsockopt. No timeout (0, or not a socket): no_deadline.
class socket_timeout {
 public:
  explicit socket_timeout(int option) noexcept : option_(option) {}
  std::int64_t deadline(int fd) noexcept {
    if (deadline_ >= 0) return deadline_;
    deadline_ = no_deadline;
    timeval limit{};
    socklen_t len = sizeof limit;
    const int saved = errno_now();
    if (::getsockopt(fd, SOL_SOCKET, option_, &limit, &len) == 0 &&
        (limit.tv_sec > 0 || limit.tv_usec > 0)) {
      const std::int64_t ns = static_cast<std::int64_t>(limit.tv_sec) * 1'000'000'000 +
                              static_cast<std::int64_t>(limit.tv_usec) * 1000;
      deadline_ = sched::monotonic_ns() + ns;
    }
    errno_now() = saved;
    return deadline_;
  }
  // A park ended at the deadline: the call's last try decides, and if that
  // would block too the call fails with EAGAIN, as the kernel's does.
  bool expired = false;

 private:
  int option_;
  std::int64_t deadline_ = -1;  // -1: not asked yet
};

// Runs attempt() (a call that never blocks) until it does not fail with
// EAGAIN, parking the ULT until the poller reports `direction` in between.
// errno is left as it was on success. `generation`: st's when the caller's
// call began (fd_state::generation); once io::close ends it, EBADF.
// `limit`: the socket's time-out for the call (SO_RCVTIMEO/SO_SNDTIMEO), or
// none; when it passes, -1 with EAGAIN.
template <class Attempt>
ssize_t retry_when_ready(int fd, fd_state& st, std::uint32_t generation, std::uint32_t direction,
                         Attempt&& attempt, socket_timeout* limit = nullptr) {
  const int saved = errno_now();
  for (;;) {
    const ssize_t r = attempt();
    if (r >= 0) {
      errno_now() = saved;
      return r;
    }
    if (!would_block(errno_now()) || program_wants_eagain(fd, st)) return -1;
    if (limit && limit->expired) {
      errno_now() = EAGAIN;
      return -1;
    }
    // Only a socket says EAGAIN here: close() may then close it directly.
    if (st.kind.load(std::memory_order_relaxed) != fd_kind::socket)
      st.kind.store(fd_kind::socket, std::memory_order_relaxed);
    const int woke =
        park_until_ready(fd, st, generation, direction, limit ? limit->deadline(fd) : no_deadline);
    if (woke < 0) return -1;
    if (woke == 0 && limit) limit->expired = true;
  }
}

}  // namespace ito::detail
