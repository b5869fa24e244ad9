// SPDX-License-Identifier: Apache-2.0
// The rest of the POSIX layer's blocking calls (docs/POSIX.md, "Blocking
// calls"): clock_nanosleep and thrd_sleep on the runtime's timers; the vector,
// address and message socket calls through ito::io (a socket parks on the
// poller, anything else is delegated); and, delegated whole to a pool thread
// while the worker runs other ULTs, the calls ito has no parking for: opening
// (a FIFO waits for its other end), child waits, pause, file locks, System V
// and POSIX message queues and semaphores, epoll_pwait2, getaddrinfo. Plus
// glibc's _FORTIFY_SOURCE checking entry points of read, pread, recv,
// recvfrom and poll, which call glibc's own read (no PLT) once the check
// passes. Outside a ULT each is the plain call. ito/pthread.h renames the
// program's calls to these; libito-preload.so defines the real names.
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>

#include "compat/carried_state.hpp"
#include "compat/posix_internal.hpp"
#include "io/delegated_syscall.hpp"
#include "io/errno_now.hpp"
#include "io/fd_table.hpp"
#include "io/local_files.hpp"
#include "io/poller.hpp"
#include "ito/io.hpp"
#include "sched/scheduler.hpp"
#include "sched/worker.hpp"

extern "C" {
// posix_io.cpp, posix_signal.cpp
ssize_t ito_read(int fd, void* buf, size_t count);
ssize_t ito_pread(int fd, void* buf, size_t count, off_t offset);
int ito_poll(struct pollfd* fds, nfds_t nfds, int timeout_ms);
int ito_ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
              const sigset_t* sigmask);
int ito_pthread_sigmask(int how, const sigset_t* set, sigset_t* old);
int ito_sigsuspend(const sigset_t* mask);
// glibc's: reports a failed _FORTIFY_SOURCE check and aborts.
[[noreturn]] void __chk_fail(void);
}

namespace {

using ito::detail::errno_now;

constexpr long long ns_per_s = 1'000'000'000;

bool in_ult() noexcept { return ito::sched::must_not_block_worker(); }

bool is_main_ult() noexcept {
  ito::sched::ult* u = ito::sched::current_ult();
  return u && u == &ito::sched::current_worker()->rt->main_ult;
}

// As posix_io.cpp: a call that may switch keeps the caller's errno on
// success (the ULT may return on another worker), and the caller's locale.
// Each is a cancellation point (a pending cancellation acts before the call;
// one asked while it blocks acts at the thread's next point), unless told.
template <class Call>
auto keep_errno_on_success(Call&& call, bool cancellation_point = true) -> decltype(call()) {
  if (!in_ult()) return call();
  if (cancellation_point) ito::posix::cancellation_point();
  ito::posix::carried_guard keep_locale;
  const int saved = errno_now();
  const auto r = call();
  if (r >= 0) errno_now() = saved;
  return r;
}

// The whole call on a delegation pool thread from a ULT (its errno carried
// back); the plain call elsewhere.
template <class Call>
auto delegated(Call&& call, bool cancellation_point = true) -> decltype(call()) {
  if (!in_ult()) return call();
  return keep_errno_on_success([&] { return ito::detail::delegated_syscall(call); },
                               cancellation_point);
}

// Delegated opening: a FIFO's open waits for its other end, a file on NFS
// for the server. What ito knew of the number is stale; what it is now is
// known: the open family never makes a socket (opening one fails with
// ENXIO), so its reads and writes are delegated at once, without a probe.
// A regular file on a local file system is marked as such (its cached
// reads and its close then run on the worker: io/local_files.hpp).
template <class Call>
int opened(int flags, Call&& call) {
  if (in_ult())
    return keep_errno_on_success([&] { return ito::detail::delegated_open(flags, call); });
  const int fd = call();
  if (ito::detail::fd_state* st = ito::detail::fd_find(fd)) st->reset(ito::detail::fd_kind::other);
  return fd;
}

// open's mode argument exists only with O_CREAT or O_TMPFILE.
mode_t mode_argument(int flags, va_list ap) {
  return (flags & (O_CREAT | O_TMPFILE)) ? static_cast<mode_t>(va_arg(ap, int)) : 0;
}

// tv_sec * 1e9 + tv_nsec, saturated ("never" for centuries).
long long to_ns(const timespec& t) {
  if (t.tv_sec > ito::detail::no_deadline / ns_per_s - 1) return ito::detail::no_deadline;
  return static_cast<long long>(t.tv_sec) * ns_per_s + t.tv_nsec;
}

long long clock_ns(clockid_t clock) {
  timespec now{};
  ::clock_gettime(clock, &now);
  return to_ns(now);
}

// clock_nanosleep from a ULT, on the runtime's timers (which run on
// CLOCK_MONOTONIC). A CLOCK_REALTIME deadline is converted at the start and
// checked again at each wake-up, so a clock set back sleeps on. A handler of
// a signal aimed at the thread ends it with EINTR (a relative sleep writes
// the time left). Other clocks
// (CPU time, boot time, TAI, alarms, another process's CPU clock) are
// delegated whole: the timers know only the monotonic clock.
int sleep_on_timers(clockid_t clock, int flags, const timespec* request, timespec* remaining) {
  if (request->tv_sec < 0 || request->tv_nsec < 0 || request->tv_nsec >= ns_per_s) return EINVAL;
  const long long ns = to_ns(*request);
  // A cancellation point, as every sleep.
  if (!(flags & TIMER_ABSTIME)) {
    const long long start = clock_ns(CLOCK_MONOTONIC);
    if (!ito::posix::cancellable_sleep_for(ns)) return 0;
    if (remaining) {
      const long long slept = clock_ns(CLOCK_MONOTONIC) - start;
      const long long left = ns > slept ? ns - slept : 0;
      *remaining = timespec{static_cast<time_t>(left / ns_per_s), left % ns_per_s};
    }
    return EINTR;
  }
  if (clock == CLOCK_MONOTONIC) return ito::posix::cancellable_sleep_until(ns) ? EINTR : 0;
  for (long long left; (left = ns - clock_ns(CLOCK_REALTIME)) > 0;)
    if (ito::posix::cancellable_sleep_for(left)) return EINTR;
  return 0;
}

}  // namespace

extern "C" {

// Returns the error number (errno is left alone), as clock_nanosleep.
int ito_clock_nanosleep(clockid_t clock, int flags, const struct timespec* request,
                        struct timespec* remaining) {
  if (!in_ult() || clock == CLOCK_THREAD_CPUTIME_ID)  // the latter: EINVAL at once
    return ::clock_nanosleep(clock, flags, request, remaining);
  if (!request) return EFAULT;
  ito::posix::carried_guard keep_locale;
  const int saved = errno_now();
  int r;
  if (clock == CLOCK_MONOTONIC || clock == CLOCK_REALTIME) {
    r = sleep_on_timers(clock, flags, request, remaining);
  } else {
    r = ito::detail::in_vfork_child()
            ? ::clock_nanosleep(clock, flags, request, remaining)
            : ito::delegate(
                  [&]() noexcept { return ::clock_nanosleep(clock, flags, request, remaining); });
  }
  errno_now() = saved;
  return r;
}

// C11: 0, -1 when interrupted (never, from a ULT), another negative value on
// error; glibc's calls its clock_nanosleep without the PLT.
int ito_thrd_sleep(const struct timespec* duration, struct timespec* remaining) {
  const int r = ito_clock_nanosleep(CLOCK_REALTIME, 0, duration, remaining);
  return r == 0 ? 0 : r == EINTR ? -1 : -2;
}

ssize_t ito_readv(int fd, const struct iovec* iov, int iovcnt) {
  return keep_errno_on_success([&] { return ito::io::readv(fd, iov, iovcnt); });
}
ssize_t ito_writev(int fd, const struct iovec* iov, int iovcnt) {
  return keep_errno_on_success([&] { return ito::io::writev(fd, iov, iovcnt); });
}
ssize_t ito_preadv(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return delegated([&] { return ::preadv(fd, iov, iovcnt, offset); });
}
ssize_t ito_pwritev(int fd, const struct iovec* iov, int iovcnt, off_t offset) {
  return delegated([&] { return ::pwritev(fd, iov, iovcnt, offset); });
}
ssize_t ito_preadv2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  if (flags & RWF_NOWAIT) return ::preadv2(fd, iov, iovcnt, offset, flags);
  return delegated([&] { return ::preadv2(fd, iov, iovcnt, offset, flags); });
}
ssize_t ito_pwritev2(int fd, const struct iovec* iov, int iovcnt, off_t offset, int flags) {
  if (flags & RWF_NOWAIT) return ::pwritev2(fd, iov, iovcnt, offset, flags);
  return delegated([&] { return ::pwritev2(fd, iov, iovcnt, offset, flags); });
}

ssize_t ito_recvfrom(int fd, void* buf, size_t count, int flags, struct sockaddr* addr,
                     socklen_t* addrlen) {
  return keep_errno_on_success(
      [&] { return ito::io::recvfrom(fd, buf, count, flags, addr, addrlen); });
}
ssize_t ito_sendto(int fd, const void* buf, size_t count, int flags, const struct sockaddr* addr,
                   socklen_t addrlen) {
  return keep_errno_on_success(
      [&] { return ito::io::sendto(fd, buf, count, flags, addr, addrlen); });
}
ssize_t ito_recvmsg(int fd, struct msghdr* msg, int flags) {
  return keep_errno_on_success([&] { return ito::io::recvmsg(fd, msg, flags); });
}
ssize_t ito_sendmsg(int fd, const struct msghdr* msg, int flags) {
  return keep_errno_on_success([&] { return ito::io::sendmsg(fd, msg, flags); });
}
// Several messages: delegated whole (MSG_WAITFORONE, the time-out and
// partial batches have no parking of their own).
int ito_recvmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags,
                 struct timespec* timeout) {
  if (flags & MSG_DONTWAIT) return ::recvmmsg(fd, msgs, vlen, flags, timeout);
  return delegated([&] { return ::recvmmsg(fd, msgs, vlen, flags, timeout); });
}
int ito_sendmmsg(int fd, struct mmsghdr* msgs, unsigned int vlen, int flags) {
  if (flags & MSG_DONTWAIT) return ::sendmmsg(fd, msgs, vlen, flags);
  return delegated([&] { return ::sendmmsg(fd, msgs, vlen, flags); });
}

int ito_openat(int dirfd, const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(flags, [&] { return ::openat(dirfd, path, flags, mode); });
}
int ito_open64(const char* path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = mode_argument(flags, ap);
  va_end(ap);
  return opened(flags, [&] { return ::open(path, flags | O_LARGEFILE, mode); });
}
int ito_creat(const char* path, mode_t mode) {
  return opened(O_WRONLY, [&] { return ::open(path, O_CREAT | O_WRONLY | O_TRUNC, mode); });
}

pid_t ito_wait3(int* status, int options, struct rusage* usage) {
  if (options & WNOHANG) return ::wait3(status, options, usage);
  return delegated([&] { return ::wait3(status, options, usage); });
}
pid_t ito_wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  if (options & WNOHANG) return ::wait4(pid, status, options, usage);
  return delegated([&] { return ::wait4(pid, status, options, usage); });
}

// sigsuspend with the thread's own mask (a pool thread waits with it). The
// main thread's mask is worker 0's own, so a process-directed signal it
// leaves unblocked goes to worker 0, never to that pool thread (docs/POSIX.md,
// "Signals"): its pause stays the plain call, which holds worker 0.
int ito_pause(void) {
  if (!in_ult() || is_main_ult()) return ::pause();
  sigset_t mask;
  ito_pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return ito_sigsuspend(&mask);
}

int ito_flock(int fd, int operation) {
  if (operation & LOCK_NB) return ::flock(fd, operation);
  return delegated([&] { return ::flock(fd, operation); });
}
// Only the commands that wait are delegated. The argument is read as a
// pointer, as glibc does (an int argument comes through unchanged).
int ito_fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (cmd == F_SETLKW || cmd == F_OFD_SETLKW)
    return delegated([&] { return ::fcntl(fd, cmd, arg); });
  return ::fcntl(fd, cmd, arg);
}
int ito_lockf(int fd, int cmd, off_t len) {
  if (cmd != F_LOCK) return ::lockf(fd, cmd, len);
  return delegated([&] { return ::lockf(fd, cmd, len); });
}

ssize_t ito_msgrcv(int id, void* msg, size_t size, long type, int flags) {
  if (flags & IPC_NOWAIT) return ::msgrcv(id, msg, size, type, flags);
  return delegated([&] { return ::msgrcv(id, msg, size, type, flags); });
}
int ito_msgsnd(int id, const void* msg, size_t size, int flags) {
  if (flags & IPC_NOWAIT) return ::msgsnd(id, msg, size, flags);
  return delegated([&] { return ::msgsnd(id, msg, size, flags); });
}
// Not cancellation points (POSIX lists neither).
int ito_semop(int id, struct sembuf* ops, size_t n) {
  return delegated([&] { return ::semop(id, ops, n); }, false);
}
int ito_semtimedop(int id, struct sembuf* ops, size_t n, const struct timespec* timeout) {
  return delegated([&] { return ::semtimedop(id, ops, n, timeout); }, false);
}

ssize_t ito_mq_receive(mqd_t q, char* msg, size_t size, unsigned int* prio) {
  return delegated([&] { return ::mq_receive(q, msg, size, prio); });
}
int ito_mq_send(mqd_t q, const char* msg, size_t size, unsigned int prio) {
  return delegated([&] { return ::mq_send(q, msg, size, prio); });
}
ssize_t ito_mq_timedreceive(mqd_t q, char* msg, size_t size, unsigned int* prio,
                            const struct timespec* abstime) {
  return delegated([&] { return ::mq_timedreceive(q, msg, size, prio, abstime); });
}
int ito_mq_timedsend(mqd_t q, const char* msg, size_t size, unsigned int prio,
                     const struct timespec* abstime) {
  return delegated([&] { return ::mq_timedsend(q, msg, size, prio, abstime); });
}

int ito_epoll_pwait2(int epfd, struct epoll_event* events, int maxevents,
                     const struct timespec* timeout, const sigset_t* sigmask) {
  if (timeout && timeout->tv_sec == 0 && timeout->tv_nsec == 0)  // a poll: never blocks
    return ::epoll_pwait2(epfd, events, maxevents, timeout, sigmask);
  return delegated([&] { return ::epoll_pwait2(epfd, events, maxevents, timeout, sigmask); });
}

// EAI_* codes are negative; errno matters only for EAI_SYSTEM, and is carried.
int ito_getaddrinfo(const char* node, const char* service, const struct addrinfo* hints,
                    struct addrinfo** res) {
  return delegated([&] { return ::getaddrinfo(node, service, hints, res); });
}

// _FORTIFY_SOURCE's entry points: glibc's check, then ito's call.
ssize_t ito_read_chk(int fd, void* buf, size_t count, size_t buflen) {
  if (count > buflen) __chk_fail();
  return ito_read(fd, buf, count);
}
ssize_t ito_pread_chk(int fd, void* buf, size_t count, off_t offset, size_t buflen) {
  if (count > buflen) __chk_fail();
  return ito_pread(fd, buf, count, offset);
}
ssize_t ito_recv_chk(int fd, void* buf, size_t count, size_t buflen, int flags) {
  if (count > buflen) __chk_fail();
  return keep_errno_on_success([&] { return ito::io::recv(fd, buf, count, flags); });
}
ssize_t ito_recvfrom_chk(int fd, void* buf, size_t count, size_t buflen, int flags,
                         struct sockaddr* addr, socklen_t* addrlen) {
  if (count > buflen) __chk_fail();
  return ito_recvfrom(fd, buf, count, flags, addr, addrlen);
}
int ito_poll_chk(struct pollfd* fds, nfds_t nfds, int timeout_ms, size_t fdslen) {
  if (fdslen / sizeof *fds < nfds) __chk_fail();
  return ito_poll(fds, nfds, timeout_ms);
}
int ito_ppoll_chk(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
                  const sigset_t* sigmask, size_t fdslen) {
  if (fdslen / sizeof *fds < nfds) __chk_fail();
  return ito_ppoll(fds, nfds, timeout, sigmask);
}

}  // extern "C"
