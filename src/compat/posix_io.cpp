// SPDX-License-Identifier: Apache-2.0
// The POSIX layer's blocking system calls: from a ULT they go through ito::io
// (sockets park on the poller, files are delegated, sleeps use the runtime's
// timers), so a thread that blocks never stalls its worker. Outside a ULT each
// is the plain call. ito/pthread.h renames the program's calls to these;
// libito-preload.so defines the real names (src/preload/preload.c).
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <climits>
#include <cstdarg>

#include "compat/carried_state.hpp"
#include "compat/posix_internal.hpp"
#include "io/delegated_syscall.hpp"
#include "io/errno_now.hpp"
#include "ito/io.hpp"
#include "sched/scheduler.hpp"

namespace {

using ito::detail::errno_now;

// A ULT whose blocking calls must keep off its worker (sched::must_not_block_worker).
bool in_ult() noexcept { return ito::sched::must_not_block_worker(); }

// A call that may switch keeps the caller's errno on success (the ULT may
// return on another worker, whose errno is another thread's), as the rest of
// the POSIX layer does; on failure errno is the call's. The locale and
// h_errno are the caller's either way (carried_state.hpp).
template <class Call>
auto keep_errno_on_success(Call&& call) -> decltype(call()) {
  if (!in_ult()) return call();  // the plain call: it cannot switch
  // Every call here is a cancellation point: a pending cancellation acts
  // before it (one asked while it blocks in I/O acts at the next point).
  ito::posix::cancellation_point();
  ito::posix::carried_guard keep_locale;
  const int saved = errno_now();
  const auto r = call();
  if (r >= 0) errno_now() = saved;
  return r;
}


}  // namespace

extern "C" {

ssize_t ito_read(int fd, void* buf, size_t count) {
  return keep_errno_on_success([&] { return ito::io::read(fd, buf, count); });
}
ssize_t ito_write(int fd, const void* buf, size_t count) {
  return keep_errno_on_success([&] { return ito::io::write(fd, buf, count); });
}
ssize_t ito_pread(int fd, void* buf, size_t count, off_t offset) {
  return keep_errno_on_success([&] { return ito::io::pread(fd, buf, count, offset); });
}
ssize_t ito_pwrite(int fd, const void* buf, size_t count, off_t offset) {
  return keep_errno_on_success([&] { return ito::io::pwrite(fd, buf, count, offset); });
}

int ito_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | O_TMPFILE)) {  // the third argument exists only then
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return keep_errno_on_success([&] { return ito::io::open(path, flags, mode); });
}
int ito_close(int fd) {
  return keep_errno_on_success([&] { return ito::io::close(fd); });
}
int ito_fsync(int fd) {
  return keep_errno_on_success([&] { return ito::io::fsync(fd); });
}

int ito_accept(int fd, struct sockaddr* addr, socklen_t* addrlen) {
  return keep_errno_on_success([&] { return ito::io::accept(fd, addr, addrlen); });
}
int ito_accept4(int fd, struct sockaddr* addr, socklen_t* addrlen, int flags) {
  return keep_errno_on_success([&] { return ito::io::accept4(fd, addr, addrlen, flags); });
}
int ito_connect(int fd, const struct sockaddr* addr, socklen_t addrlen) {
  return keep_errno_on_success([&] { return ito::io::connect(fd, addr, addrlen); });
}
ssize_t ito_recv(int fd, void* buf, size_t count, int flags) {
  return keep_errno_on_success([&] { return ito::io::recv(fd, buf, count, flags); });
}
ssize_t ito_send(int fd, const void* buf, size_t count, int flags) {
  return keep_errno_on_success([&] { return ito::io::send(fd, buf, count, flags); });
}

// One descriptor: the poller (or delegation) through io::poll. Several: the
// whole call is delegated from a ULT (ito::io watches one descriptor at once).
int ito_poll(struct pollfd* fds, nfds_t nfds, int timeout_ms) {
  if (!in_ult()) return ::poll(fds, nfds, timeout_ms);
  if (nfds == 1) return keep_errno_on_success([&] { return ito::io::poll(fds[0], timeout_ms); });
  if (nfds == 0 && timeout_ms >= 0)
    return keep_errno_on_success([&] {
      if (!ito::posix::cancellable_sleep_for(timeout_ms * 1'000'000LL)) return 0;
      errno_now() = EINTR;
      return -1;
    });
  return keep_errno_on_success(
      [&] { return ito::detail::delegated_syscall([&] { return ::poll(fds, nfds, timeout_ms); }); });
}

// The sleeps are cancellation points: pthread_cancel ends them. A handler
// of a signal aimed at the thread ends them early, as the kernel's: EINTR
// (nanosleep with the time left), sleep's seconds left.
namespace {
// Sleeps ns; false with the time left in *left_ns when a handler ended it.
bool sleep_whole(long long ns, long long* left_ns) {
  const std::int64_t start = ito::sched::monotonic_ns();
  if (!ito::posix::cancellable_sleep_for(ns)) return true;
  const long long slept = ito::sched::monotonic_ns() - start;
  *left_ns = ns > slept ? ns - slept : 0;
  return false;
}
}  // namespace

int ito_nanosleep(const struct timespec* request, struct timespec* remaining) {
  if (!in_ult()) return ::nanosleep(request, remaining);
  if (!request || request->tv_sec < 0 || request->tv_nsec < 0 ||
      request->tv_nsec >= 1'000'000'000) {
    errno_now() = request ? EINVAL : EFAULT;
    return -1;
  }
  return keep_errno_on_success([&] {
    constexpr long long ns_per_s = 1'000'000'000;
    const long long s = request->tv_sec;
    long long left = 0;
    if (sleep_whole(s >= LLONG_MAX / ns_per_s ? LLONG_MAX : s * ns_per_s + request->tv_nsec,
                    &left)) {
      if (remaining) *remaining = timespec{0, 0};
      return 0;
    }
    if (remaining) *remaining = timespec{static_cast<time_t>(left / ns_per_s), left % ns_per_s};
    errno_now() = EINTR;
    return -1;
  });
}
int ito_usleep(useconds_t usec) {
  if (!in_ult()) return ::usleep(usec);
  return keep_errno_on_success([&] {
    if (!ito::posix::cancellable_sleep_for(static_cast<long long>(usec) * 1000)) return 0;
    errno_now() = EINTR;
    return -1;
  });
}
unsigned ito_sleep(unsigned seconds) {
  if (!in_ult()) return ::sleep(seconds);
  long long left = 0;
  keep_errno_on_success([&] {
    sleep_whole(static_cast<long long>(seconds) * 1'000'000'000LL, &left);
    return 0;
  });
  // As glibc: the seconds left, rounded to the nearest.
  return static_cast<unsigned>(left / 1'000'000'000LL + (left % 1'000'000'000LL >= 500'000'000LL));
}

}  // extern "C"
