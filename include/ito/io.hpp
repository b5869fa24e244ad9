// SPDX-License-Identifier: Apache-2.0
// ito::io: system calls that never stall a worker. Each function has the shape
// of its system call: it returns what the call returns, and -1 with errno set
// as the call sets it (errno is left alone on success).
//
// From a ULT:
//  - sockets never block the worker: the call is tried without blocking, and
//    if it would block, the ULT is parked until the epoll poller thread sees
//    the socket ready and makes exactly that ULT runnable again;
//  - files, pipes, terminals and everything else are delegated to the
//    delegation pool (ito/delegate.hpp), in the default delegation mode;
//  - nanosleep suspends the ULT on the runtime's timers (ito::sleep_for,
//    in ito/ult.hpp, is ito's sleep).
// Outside a ULT, each function is the plain system call on the calling thread.
//
// A blocking socket keeps its blocking semantics (the ULT waits; send and
// write send everything); a socket the program set O_NONBLOCK on gets EAGAIN
// as usual; a socket's SO_RCVTIMEO/SO_SNDTIMEO bound the wait (then -1 with
// EAGAIN, as the kernel). Limits (docs/IO.md): close sockets with io::close,
// or call io::forget(fd) after closing or changing O_NONBLOCK by other means.
#pragma once

#include "ito/cxx20.hpp"
#include "ito/ult.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <chrono>
#include <cstddef>
#include <limits>

namespace ito::io {

ssize_t read(int fd, void* buf, std::size_t count);
ssize_t write(int fd, const void* buf, std::size_t count);
ssize_t pread(int fd, void* buf, std::size_t count, off_t offset);
ssize_t pwrite(int fd, const void* buf, std::size_t count, off_t offset);

int open(const char* path, int flags, mode_t mode = 0);
// Ends every call parked on fd: each fails with EBADF (poll: POLLNVAL) and
// never retries on the number, which a new descriptor may take at once.
int close(int fd);
int fsync(int fd);

// The first accept from a ULT on a listening socket sets O_NONBLOCK on it
// (accept has no per-call non-blocking flag); ito keeps waiting for the
// program as before, and an accept from outside a ULT then waits with poll.
int accept(int fd, sockaddr* addr, socklen_t* addrlen);
int accept4(int fd, sockaddr* addr, socklen_t* addrlen, int flags);
int connect(int fd, const sockaddr* addr, socklen_t addrlen);
ssize_t recv(int fd, void* buf, std::size_t count, int flags);
ssize_t send(int fd, const void* buf, std::size_t count, int flags);
// The address and message forms, as recv/send; readv/writev as read/write
// (a socket parks on the poller, anything else is delegated).
ssize_t recvfrom(int fd, void* buf, std::size_t count, int flags, sockaddr* addr,
                 socklen_t* addrlen);
ssize_t sendto(int fd, const void* buf, std::size_t count, int flags, const sockaddr* addr,
               socklen_t addrlen);
ssize_t recvmsg(int fd, msghdr* msg, int flags);
ssize_t sendmsg(int fd, const msghdr* msg, int flags);
ssize_t readv(int fd, const iovec* iov, int iovcnt);
ssize_t writev(int fd, const iovec* iov, int iovcnt);

// poll(2) on one descriptor: returns 1 (p.revents set), 0 on timeout, or -1.
// timeout_ms < 0 waits forever. io::close(p.fd) meanwhile: 1 with POLLNVAL.
int poll(pollfd& p, int timeout_ms);

// nanosleep(2): EINVAL for a bad request; a ULT is never interrupted, so rem
// (if given) is set to zero.
int nanosleep(const timespec* request, timespec* remaining);
// The sleeps that were io's own: use ito::sleep_for / ito::sleep_until
// (ito/ult.hpp), which do the same from a ULT or any other thread.
[[deprecated("use ito::sleep_for(std::chrono::nanoseconds(n))")]]
int sleep_for_ns(long long nanoseconds);
[[deprecated("use ito::sleep_until")]]
int sleep_until_ns(long long monotonic_deadline_ns);

template <class Rep, class Period>
[[deprecated("use ito::sleep_for")]] int sleep_for(std::chrono::duration<Rep, Period> d) {
  ito::sleep_for(d);
  return 0;
}
template <class Duration>
[[deprecated("use ito::sleep_until")]] int sleep_until(
    std::chrono::time_point<std::chrono::steady_clock, Duration> t) {
  ito::sleep_until(t);
  return 0;
}

// Drops what ito remembers about fd (its kind, its epoll registration, its
// O_NONBLOCK flag): needed only after closing fd or changing its flags with
// plain system calls. ULTs parked on fd are woken and retry their calls.
void forget(int fd) noexcept;

}  // namespace ito::io
