// SPDX-License-Identifier: Apache-2.0
// A plain OS thread blocked in io::accept (and in the POSIX layer's accept) on
// a listening socket that ito made non-blocking (a ULT accepted on it first)
// answers a signal as a blocking accept(2) does: after a handler installed
// with SA_RESTART (what signal() installs) it stays blocked and then accepts a
// real connection; after a handler without SA_RESTART it fails with EINTR; on
// a socket with SO_RCVTIMEO it is never restarted and times out with EAGAIN.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "ito/io.hpp"
#include "ito/thread.hpp"

extern "C" int ito_accept(int fd, sockaddr* addr, socklen_t* addrlen);  // the POSIX layer's

namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto generous = 60s;  // bounded waits: a loaded 2-core machine

std::atomic<int> g_handled{0};
void on_signal(int) { g_handled.fetch_add(1, std::memory_order_relaxed); }

int listen_loopback(int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) return -1;
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The thread's scheduling state from /proc ('S': asleep in the kernel), or 0
// once it is gone.
char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return 0;
  const std::size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() ? line[close + 2] : 0;
}

enum class layer { io, posix };

struct acceptor {
  std::atomic<pid_t> tid{0};
  std::atomic<bool> returned{false};
  int result = 0;
  int error = 0;
  std::thread thread;

  int listening;

  acceptor(layer l, int fd) : listening(fd) {
    thread = std::thread([this, l, fd] {
      tid.store(static_cast<pid_t>(::syscall(SYS_gettid)));
      const int r = l == layer::io ? ito::io::accept(fd, nullptr, nullptr) : ito_accept(fd, nullptr, nullptr);
      error = errno;
      result = r;
      returned.store(true, std::memory_order_release);
    });
  }
  // True once the thread sleeps in the kernel (in its accept, as far as a
  // test can tell), false if it returned first or the wait ran out.
  bool asleep() const {
    const auto end = clock_type::now() + generous;
    while (clock_type::now() < end && !returned.load(std::memory_order_acquire)) {
      const pid_t t = tid.load();
      if (t != 0 && thread_state(t) == 'S') return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }
  void join() { thread.join(); }
  // A failed assertion leaves it blocked: shutting the socket down ends it.
  ~acceptor() {
    if (!thread.joinable()) return;
    if (!returned.load()) ::shutdown(listening, SHUT_RDWR);
    thread.join();
  }
};

// A listening socket that a ULT accepted on first: ito made it non-blocking
// (recorded as ito's), so a plain thread's accept waits the emulated way.
int socket_ito_made_nonblocking(int* port) {
  const int lfd = listen_loopback(port);
  if (lfd < 0) return -1;
  const int client = connect_loopback(*port);
  const int served = ito::io::accept(lfd, nullptr, nullptr);  // the main ULT
  if (client < 0 || served < 0) return -1;
  ::close(client);
  ito::io::close(served);
  return lfd;
}

class accept_on_os_thread : public ::testing::TestWithParam<layer> {};

TEST_P(accept_on_os_thread, is_restarted_after_a_handler_with_sa_restart_and_then_accepts) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan's signal() installs its own handler without SA_RESTART";
#endif
  ito::start_main_thread_with_worker_size(2, [] {
    int port = 0;
    const int lfd = socket_ito_made_nonblocking(&port);
    ASSERT_GE(lfd, 0);
    ASSERT_TRUE(::fcntl(lfd, F_GETFL) & O_NONBLOCK) << "the test needs the emulated wait";
    ASSERT_NE(::signal(SIGUSR1, on_signal), SIG_ERR);  // SA_RESTART
    struct sigaction sa {};
    ::sigaction(SIGUSR1, nullptr, &sa);
    ASSERT_TRUE(sa.sa_flags & SA_RESTART);
    g_handled.store(0);

    acceptor a(GetParam(), lfd);
    for (int k = 1; k <= 3; ++k) {
      ASSERT_TRUE(a.asleep()) << "accept returned " << a.result << " (" << std::strerror(a.error)
                              << ") before signal " << k;
      ASSERT_EQ(::pthread_kill(a.thread.native_handle(), SIGUSR1), 0);
      const auto end = clock_type::now() + generous;
      while (g_handled.load() < k && clock_type::now() < end) std::this_thread::sleep_for(1ms);
      ASSERT_EQ(g_handled.load(), k);
    }
    // Still blocked (or back asleep): a real connection ends the accept.
    const int client = connect_loopback(port);
    ASSERT_GE(client, 0);
    a.join();
    EXPECT_GE(a.result, 0) << "accept failed after a signal with SA_RESTART: "
                           << std::strerror(a.error);
    if (a.result >= 0) ::close(a.result);
    ::close(client);
    ::signal(SIGUSR1, SIG_DFL);
    ito::io::close(lfd);
  });
}

TEST_P(accept_on_os_thread, fails_with_eintr_after_a_handler_without_sa_restart) {
  ito::start_main_thread_with_worker_size(2, [] {
    int port = 0;
    const int lfd = socket_ito_made_nonblocking(&port);
    ASSERT_GE(lfd, 0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART
    ASSERT_EQ(::sigaction(SIGUSR1, &sa, nullptr), 0);

    acceptor a(GetParam(), lfd);
    ASSERT_TRUE(a.asleep());
    // Signal until the accept returns: one that lands before the thread is
    // in its wait only runs the handler.
    const auto end = clock_type::now() + generous;
    while (!a.returned.load(std::memory_order_acquire) && clock_type::now() < end) {
      ASSERT_EQ(::pthread_kill(a.thread.native_handle(), SIGUSR1), 0);
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(a.returned.load());
    a.join();
    EXPECT_EQ(a.result, -1);
    EXPECT_EQ(a.error, EINTR) << std::strerror(a.error);
    // Nothing was consumed: the listening socket still works.
    const int client = connect_loopback(port);
    ASSERT_GE(client, 0);
    ::signal(SIGUSR1, SIG_DFL);
    ::close(client);
    ito::io::close(lfd);
  });
}

// With SO_RCVTIMEO set, accept(2) is never restarted (signal(7)), SA_RESTART
// or not, and gives up with EAGAIN once the timeout has passed.
void set_receive_timeout(int fd, std::chrono::milliseconds t) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(t.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>(t.count() % 1000 * 1000);
  ASSERT_EQ(::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
}

TEST_P(accept_on_os_thread, with_a_receive_timeout_fails_with_eintr_even_after_sa_restart) {
  ito::start_main_thread_with_worker_size(2, [] {
    int port = 0;
    const int lfd = socket_ito_made_nonblocking(&port);
    ASSERT_GE(lfd, 0);
    set_receive_timeout(lfd, 600s);  // never reached
    ASSERT_NE(::signal(SIGUSR1, on_signal), SIG_ERR);
    acceptor a(GetParam(), lfd);
    ASSERT_TRUE(a.asleep());
    const auto end = clock_type::now() + generous;
    while (!a.returned.load(std::memory_order_acquire) && clock_type::now() < end) {
      ASSERT_EQ(::pthread_kill(a.thread.native_handle(), SIGUSR1), 0);
      std::this_thread::sleep_for(20ms);
    }
    ASSERT_TRUE(a.returned.load());
    a.join();
    EXPECT_EQ(a.result, -1);
    EXPECT_EQ(a.error, EINTR) << std::strerror(a.error);
    ::signal(SIGUSR1, SIG_DFL);
    ito::io::close(lfd);
  });
}

TEST_P(accept_on_os_thread, with_a_receive_timeout_gives_up_with_eagain) {
  ito::start_main_thread_with_worker_size(2, [] {
    int port = 0;
    const int lfd = socket_ito_made_nonblocking(&port);
    ASSERT_GE(lfd, 0);
    set_receive_timeout(lfd, 50ms);
    acceptor a(GetParam(), lfd);
    const auto end = clock_type::now() + generous;
    while (!a.returned.load(std::memory_order_acquire) && clock_type::now() < end)
      std::this_thread::sleep_for(5ms);
    ASSERT_TRUE(a.returned.load()) << "the receive timeout was not kept";
    a.join();
    EXPECT_EQ(a.result, -1);
    EXPECT_EQ(a.error, EAGAIN) << std::strerror(a.error);
    ito::io::close(lfd);
  });
}

INSTANTIATE_TEST_SUITE_P(layers, accept_on_os_thread, ::testing::Values(layer::io, layer::posix),
                         [](const ::testing::TestParamInfo<layer>& i) {
                           return i.param == layer::io ? std::string("io") : std::string("posix");
                         });

}  // namespace
