// SPDX-License-Identifier: Apache-2.0
// Socket calls from ULTs: tried without blocking (MSG_DONTWAIT, or O_NONBLOCK
// set by ito where a call has no per-call flag), parked on the poller when
// they would block. read and write land here too, and fall back to
// delegation when the descriptor turns out not to be a socket.
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <limits.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "io/delegated_syscall.hpp"
#include "io/fairness.hpp"
#include "io/io_common.hpp"
#include "io/local_files.hpp"
#include "ito/delegate.hpp"
#include "ito/io.hpp"

namespace ito::io {

using detail::caller_is_ult;
using detail::errno_now;
using detail::delegated_syscall;
using detail::fd_kind;
using detail::fd_lookup;
using detail::fd_state;
using detail::ready_in;
using detail::ready_out;
using detail::retry_when_ready;
using detail::socket_timeout;
using detail::would_block;

namespace {

void note_socket(fd_state& st) noexcept {
  if (st.kind.load(std::memory_order_relaxed) != fd_kind::socket)
    st.kind.store(fd_kind::socket, std::memory_order_relaxed);
}

bool is_stream(int fd) noexcept {
  int type = 0;
  socklen_t len = sizeof type;
  const int saved = errno_now();
  const bool stream = ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
  errno_now() = saved;
  return stream;
}

bool stream_socket(int fd, fd_state& st) noexcept {
  std::int8_t known = st.stream.load(std::memory_order_relaxed);
  if (known < 0) {
    known = is_stream(fd) ? 1 : 0;
    st.stream.store(known, std::memory_order_relaxed);
  }
  return known != 0;
}

// recv with no flags (read, and the common recv): like retry_when_ready, but
// it remembers when the queue was left empty, so that the next call parks at
// once instead of making a system call that can only fail with EAGAIN. A
// request-response protocol saves one call per request (fd_state::drained_mark).
// SO_RCVTIMEO bounds the parks (`limit`): past it, one last recv decides.
ssize_t recv_plain(int fd, fd_state& st, std::uint32_t generation, void* buf, std::size_t count,
                   socket_timeout& limit) {
  const int saved = errno_now();
  for (;;) {
    const std::uint32_t edges = st.in_edges.load(std::memory_order_acquire);
    const std::uint64_t drained = (std::uint64_t{edges} << 1) | 1;
    if (st.drained_mark.load(std::memory_order_relaxed) != drained ||
        st.hung_up.load(std::memory_order_acquire) || limit.expired) {
      const ssize_t r = ::recv(fd, buf, count, MSG_DONTWAIT);
      if (r >= 0) {
        // A short read of a stream leaves its queue empty.
        const bool emptied =
            r > 0 && static_cast<std::size_t>(r) < count && stream_socket(fd, st);
        st.drained_mark.store(emptied ? drained : 0, std::memory_order_relaxed);
        errno_now() = saved;
        return r;
      }
      if (!would_block(errno_now()) || detail::program_wants_eagain(fd, st)) return -1;
      if (limit.expired) return -1;  // SO_RCVTIMEO passed: EAGAIN, as the kernel says
      note_socket(st);
      st.drained_mark.store(drained, std::memory_order_relaxed);
    } else if (detail::program_wants_eagain(fd, st)) {
      errno_now() = EAGAIN;
      return -1;
    }
    const int woke =
        detail::park_until_ready(fd, st, generation, ready_in, limit.deadline(fd), edges);
    if (woke < 0) return -1;
    if (woke == 0) limit.expired = true;
  }
}

ssize_t recv_in_ult(int fd, fd_state& st, void* buf, std::size_t count, int flags) {
  const std::uint32_t generation = st.current_generation();
  socket_timeout limit(SO_RCVTIMEO);
  if (flags == 0) return recv_plain(fd, st, generation, buf, count, limit);
  if (flags & MSG_DONTWAIT) return ::recv(fd, buf, count, flags);
  auto once = [&](std::size_t done) {
    return retry_when_ready(
        fd, st, generation, ready_in,
        [&] {
          return ::recv(fd, static_cast<char*>(buf) + done, count - done,
                        (flags & ~MSG_WAITALL) | MSG_DONTWAIT);
        },
        &limit);
  };
  ssize_t r = once(0);
  // MSG_WAITALL on a stream: keep going until full, end of stream or error,
  // as the blocking call does (a datagram is never split).
  if (r <= 0 || !(flags & MSG_WAITALL) || static_cast<std::size_t>(r) == count || !is_stream(fd))
    return r;
  std::size_t got = static_cast<std::size_t>(r);
  while (got < count) {
    const int saved = errno_now();
    r = once(got);
    if (r <= 0) {
      errno_now() = saved;
      break;
    }
    got += static_cast<std::size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

// A blocking send sends everything (unless an error comes after some bytes:
// then it reports what went out); a non-blocking one reports what fit.
ssize_t send_in_ult(int fd, fd_state& st, const void* buf, std::size_t count, int flags) {
  if (flags & MSG_DONTWAIT) return ::send(fd, buf, count, flags);
  const std::uint32_t generation = st.current_generation();
  socket_timeout limit(SO_SNDTIMEO);
  std::size_t sent = 0;
  const int saved = errno_now();
  do {
    const ssize_t r = retry_when_ready(
        fd, st, generation, ready_out,
        [&] {
          return ::send(fd, static_cast<const char*>(buf) + sent, count - sent,
                        flags | MSG_DONTWAIT);
        },
        &limit);
    if (r < 0) {
      if (sent == 0) return -1;
      break;
    }
    sent += static_cast<std::size_t>(r);
  } while (sent < count);
  errno_now() = saved;
  return static_cast<ssize_t>(sent);
}

// A plain OS thread's wait, in accept, on a listening socket that ito made
// non-blocking: until it is readable, with the blocking accept(2)'s answer to
// a signal. The kernel restarts accept after a handler with SA_RESTART and
// fails it with EINTR after one without; poll it never restarts, and which
// handler interrupted a poll cannot be told afterwards. So the thread does not
// wait in poll: a delegation pool thread (every signal blocked) polls the
// socket and then writes an eventfd, and this thread waits in read(2) on that
// eventfd, a call the kernel restarts exactly as it would have restarted
// accept (both end -ERESTARTSYS). Interrupted without SA_RESTART: the pool
// thread is told to stop (a second eventfd), waited for, and EINTR returned.
// With SO_RCVTIMEO set, accept is never restarted and gives up after the
// timeout with EAGAIN: that is poll's behaviour, so poll waits then.
// Returns 0 when the socket may be readable, -1 with errno.
int wait_to_accept_on_os_thread(int fd) {
  timeval limit{};
  socklen_t len = sizeof limit;
  const int saved = errno_now();
  if (::getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, &len) == 0 &&
      (limit.tv_sec != 0 || limit.tv_usec != 0)) {
    const long long ms = static_cast<long long>(limit.tv_sec) * 1000 + (limit.tv_usec + 999) / 1000;
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, ms > INT32_MAX ? -1 : static_cast<int>(ms));
    if (n < 0) return -1;
    if (n == 0) {
      errno_now() = EAGAIN;
      return -1;
    }
    return 0;
  }
  errno_now() = saved;
  const int ready = ::eventfd(0, EFD_CLOEXEC);
  const int stop = ready < 0 ? -1 : ::eventfd(0, EFD_CLOEXEC);
  if (stop < 0) {
    if (ready >= 0) ::close(ready);
    return -1;  // EMFILE, ENFILE, ENOMEM: as accept would say
  }
  auto watch = [fd, ready, stop] {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
    while (::poll(p, 2, -1) < 0 && errno == EINTR) {
    }
    const std::uint64_t one = 1;
    while (::write(ready, &one, sizeof one) < 0 && errno == EINTR) {
    }
  };
  os_future<void> watching;
  try {
    watching = delegation_pool().submit(watch);
  } catch (...) {  // no pool thread exists and none can start
    ::close(ready);
    ::close(stop);
    errno_now() = EAGAIN;
    return -1;
  }
  std::uint64_t value = 0;
  const ssize_t n = ::read(ready, &value, sizeof value);
  const int error = errno_now();
  if (n < 0) {
    const std::uint64_t one = 1;
    while (::write(stop, &one, sizeof one) < 0 && errno == EINTR) {
    }
    while (::read(ready, &value, sizeof value) < 0 && errno == EINTR) {
    }
  }
  watching.wait();  // it wrote `ready` last: the descriptors are ours again
  ::close(ready);
  ::close(stop);
  if (n < 0) {
    errno_now() = error;
    return -1;
  }
  errno_now() = saved;
  return 0;
}

// A socket call of a ULT succeeded: the descriptor is a socket, and the
// ULT's run of calls that did not park grows (io/fairness.hpp).
void socket_call_done(fd_state& st) noexcept {
  note_socket(st);
  detail::count_call_without_park();
}

}  // namespace

ssize_t recv(int fd, void* buf, std::size_t count, int flags) {
  fd_state* st = caller_is_ult() ? fd_lookup(fd) : nullptr;
  if (!st) return ::recv(fd, buf, count, flags);
  const ssize_t r = recv_in_ult(fd, *st, buf, count, flags);
  if (r >= 0) socket_call_done(*st);
  return r;
}

ssize_t send(int fd, const void* buf, std::size_t count, int flags) {
  fd_state* st = caller_is_ult() ? fd_lookup(fd) : nullptr;
  if (!st) return ::send(fd, buf, count, flags);
  const ssize_t r = send_in_ult(fd, *st, buf, count, flags);
  if (r >= 0) socket_call_done(*st);
  return r;
}

// read/write: a socket is read with recv (the same call with flags 0); any
// other descriptor says ENOTSOCK at once, without blocking, and is delegated
// from then on. `plain` is the system call, `on_socket` the parked version.
namespace {
template <class Plain, class OnSocket>
ssize_t socket_or_delegated(int fd, Plain plain, OnSocket on_socket) {
  if (!caller_is_ult()) return plain();
  fd_state* st = fd_lookup(fd);
  auto delegated = [&] { return delegated_syscall(plain); };
  if (!st) return fd < 0 ? plain() : delegated();
  const fd_kind kind = st->kind.load(std::memory_order_relaxed);
  if (kind == fd_kind::other || kind == fd_kind::local_file) return delegated();
  const int saved = errno_now();
  const ssize_t r = on_socket(*st);
  if (r >= 0) {
    socket_call_done(*st);
    return r;
  }
  if (errno_now() != ENOTSOCK) return -1;
  st->kind.store(fd_kind::other, std::memory_order_relaxed);
  errno_now() = saved;
  return delegated();
}
}  // namespace

ssize_t read(int fd, void* buf, std::size_t count) {
  if (caller_is_ult())
    if (fd_state* st = detail::local_file_entry(fd))
      return detail::read_local_file(fd, *st, buf, count, -1);
  return socket_or_delegated(
      fd, [=] { return ::read(fd, buf, count); },
      [=](fd_state& st) { return recv_in_ult(fd, st, buf, count, 0); });
}

ssize_t write(int fd, const void* buf, std::size_t count) {
  return socket_or_delegated(
      fd, [=] { return ::write(fd, buf, count); },
      [=](fd_state& st) { return send_in_ult(fd, st, buf, count, 0); });
}

// The message calls. A blocking recvmsg with MSG_WAITALL on a stream fills
// every buffer, and a blocking sendmsg sends everything (a stream may take
// part of it per call): both go on from where the last call left off, on a
// copy of the caller's iovec array (made only then).
namespace {

std::size_t iov_total(const msghdr& m) noexcept {
  std::size_t n = 0;
  for (std::size_t i = 0; i < m.msg_iovlen; ++i) n += m.msg_iov[i].iov_len;
  return n;
}

// The buffers of `m` after its first `done` bytes, in `rest` (m's copy).
void skip_iov(const msghdr& m, std::size_t done, std::vector<iovec>& rest, msghdr& out) {
  rest.clear();
  for (std::size_t i = 0; i < m.msg_iovlen; ++i) {
    iovec v = m.msg_iov[i];
    const std::size_t skip = done < v.iov_len ? done : v.iov_len;
    done -= skip;
    v.iov_base = static_cast<char*>(v.iov_base) + skip;
    v.iov_len -= skip;
    if (v.iov_len) rest.push_back(v);
  }
  out.msg_iov = rest.data();
  out.msg_iovlen = rest.size();
}

ssize_t recvmsg_in_ult(int fd, fd_state& st, msghdr* msg, int flags) {
  if (flags & MSG_DONTWAIT) return ::recvmsg(fd, msg, flags);
  const std::uint32_t generation = st.current_generation();
  socket_timeout limit(SO_RCVTIMEO);
  ssize_t r = retry_when_ready(
      fd, st, generation, ready_in,
      [&] { return ::recvmsg(fd, msg, (flags & ~MSG_WAITALL) | MSG_DONTWAIT); }, &limit);
  if (r <= 0 || !(flags & MSG_WAITALL)) return r;
  const std::size_t total = iov_total(*msg);
  if (static_cast<std::size_t>(r) >= total || !stream_socket(fd, st)) return r;
  std::size_t got = static_cast<std::size_t>(r);
  std::vector<iovec> rest;
  msghdr more{};
  const int saved = errno_now();
  while (got < total) {
    skip_iov(*msg, got, rest, more);
    r = retry_when_ready(
        fd, st, generation, ready_in,
        [&] { return ::recvmsg(fd, &more, (flags & ~MSG_WAITALL) | MSG_DONTWAIT); }, &limit);
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  errno_now() = saved;
  return static_cast<ssize_t>(got);
}

ssize_t sendmsg_in_ult(int fd, fd_state& st, const msghdr* msg, int flags) {
  if (flags & MSG_DONTWAIT) return ::sendmsg(fd, msg, flags);
  const std::uint32_t generation = st.current_generation();
  socket_timeout limit(SO_SNDTIMEO);
  const int saved = errno_now();
  ssize_t r = retry_when_ready(
      fd, st, generation, ready_out, [&] { return ::sendmsg(fd, msg, flags | MSG_DONTWAIT); },
      &limit);
  if (r < 0) return -1;
  const std::size_t total = iov_total(*msg);
  std::size_t sent = static_cast<std::size_t>(r);
  if (sent >= total) return r;
  // Only a stream sends part of a message: the rest goes without the address
  // and the control data, which went with the first part.
  std::vector<iovec> rest;
  msghdr more{};
  while (sent < total) {
    skip_iov(*msg, sent, rest, more);
    r = retry_when_ready(
        fd, st, generation, ready_out, [&] { return ::sendmsg(fd, &more, flags | MSG_DONTWAIT); },
        &limit);
    if (r < 0) break;
    sent += static_cast<std::size_t>(r);
  }
  errno_now() = saved;
  return static_cast<ssize_t>(sent);
}

// A call on a socket from a ULT; `plain` outside one (or for a descriptor
// beyond the table).
template <class Plain, class InUlt>
ssize_t on_socket(int fd, Plain plain, InUlt in_ult) {
  fd_state* st = caller_is_ult() ? fd_lookup(fd) : nullptr;
  if (!st) return plain();
  const ssize_t r = in_ult(*st);
  if (r >= 0) socket_call_done(*st);
  return r;
}

}  // namespace

ssize_t recvmsg(int fd, msghdr* msg, int flags) {
  return on_socket(
      fd, [&] { return ::recvmsg(fd, msg, flags); },
      [&](fd_state& st) { return recvmsg_in_ult(fd, st, msg, flags); });
}

ssize_t sendmsg(int fd, const msghdr* msg, int flags) {
  return on_socket(
      fd, [&] { return ::sendmsg(fd, msg, flags); },
      [&](fd_state& st) { return sendmsg_in_ult(fd, st, msg, flags); });
}

ssize_t recvfrom(int fd, void* buf, std::size_t count, int flags, sockaddr* addr,
                 socklen_t* addrlen) {
  if (!addr) return io::recv(fd, buf, count, flags);
  return on_socket(
      fd, [&] { return ::recvfrom(fd, buf, count, flags, addr, addrlen); },
      [&](fd_state& st) -> ssize_t {
        if (flags & MSG_DONTWAIT) return ::recvfrom(fd, buf, count, flags, addr, addrlen);
        iovec v{buf, count};
        msghdr m{};
        m.msg_name = addr;
        m.msg_namelen = addrlen ? *addrlen : 0;
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        const ssize_t r = recvmsg_in_ult(fd, st, &m, flags);
        if (r >= 0 && addrlen) *addrlen = m.msg_namelen;
        return r;
      });
}

ssize_t sendto(int fd, const void* buf, std::size_t count, int flags, const sockaddr* addr,
               socklen_t addrlen) {
  if (!addr) return io::send(fd, buf, count, flags);
  return on_socket(
      fd, [&] { return ::sendto(fd, buf, count, flags, addr, addrlen); },
      [&](fd_state& st) -> ssize_t {
        if (flags & MSG_DONTWAIT) return ::sendto(fd, buf, count, flags, addr, addrlen);
        iovec v{const_cast<void*>(buf), count};
        msghdr m{};
        m.msg_name = const_cast<sockaddr*>(addr);
        m.msg_namelen = addrlen;
        m.msg_iov = &v;
        m.msg_iovlen = 1;
        return sendmsg_in_ult(fd, st, &m, flags);
      });
}

// readv/writev: recvmsg/sendmsg with no flags on a socket, delegated on
// anything else (as read/write). A count out of range fails at once.
ssize_t readv(int fd, const iovec* iov, int iovcnt) {
  if (iovcnt < 0 || iovcnt > IOV_MAX) return ::readv(fd, iov, iovcnt);
  return socket_or_delegated(
      fd, [=] { return ::readv(fd, iov, iovcnt); },
      [=](fd_state& st) {
        msghdr m{};
        m.msg_iov = const_cast<iovec*>(iov);
        m.msg_iovlen = static_cast<std::size_t>(iovcnt);
        return recvmsg_in_ult(fd, st, &m, 0);
      });
}

ssize_t writev(int fd, const iovec* iov, int iovcnt) {
  if (iovcnt < 0 || iovcnt > IOV_MAX) return ::writev(fd, iov, iovcnt);
  return socket_or_delegated(
      fd, [=] { return ::writev(fd, iov, iovcnt); },
      [=](fd_state& st) {
        msghdr m{};
        m.msg_iov = const_cast<iovec*>(iov);
        m.msg_iovlen = static_cast<std::size_t>(iovcnt);
        return sendmsg_in_ult(fd, st, &m, 0);
      });
}

int accept4(int fd, sockaddr* addr, socklen_t* addrlen, int flags) {
  fd_state* st = fd_lookup(fd);
  int r;
  if (!st) {
    r = caller_is_ult() && fd >= 0
            ? delegated_syscall([&] { return ::accept4(fd, addr, addrlen, flags); })
            : ::accept4(fd, addr, addrlen, flags);
  } else if (!caller_is_ult()) {
    // An OS thread blocks, as the call would; if ito made the socket
    // non-blocking, it waits for it as accept(2) would have waited, signals
    // included (wait_to_accept_on_os_thread).
    for (;;) {
      r = ::accept4(fd, addr, addrlen, flags);
      if (r >= 0 || !would_block(errno_now()) || !st->ito_nonblock.load(std::memory_order_relaxed)) break;
      if (wait_to_accept_on_os_thread(fd) < 0) return -1;
    }
  } else {
    const std::uint32_t generation = st->current_generation();
    if (!st->ito_nonblock.load(std::memory_order_relaxed) &&
        st->user_nonblock.load(std::memory_order_relaxed) < 0) {
      // First accept here: check it is a listening socket before touching its
      // flags (accept's own errors: ENOTSOCK, EBADF, EINVAL).
      int listening = 0;
      socklen_t len = sizeof listening;
      if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0) return -1;
      if (!listening) {
        errno_now() = EINVAL;
        return -1;
      }
      const int fl = ::fcntl(fd, F_GETFL);
      if (fl < 0) return -1;
      if (fl & O_NONBLOCK) {
        st->user_nonblock.store(1, std::memory_order_relaxed);
      } else {
        if (::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
        st->user_nonblock.store(0, std::memory_order_relaxed);
        st->ito_nonblock.store(true, std::memory_order_relaxed);
      }
      note_socket(*st);
    }
    socket_timeout limit(SO_RCVTIMEO);  // accept(2) gives up after it with EAGAIN too
    r = static_cast<int>(retry_when_ready(
        fd, *st, generation, ready_in, [&] { return ::accept4(fd, addr, addrlen, flags); },
        &limit));
  }
  if (r >= 0) {
    // A new descriptor: whatever was known about this number is stale.
    if (fd_state* fresh = fd_lookup(r)) {
      fresh->reset(fd_kind::socket);
      fresh->user_nonblock.store((flags & SOCK_NONBLOCK) ? 1 : 0, std::memory_order_relaxed);
    }
  }
  return r;
}

int accept(int fd, sockaddr* addr, socklen_t* addrlen) { return io::accept4(fd, addr, addrlen, 0); }

int connect(int fd, const sockaddr* addr, socklen_t addrlen) {
  if (!caller_is_ult()) {
    if (fd_state* known = detail::fd_find(fd)) known->reset(fd_kind::unknown);
    return ::connect(fd, addr, addrlen);
  }
  fd_state* st = fd_lookup(fd);
  if (st) st->reset(fd_kind::unknown);  // a socket about to get a new life
  if (!st) {
    return fd < 0 ? ::connect(fd, addr, addrlen)
                  : delegated_syscall([&] { return ::connect(fd, addr, addrlen); });
  }
  const std::uint32_t generation = st->current_generation();
  const int fl = ::fcntl(fd, F_GETFL);
  if (fl < 0) return -1;
  if (fl & O_NONBLOCK) {
    st->user_nonblock.store(1, std::memory_order_relaxed);
    return ::connect(fd, addr, addrlen);
  }
  // connect has no per-call non-blocking flag: set O_NONBLOCK for the call
  // only, then wait for the socket to become writable.
  if (::fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return -1;
  const int saved = errno_now();
  int r = ::connect(fd, addr, addrlen);
  const int err = errno_now();
  ::fcntl(fd, F_SETFL, fl);
  st->user_nonblock.store(0, std::memory_order_relaxed);
  if (r == 0) {
    note_socket(*st);
    errno_now() = saved;
    return 0;
  }
  if (err != EINPROGRESS) {
    errno_now() = err;
    return -1;
  }
  note_socket(*st);
  for (;;) {
    if (detail::park_until_ready(fd, *st, generation, ready_out) < 0) return -1;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 0) < 0) return -1;
    if (p.revents & POLLNVAL) {
      errno_now() = EBADF;
      return -1;
    }
    if (p.revents) break;  // connected, or failed: SO_ERROR says which
  }
  int so_error = 0;
  socklen_t len = sizeof so_error;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) return -1;
  if (so_error != 0) {
    errno_now() = so_error;
    return -1;
  }
  errno_now() = saved;
  return 0;
}

}  // namespace ito::io
