// SPDX-License-Identifier: Apache-2.0
// Waiting without a descriptor call: poll on one descriptor, and sleeps.
#include <sys/stat.h>
#include <time.h>

#include "io/delegated_syscall.hpp"
#include "io/io_common.hpp"
#include "ito/io.hpp"

namespace ito::io {

using detail::caller_is_ult;
using detail::errno_now;
using detail::fd_kind;
using detail::fd_lookup;
using detail::fd_state;

namespace {

constexpr long long ns_per_ms = 1'000'000;
constexpr long long ns_per_s = 1'000'000'000;

// now + ns, saturating: a sleep of centuries must not wrap into the past.
std::int64_t deadline_after(long long ns) {
  const std::int64_t now = sched::monotonic_ns();
  return ns > detail::no_deadline - now ? detail::no_deadline : now + ns;
}

fd_kind kind_of(int fd, fd_state& st) {
  fd_kind k = st.kind.load(std::memory_order_relaxed);
  if (k != fd_kind::unknown) return k;
  struct stat sb;
  const int saved = errno_now();
  if (::fstat(fd, &sb) != 0) {
    errno_now() = saved;
    return fd_kind::unknown;  // a bad descriptor: poll itself says POLLNVAL
  }
  k = S_ISSOCK(sb.st_mode) ? fd_kind::socket : fd_kind::other;
  st.kind.store(k, std::memory_order_relaxed);
  return k;
}

std::uint32_t directions(short events) {
  std::uint32_t d = 0;
  if (events & (POLLIN | POLLPRI | POLLRDNORM | POLLRDBAND | POLLRDHUP)) d |= detail::ready_in;
  if (events & (POLLOUT | POLLWRNORM | POLLWRBAND)) d |= detail::ready_out;
  // Nothing asked: poll still reports errors and hang-ups, which wake either.
  return d ? d : detail::ready_in | detail::ready_out;
}

// A parked poll that failed: EBADF means the descriptor was closed (io::close
// while it waited), which poll(2) reports as POLLNVAL, not as an error; it
// must not look again by number, which a new descriptor may have taken.
int closed_while_polling(pollfd& p, int saved_errno) {
  if (errno_now() != EBADF) return -1;
  errno_now() = saved_errno;
  p.revents = POLLNVAL;
  return 1;
}

}  // namespace

int poll(pollfd& p, int timeout_ms) {
  if (!caller_is_ult()) return ::poll(&p, 1, timeout_ms);
  fd_state* st = fd_lookup(p.fd);
  if (p.fd < 0) {
    // poll ignores a negative descriptor and just waits out the timeout.
    p.revents = 0;
    if (timeout_ms < 0) {
      for (;;) sched::sleep_until_ns(deadline_after(3600 * ns_per_s));
    }
    sched::sleep_until_ns(deadline_after(timeout_ms * ns_per_ms));  // the caller is a ULT
    return 0;
  }
  if (!st || kind_of(p.fd, *st) != fd_kind::socket) {
    if (timeout_ms == 0) return ::poll(&p, 1, 0);
    return detail::delegated_syscall([&] { return ::poll(&p, 1, timeout_ms); });
  }
  const std::uint32_t generation = st->current_generation();
  const std::int64_t deadline =
      timeout_ms < 0 ? detail::no_deadline : deadline_after(timeout_ms * ns_per_ms);
  for (;;) {
    const int r = ::poll(&p, 1, 0);
    if (r != 0 || timeout_ms == 0) return r;
    const int saved = errno_now();
    const int woke = detail::park_until_ready(p.fd, *st, generation, directions(p.events), deadline);
    if (woke < 0) return closed_while_polling(p, saved);
    if (woke == 0) return ::poll(&p, 1, 0);  // timed out: one last look
  }
}

namespace {

// ito::sleep_for / sleep_until: as the two below, but an OS thread sleeps its
// whole time (a signal does not cut it short) and errno is left alone.
void sleep_whole_until(long long deadline_ns) {
  if (caller_is_ult()) {
    sched::sleep_until_ns(deadline_ns);
    return;
  }
  if (deadline_ns < 0) return;
  const timespec ts{static_cast<time_t>(deadline_ns / ns_per_s),
                    static_cast<long>(deadline_ns % ns_per_s)};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

void sleep_whole_ns(long long nanoseconds) {
  if (nanoseconds < 0) nanoseconds = 0;
  if (caller_is_ult()) {
    sched::sleep_until_ns(deadline_after(nanoseconds));
    return;
  }
  sleep_whole_until(deadline_after(nanoseconds));
}

}  // namespace

int sleep_until_ns(long long deadline_ns) {
  if (caller_is_ult()) {
    sched::sleep_until_ns(deadline_ns);
    return 0;
  }
  if (deadline_ns < 0) return 0;
  const timespec ts{static_cast<time_t>(deadline_ns / ns_per_s),
                    static_cast<long>(deadline_ns % ns_per_s)};
  // clock_nanosleep returns its error instead of setting errno.
  if (const int e = ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr); e != 0) {
    errno_now() = e;
    return -1;
  }
  return 0;
}

int sleep_for_ns(long long nanoseconds) {
  if (nanoseconds < 0) nanoseconds = 0;
  if (caller_is_ult()) {
    sched::sleep_until_ns(deadline_after(nanoseconds));
    return 0;
  }
  const timespec ts{static_cast<time_t>(nanoseconds / ns_per_s),
                    static_cast<long>(nanoseconds % ns_per_s)};
  return ::nanosleep(&ts, nullptr);
}

int nanosleep(const timespec* request, timespec* remaining) {
  if (!caller_is_ult()) return ::nanosleep(request, remaining);
  if (!request) {
    errno_now() = EFAULT;
    return -1;
  }
  if (request->tv_sec < 0 || request->tv_nsec < 0 || request->tv_nsec >= ns_per_s) {
    errno_now() = EINVAL;
    return -1;
  }
  const long long ns = request->tv_sec > detail::no_deadline / ns_per_s - 1
                           ? detail::no_deadline
                           : request->tv_sec * ns_per_s + request->tv_nsec;
  sched::sleep_until_ns(deadline_after(ns));
  if (remaining) *remaining = timespec{0, 0};
  return 0;
}

}  // namespace ito::io

namespace ito::detail {

void sleep_ns(long long nanoseconds) { io::sleep_whole_ns(nanoseconds); }
void sleep_until_monotonic_ns(long long deadline_ns) { io::sleep_whole_until(deadline_ns); }

}  // namespace ito::detail
