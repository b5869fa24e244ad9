// SPDX-License-Identifier: Apache-2.0
// ito::io on sockets: a loopback echo with many concurrent ULT clients, a
// large transfer that parks on writability, poll with a timeout that does not
// stall the worker, close waking a parked reader, and the errno of misuse.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "io/fd_table.hpp"
#include "ito/io.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;

// Enough descriptors for n connections (two ends each) plus slack.
void allow_descriptors(rlim_t n) {
  rlimit r{};
  getrlimit(RLIMIT_NOFILE, &r);
  if (r.rlim_cur < n) {
    r.rlim_cur = std::min(n, r.rlim_max);
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

// A listening socket on 127.0.0.1 with a kernel-chosen port.
int listen_loopback(int* port, int backlog = 4096) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  if (::listen(fd, backlog) != 0) return -1;
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return a;
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  if (ito::io::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Echoes until the peer closes.
void echo(int fd) {
  char buf[4096];
  for (;;) {
    ssize_t n = ito::io::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    if (ito::io::send(fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
  }
  ito::io::close(fd);
}

TEST(io_socket, echo_with_a_thousand_concurrent_ult_clients) {
  const std::size_t clients = ito::test::scaled(1000) < 10 ? 10 : ito::test::scaled(1000);
  allow_descriptors(2 * clients + 64);
  std::atomic<std::size_t> ok{0};
  ito::start_main_thread_with_worker_size(2, [&] {
    int port = 0;
    const int lfd = listen_loopback(&port);
    ASSERT_GE(lfd, 0);
    auto server = ito::create_thread([&] {
      std::vector<ito::future<void>> conns;
      for (std::size_t i = 0; i < clients; ++i) {
        int c = ito::io::accept(lfd, nullptr, nullptr);
        ASSERT_GE(c, 0) << std::strerror(errno);
        conns.push_back(ito::create_thread(echo, c));
      }
      for (auto& f : conns) ito::join(std::move(f));
    });
    std::vector<ito::future<void>> cs;
    for (std::size_t i = 0; i < clients; ++i)
      cs.push_back(ito::create_thread([&, i] {
        int fd = connect_loopback(port);
        ASSERT_GE(fd, 0) << std::strerror(errno);
        // All clients are connected and waiting at once before any reply.
        const std::string msg = "client " + std::to_string(i) + std::string(i % 7 * 100, 'x');
        ASSERT_EQ(ito::io::send(fd, msg.data(), msg.size(), 0), static_cast<ssize_t>(msg.size()));
        std::string back(msg.size(), '\0');
        ASSERT_EQ(ito::io::recv(fd, back.data(), back.size(), MSG_WAITALL),
                  static_cast<ssize_t>(back.size()));
        EXPECT_EQ(back, msg);
        EXPECT_EQ(ito::io::close(fd), 0);
        ++ok;
      }));
    for (auto& f : cs) ito::join(std::move(f));
    ito::join(std::move(server));
    ito::io::close(lfd);
  });
  EXPECT_EQ(ok.load(), clients);
}

TEST(io_socket, a_large_transfer_parks_on_writability_and_keeps_every_byte) {
  const std::size_t bytes = ito::test::scaled(8u << 20) < (1u << 20) ? 1u << 20 : ito::test::scaled(8u << 20);
  ito::start_main_thread_with_worker_size(2, [bytes] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    std::vector<unsigned char> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 131 + 7);
    // One send of everything: the socket buffer fills, the sender parks
    // until the reader drains it, and the blocking semantics send it all.
    auto writer = ito::create_thread([&] {
      EXPECT_EQ(ito::io::write(sv[0], out.data(), out.size()), static_cast<ssize_t>(bytes));
      ito::io::close(sv[0]);
    });
    std::vector<unsigned char> in(bytes);
    std::size_t got = 0;
    for (;;) {
      ssize_t n = ito::io::read(sv[1], in.data() + got, in.size() - got);
      ASSERT_GE(n, 0) << std::strerror(errno);
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    EXPECT_EQ(got, bytes);
    EXPECT_TRUE(in == out);
    ito::join(std::move(writer));
    ito::io::close(sv[1]);
  });
}

// After a short read ito parks without trying the next read (nothing can have
// arrived without an edge); data sent in bursts at random moments by a plain
// thread, read with buffers that are sometimes short and sometimes not, must
// all arrive in order, with no read left waiting on data already there.
TEST(io_socket, reads_after_short_reads_miss_nothing) {
  const std::size_t bursts = ito::test::scaled(3000) < 300 ? 300 : ito::test::scaled(3000);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  std::thread writer([&] {
    unsigned seed = 12345;
    std::uint8_t next = 0;
    for (std::size_t b = 0; b < bursts; ++b) {
      seed = seed * 1103515245 + 12345;
      std::uint8_t chunk[300];
      const std::size_t len = 1 + (seed >> 16) % sizeof chunk;
      for (std::size_t i = 0; i < len; ++i) chunk[i] = next++;
      ASSERT_EQ(::send(sv[0], chunk, len, 0), static_cast<ssize_t>(len));
      if ((seed >> 8) % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds((seed >> 4) % 300));
    }
    ::shutdown(sv[0], SHUT_WR);
  });
  std::size_t got = 0;
  bool in_order = true;
  ito::start_main_thread_with_worker_size(2, [&] {
    ito::join(ito::create_thread([&] {
      std::uint8_t expect = 0, buf[512];
      for (std::size_t turn = 0;; ++turn) {
        const std::size_t want = turn % 3 == 0 ? 7 : sizeof buf;  // full, or likely short
        ssize_t n = ito::io::read(sv[1], buf, want);
        ASSERT_GE(n, 0) << std::strerror(errno);
        if (n == 0) break;
        for (ssize_t i = 0; i < n; ++i) in_order = in_order && buf[i] == expect++;
        got += static_cast<std::size_t>(n);
      }
    }));
  });
  writer.join();
  EXPECT_TRUE(in_order);
  EXPECT_GT(got, bursts);
  ito::io::close(sv[0]);
  ito::io::close(sv[1]);
}

// A ULT that counts its turns until told to stop.
struct ticker {
  std::atomic<bool> stop{false};
  std::atomic<long> ticks{0};
  void run() {
    while (!stop.load()) {
      ticks.fetch_add(1);
      ito::yield();
    }
  }
};

TEST(io_socket, poll_times_out_without_stalling_the_worker_and_sees_data) {
  ito::start_main_thread_with_worker_size(1, [] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ticker t;
    auto tick = ito::create_thread([&] { t.run(); });
    pollfd p{sv[1], POLLIN, 0};
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(ito::io::poll(p, 60), 0);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 60ms);
    EXPECT_GT(t.ticks.load(), 0) << "poll blocked the only worker";
    // Data written by another ULT while we wait wakes us.
    auto writer = ito::create_thread([&] {
      ito::sleep_for(20ms);
      EXPECT_EQ(ito::io::write(sv[0], "x", 1), 1);
    });
    p.revents = 0;
    EXPECT_EQ(ito::io::poll(p, 5000), 1);
    EXPECT_TRUE(p.revents & POLLIN);
    ito::join(std::move(writer));
    // Writable at once.
    pollfd w{sv[0], POLLOUT, 0};
    EXPECT_EQ(ito::io::poll(w, -1), 1);
    EXPECT_TRUE(w.revents & POLLOUT);
    t.stop = true;
    ito::join(std::move(tick));
    ito::io::close(sv[0]);
    ito::io::close(sv[1]);
  });
}

// SO_RCVTIMEO/SO_SNDTIMEO bound a parked call, as the kernel's: -1 with
// EAGAIN after the time-out (it waited forever before), the worker running
// others meanwhile; data that comes first is read as usual.
TEST(io_socket, socket_timeouts_end_a_parked_call_with_eagain) {
  ito::start_main_thread_with_worker_size(1, [] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    const timeval limit{0, 60'000};
    ASSERT_EQ(::setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit), 0);
    ASSERT_EQ(::setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit), 0);
    ticker t;
    auto tick = ito::create_thread([&] { t.run(); });
    char buf[8];
    for (int flags : {0, int{MSG_WAITALL}}) {  // recv_plain and retry_when_ready
      errno = 0;
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(ito::io::recv(sv[1], buf, sizeof buf, flags), -1);
      EXPECT_EQ(errno, EAGAIN);
      EXPECT_GE(std::chrono::steady_clock::now() - t0, 55ms);
    }
    iovec v{buf, sizeof buf};
    errno = 0;
    EXPECT_EQ(ito::io::readv(sv[1], &v, 1), -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_GT(t.ticks.load(), 0) << "the time-out blocked the only worker";
    // Data that comes before the time-out is read.
    auto writer = ito::create_thread([&] {
      ito::sleep_for(10ms);
      EXPECT_EQ(ito::io::write(sv[0], "x", 1), 1);
    });
    EXPECT_EQ(ito::io::read(sv[1], buf, sizeof buf), 1);
    ito::join(std::move(writer));
    // A full socket: send times out.
    static char chunk[4096];
    while (::send(sv[1], chunk, sizeof chunk, MSG_DONTWAIT) > 0) {
    }
    errno = 0;
    EXPECT_EQ(ito::io::send(sv[1], "y", 1, 0), -1);
    EXPECT_EQ(errno, EAGAIN);
    t.stop = true;
    ito::join(std::move(tick));
    ito::io::close(sv[0]);
    ito::io::close(sv[1]);
  });
}

TEST(io_socket, close_wakes_a_parked_reader_with_ebadf) {
  ito::start_main_thread_with_worker_size(2, [] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    std::atomic<bool> reading{false};
    auto reader = ito::create_thread([&] {
      char c;
      reading = true;
      ssize_t n = ito::io::recv(sv[1], &c, 1, 0);
      EXPECT_EQ(n, -1);
      EXPECT_EQ(errno, EBADF);
    });
    while (!reading.load()) ito::yield();
    // Until it is parked on the descriptor (on a loaded machine its worker
    // may be preempted for long between `reading` and the park).
    ito::detail::fd_state& st = *ito::detail::fd_lookup(sv[1]);
    for (;;) {
      st.lock.lock();
      const bool parked = st.waiters != nullptr;
      st.lock.unlock();
      if (parked) break;
      ito::sleep_for(1ms);
    }
    EXPECT_EQ(ito::io::close(sv[1]), 0);
    ito::join(std::move(reader));
    ito::io::close(sv[0]);
  });
}

// --- close while a ULT is parked, and the number is reused at once ---------
//
// A ULT parked in a call on descriptor X is woken by io::close(X). By the time
// it runs, a new socket may have taken the number X and be ready: the woken
// call must fail with EBADF (poll: POLLNVAL), as its own descriptor is gone,
// and never touch the stranger that took the number. At one worker the
// sequence is deterministic: the woken ULT cannot run until the new socket
// exists and is ready.

// Until a ULT is parked on fd's entry.
void wait_until_parked(int fd) {
  ito::detail::fd_state& st = *ito::detail::fd_lookup(fd);
  for (;;) {
    st.lock.lock();
    const bool parked = st.waiters != nullptr;
    st.lock.unlock();
    if (parked) return;
    ito::sleep_for(1ms);
  }
}

// A connected pair one of whose ends has the number `want` (the lowest free
// one, just released by close); `mine` is that end, `peer` the other.
struct successor_pair {
  int mine = -1, peer = -1;
  explicit successor_pair(int want) {
    int nv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, nv) != 0) return;
    const int m = nv[0] == want ? 0 : 1;
    mine = nv[m];
    peer = nv[1 - m];
  }
  ~successor_pair() {
    ito::io::close(mine);
    ito::io::close(peer);
  }
};

struct call_outcome {
  long result = 0;
  int error = 0;
};

// Runs call(victim) in a ULT, closes victim once it is parked, lets
// make_successor() take the number at once (it returns the number it got),
// then joins and returns what the call returned.
template <class Call, class MakeSuccessor>
call_outcome close_under_a_parked_call(int victim, Call call, MakeSuccessor make_successor) {
  call_outcome out;
  auto caller = ito::create_thread([&] {
    out.result = static_cast<long>(call(victim));
    out.error = errno;
  });
  wait_until_parked(victim);
  EXPECT_EQ(ito::io::close(victim), 0);
  EXPECT_EQ(make_successor(), victim) << "the new descriptor did not reuse the number";
  ito::join(std::move(caller));
  return out;
}

class io_close_reuse : public ::testing::TestWithParam<unsigned> {};

TEST_P(io_close_reuse, a_parked_reader_gets_ebadf_not_the_new_connections_data) {
  using reader_fn = ssize_t (*)(int);
  const reader_fn readers[] = {
      [](int fd) { char b[16]; return ito::io::recv(fd, b, sizeof b, 0); },
      [](int fd) { char b[16]; return ito::io::read(fd, b, sizeof b); },
      [](int fd) { char b[16]; return ito::io::recv(fd, b, sizeof b, MSG_PEEK); },
      [](int fd) { char b[8]; return ito::io::recv(fd, b, sizeof b, MSG_WAITALL); },
  };
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    for (reader_fn reader : readers) {
      int sv[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
      std::optional<successor_pair> next;
      const call_outcome out = close_under_a_parked_call(sv[1], reader, [&] {
        next.emplace(sv[1]);
        EXPECT_EQ(::send(next->peer, "stranger", 8, 0), 8);
        return next->mine;
      });
      EXPECT_EQ(out.result, -1) << "the woken reader read the new connection";
      EXPECT_EQ(out.error, EBADF);
      ito::io::close(sv[0]);
    }
  });
}

TEST_P(io_close_reuse, a_parked_writer_gets_ebadf_and_writes_nothing_to_the_new_connection) {
  using writer_fn = ssize_t (*)(int);
  const writer_fn writers[] = {
      [](int fd) { return ito::io::send(fd, "w", 1, MSG_NOSIGNAL); },
      [](int fd) { return ito::io::write(fd, "w", 1); },
  };
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    for (writer_fn writer : writers) {
      int sv[2];
      ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
      // Fill sv[1]'s way to its peer, so that the writer parks at once.
      const int small = 4096;
      ::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
      char chunk[4096] = {};
      while (::send(sv[1], chunk, sizeof chunk, MSG_DONTWAIT) > 0) {
      }
      std::optional<successor_pair> next;
      const call_outcome out =
          close_under_a_parked_call(sv[1], writer, [&] {
            next.emplace(sv[1]);
            return next->mine;
          });
      EXPECT_EQ(out.result, -1) << "the woken writer wrote to the new connection";
      EXPECT_EQ(out.error, EBADF);
      char c;
      EXPECT_EQ(::recv(next->peer, &c, 1, MSG_DONTWAIT), -1) << "a byte reached the stranger";
      ito::io::close(sv[0]);
    }
  });
}

TEST_P(io_close_reuse, a_parked_acceptor_gets_ebadf_not_the_new_listeners_client) {
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    int port = 0;
    const int lfd = listen_loopback(&port, 16);
    ASSERT_GE(lfd, 0);
    int next = -1, client = -1;
    const call_outcome out = close_under_a_parked_call(
        lfd, [](int fd) { return ito::io::accept(fd, nullptr, nullptr); },
        [&] {
          int next_port = 0;
          next = listen_loopback(&next_port, 16);
          client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
          sockaddr_in a = loopback(next_port);
          EXPECT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
          return next;
        });
    EXPECT_EQ(out.result, -1) << "the woken acceptor took the new listener's client";
    EXPECT_EQ(out.error, EBADF);
    if (out.result >= 0) ito::io::close(static_cast<int>(out.result));
    ito::io::close(client);
    ito::io::close(next);
  });
}

TEST_P(io_close_reuse, a_parked_poll_reports_pollnval_not_the_new_sockets_readiness) {
  ito::start_main_thread_with_worker_size(GetParam(), [&] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    short revents = 0;
    std::optional<successor_pair> next;
    const call_outcome out = close_under_a_parked_call(
        sv[1],
        [&](int fd) {
          pollfd p{fd, POLLIN, 0};
          const int r = ito::io::poll(p, -1);
          revents = p.revents;
          return r;
        },
        [&] {
          next.emplace(sv[1]);
          EXPECT_EQ(::send(next->peer, "stranger", 8, 0), 8);
          return next->mine;
        });
    EXPECT_EQ(out.result, 1);
    EXPECT_EQ(revents, POLLNVAL) << "poll reported the new socket's readiness";
    ito::io::close(sv[0]);
  });
}

INSTANTIATE_TEST_SUITE_P(workers, io_close_reuse, ::testing::Values(1u, 2u));

TEST(io_socket, a_socket_the_program_made_non_blocking_gets_eagain) {
  ito::start_main_thread_with_worker_size(1, [] {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    char c;
    EXPECT_EQ(ito::io::recv(sv[1], &c, 1, 0), -1);
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_EQ(ito::io::read(sv[1], &c, 1), -1);
    EXPECT_EQ(errno, EAGAIN);
    ito::io::close(sv[0]);
    ito::io::close(sv[1]);
  });
}

// The same checks from a ULT and from a plain thread: errno as the call gives.
void check_misuse() {
  char c = 0;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  ASSERT_EQ(ito::io::close(sv[0]), 0);
  const int closed = sv[0];
  errno = 0;
  EXPECT_EQ(ito::io::recv(closed, &c, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::send(closed, &c, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::read(closed, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::write(closed, &c, 1), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::close(closed), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::recv(-1, &c, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::accept(-5, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EBADF);
  // Not a socket, and not a listening socket.
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  EXPECT_EQ(ito::io::accept(p[0], nullptr, nullptr), -1);
  EXPECT_EQ(errno, ENOTSOCK);
  EXPECT_EQ(ito::io::accept(sv[1], nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  // Nobody listens on a port just released.
  int port = 0;
  int l = listen_loopback(&port);
  ::close(l);
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = loopback(port);
  EXPECT_EQ(ito::io::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  // Writing to a socket whose peer is gone: EPIPE (no SIGPIPE, as asked).
  EXPECT_EQ(ito::io::send(sv[1], "x", 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);
  // errno is left alone by a call that succeeds.
  int ok[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ok), 0);
  errno = 12345;
  EXPECT_EQ(ito::io::send(ok[0], "y", 1, 0), 1);
  EXPECT_EQ(ito::io::recv(ok[1], &c, 1, 0), 1);
  EXPECT_EQ(errno, 12345);
  ito::io::close(ok[0]);
  ito::io::close(ok[1]);
  ito::io::close(s);
  ito::io::close(sv[1]);
  ito::io::close(p[0]);
  ito::io::close(p[1]);
}

TEST(io_socket, misuse_gives_the_system_calls_errno_from_a_ult) {
  ito::start_main_thread_with_worker_size(2, [] { check_misuse(); });
}

TEST(io_socket, misuse_gives_the_system_calls_errno_outside_a_ult) { check_misuse(); }

TEST(io_socket, accept_from_a_thread_after_ito_made_the_socket_non_blocking) {
  int port = 0;
  const int lfd = listen_loopback(&port, 16);
  ASSERT_GE(lfd, 0);
  ito::start_main_thread_with_worker_size(1, [&] {
    auto client = ito::create_thread([&] { ito::io::close(connect_loopback(port)); });
    int c = ito::io::accept(lfd, nullptr, nullptr);
    EXPECT_GE(c, 0);
    ito::io::close(c);
    ito::join(std::move(client));
  });
  // A plain thread still blocks until a client comes (in poll).
  std::thread client([&] {
    std::this_thread::sleep_for(30ms);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(port);
    ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::close(fd);
  });
  int c = ito::io::accept(lfd, nullptr, nullptr);
  EXPECT_GE(c, 0) << std::strerror(errno);
  ito::io::close(c);
  client.join();
  ito::io::close(lfd);
}

}  // namespace
