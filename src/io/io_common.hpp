// SPDX-License-Identifier: Apache-2.0
// Shared by the io functions: is the caller a ULT, and the wait loop for a
// socket call that would block.
#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>

#include "io/errno_now.hpp"
#include "io/fd_table.hpp"
#include "io/poller.hpp"
#include "sched/scheduler.hpp"

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

// Runs attempt() (a call that never blocks) until it does not fail with
// EAGAIN, parking the ULT until the poller reports `direction` in between.
// errno is left as it was on success. `generation`: st's when the caller's
// call began (fd_state::generation); once io::close ends it, EBADF.
template <class Attempt>
ssize_t retry_when_ready(int fd, fd_state& st, std::uint32_t generation, std::uint32_t direction,
                         Attempt&& attempt) {
  const int saved = errno_now();
  for (;;) {
    const ssize_t r = attempt();
    if (r >= 0) {
      errno_now() = saved;
      return r;
    }
    if (!would_block(errno_now()) || program_wants_eagain(fd, st)) return -1;
    // Only a socket says EAGAIN here: close() may then close it directly.
    if (st.kind.load(std::memory_order_relaxed) != fd_kind::socket)
      st.kind.store(fd_kind::socket, std::memory_order_relaxed);
    if (park_until_ready(fd, st, generation, direction) < 0) return -1;
  }
}

}  // namespace ito::detail
