// SPDX-License-Identifier: Apache-2.0
// The POSIX layer's waits that ito::io has no parking for: child processes,
// several descriptors at once (select, pselect, ppoll, epoll_wait). From a
// ULT the whole call runs on a delegation pool thread while the worker runs
// other ULTs; outside a ULT each is the plain call. A pool thread blocks every
// signal except while pselect, ppoll or epoll_pwait install the caller's
// mask, so a signal that mask lets through ends the wait with EINTR there as
// it would on the caller's thread (its handler runs on the pool thread).
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>

#include "compat/carried_state.hpp"
#include "io/delegated_syscall.hpp"
#include "io/errno_now.hpp"
#include "compat/posix_thread_signals.hpp"
#include "sched/handles.hpp"
#include "sched/scheduler.hpp"

namespace {

// A ULT whose blocking calls must keep off its worker (sched::must_not_block_worker).
bool in_ult() noexcept { return ito::sched::must_not_block_worker(); }

// As posix_io.cpp: a call that may switch keeps the caller's errno on success.
template <class Call>
auto delegated(Call&& call) -> decltype(call()) {
  if (!in_ult()) return call();
  ito::posix::carried_guard keep_locale;
  const int saved = ito::detail::errno_now();
  const auto r = ito::detail::delegated_syscall(call);
  if (r >= 0) ito::detail::errno_now() = saved;
  return r;
}

// delegated for a call that opens the signals `mask` leaves open while it
// waits: the pool thread is registered as the ULT's waiter for them, so a
// signal aimed at the ULT, or a process signal the main thread blocks
// (posix_process_signals.hpp), reaches the call there.
template <class Call>
auto delegated_opening(const sigset_t* mask, Call&& call) -> decltype(call()) {
  ito::sched::ult* self = ito::sched::current_ult();
  if (!mask || !self || !in_ult()) return delegated(call);
  const std::uint64_t h = ito::sched::handles::of(self);
  if (!h) return delegated(call);
  return delegated([&] {
    ito::posix::register_pool_wait(h, *mask);
    const auto r = call();
    const int e = ito::detail::errno_now();
    ito::posix::unregister_pool_wait(h, *mask);
    ito::detail::errno_now() = e;
    return r;
  });
}

}  // namespace

extern "C" {

pid_t ito_waitpid(pid_t pid, int* status, int options) {
  if (options & WNOHANG) return ::waitpid(pid, status, options);  // never blocks
  return delegated([&] { return ::waitpid(pid, status, options); });
}
pid_t ito_wait(int* status) {
  return delegated([&] { return ::waitpid(-1, status, 0); });
}
int ito_waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  if (options & WNOHANG) return ::waitid(idtype, id, info, options);
  return delegated([&] { return ::waitid(idtype, id, info, options); });
}

int ito_select(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
               struct timeval* timeout) {
  if (timeout && timeout->tv_sec == 0 && timeout->tv_usec == 0)  // a poll: never blocks
    return ::select(nfds, readfds, writefds, exceptfds, timeout);
  return delegated([&] { return ::select(nfds, readfds, writefds, exceptfds, timeout); });
}
int ito_pselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                const struct timespec* timeout, const sigset_t* sigmask) {
  return delegated_opening(
      sigmask, [&] { return ::pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask); });
}
int ito_ppoll(struct pollfd* fds, nfds_t nfds, const struct timespec* timeout,
              const sigset_t* sigmask) {
  return delegated_opening(sigmask, [&] { return ::ppoll(fds, nfds, timeout, sigmask); });
}
int ito_epoll_wait(int epfd, struct epoll_event* events, int maxevents, int timeout_ms) {
  if (timeout_ms == 0) return ::epoll_wait(epfd, events, maxevents, 0);
  return delegated([&] { return ::epoll_wait(epfd, events, maxevents, timeout_ms); });
}
int ito_epoll_pwait(int epfd, struct epoll_event* events, int maxevents, int timeout_ms,
                    const sigset_t* sigmask) {
  return delegated_opening(
      sigmask, [&] { return ::epoll_pwait(epfd, events, maxevents, timeout_ms, sigmask); });
}

}  // extern "C"
