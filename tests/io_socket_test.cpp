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
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
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
      ito::io::sleep_for(20ms);
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
      ito::io::sleep_for(1ms);
    }
    EXPECT_EQ(ito::io::close(sv[1]), 0);
    ito::join(std::move(reader));
    ito::io::close(sv[0]);
  });
}

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
