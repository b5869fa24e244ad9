// SPDX-License-Identifier: Apache-2.0
// Files and every other descriptor that epoll cannot watch: delegated from a
// ULT (the pool thread blocks, the worker does not), plain calls outside one.
// close and open also keep the descriptor table honest about numbers reused.
#include <unistd.h>

#include "io/delegated_syscall.hpp"
#include "io/io_common.hpp"
#include "io/local_files.hpp"
#include "ito/io.hpp"

namespace ito::io {

using detail::caller_is_ult;
using detail::errno_now;
using detail::delegated_syscall;
using detail::fd_kind;
using detail::fd_find;
using detail::fd_state;
using detail::delegated_open;

namespace {

// Delegated from a ULT (a negative descriptor fails at once: no need).
template <class Call>
auto run_blocking(int fd, Call&& call) -> decltype(call()) {
  if (!caller_is_ult() || fd < 0) return call();
  return delegated_syscall(call);
}

}  // namespace

ssize_t pread(int fd, void* buf, std::size_t count, off_t offset) {
  if (caller_is_ult() && offset >= 0)
    if (fd_state* st = detail::local_file_entry(fd))
      return detail::read_local_file(fd, *st, buf, count, offset);
  return run_blocking(fd, [&] { return ::pread(fd, buf, count, offset); });
}

ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset) {
  return run_blocking(fd, [&] { return ::pwrite(fd, buf, count, offset); });
}

int fsync(int fd) {
  return run_blocking(fd, [&] { return ::fsync(fd); });
}

int open(const char* path, int flags, mode_t mode) {
  if (caller_is_ult()) return delegated_open(flags, [&] { return ::open(path, flags, mode); });
  const int fd = ::open(path, flags, mode);
  // Never a socket (opening one fails with ENXIO): its reads and writes are
  // delegated without a probe (socket_or_delegated).
  if (fd_state* st = fd_find(fd)) st->reset(fd_kind::other);
  return fd;
}

int close(int fd) {
  fd_state* st = fd_find(fd);
  // The descriptor is the vfork child's own; the table entry and the
  // delegation pool are the parent's. (Asked only when either could be
  // reached: getpid is a system call.)
  if ((st || caller_is_ult()) && detail::in_vfork_child()) [[unlikely]] return ::close(fd);
  if (!st) return run_blocking(fd, [&] { return ::close(fd); });
  const fd_kind kind = st->kind.load(std::memory_order_relaxed);
  const bool read_only = st->read_only_file.load(std::memory_order_relaxed);
  st->reset(fd_kind::unknown);
  // Ends the registration before the number can be reused: calls begun on fd
  // (parked, or between a failed try and their park) fail with EBADF rather
  // than retry on a number a new descriptor may take the moment it is free.
  // Under the entry's lock: every ULT parked here linked itself under it after
  // its last call on fd, so that call happens before this close
  // (ThreadSanitizer checks descriptor lifetimes too).
  detail::fd_waiter* parked = detail::begin_close(*st);
  // Closing a socket does not block (without SO_LINGER), nor closing a
  // read-only local file; closing another file may (NFS flushes), so that is
  // delegated.
  const bool here = kind == fd_kind::socket || (kind == fd_kind::local_file && read_only);
  const int r = here ? ::close(fd) : run_blocking(fd, [&] { return ::close(fd); });
  const int saved = errno_now();
  detail::wake_closed(parked);
  errno_now() = saved;
  return r;
}

void forget(int fd) noexcept {
  if (fd_state* st = fd_find(fd)) {
    st->reset(fd_kind::unknown);
    detail::wake_all_parked(*st);
  }
}

}  // namespace ito::io
