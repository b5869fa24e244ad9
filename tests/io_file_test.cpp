// SPDX-License-Identifier: Apache-2.0
// ito::io on files, pipes and clocks: delegated calls return what the system
// call returns with its errno, a blocking pipe read does not stall the worker,
// and sleeps suspend only the ULT.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ito/io.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"
#include "test_support.hpp"

namespace {

using namespace std::chrono_literals;

// A fresh path under TMPDIR (or /tmp), removed at the end of the test.
struct temp_path {
  std::string path;
  temp_path() {
    const char* dir = std::getenv("TMPDIR");
    std::string pattern = std::string(dir && *dir ? dir : "/tmp") + "/ito_io_file_XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd >= 0) ::close(fd);
    path = buf.data();
  }
  ~temp_path() { ::unlink(path.c_str()); }
};

void round_trip(const std::string& path) {
  int fd = ito::io::open(path.c_str(), O_RDWR | O_TRUNC | O_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  const std::string text = "hello from ito::io\n";
  EXPECT_EQ(ito::io::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  EXPECT_EQ(ito::io::pwrite(fd, "HELLO", 5, 0), 5);
  EXPECT_EQ(ito::io::fsync(fd), 0);
  char buf[64] = {};
  EXPECT_EQ(ito::io::pread(fd, buf, sizeof buf, 0), static_cast<ssize_t>(text.size()));
  EXPECT_EQ(std::string(buf, text.size()), "HELLO from ito::io\n");
  ASSERT_EQ(::lseek(fd, 6, SEEK_SET), 6);
  EXPECT_EQ(ito::io::read(fd, buf, 4), 4);
  EXPECT_EQ(std::string(buf, 4), "from");
  EXPECT_EQ(ito::io::close(fd), 0);
}

TEST(io_file, a_file_round_trip_from_a_ult_and_from_a_thread) {
  temp_path t;
  ito::start_main_thread_with_worker_size(2, [&] {
    round_trip(t.path);
    // From a ULT that is not the main one too (it may migrate while delegating).
    ito::join(ito::create_thread([&] { round_trip(t.path); }));
  });
  round_trip(t.path);
}

void check_file_errors(const std::string& dir) {
  const std::string missing = dir + "/no/such/file";
  errno = 0;
  EXPECT_EQ(ito::io::open(missing.c_str(), O_RDONLY), -1);
  EXPECT_EQ(errno, ENOENT);
  int fd = ito::io::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char c = 0;
  EXPECT_EQ(ito::io::write(fd, &c, 1), -1);  // opened read-only
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::close(fd), 0);
  EXPECT_EQ(ito::io::read(fd, &c, 1), -1);  // closed
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::pread(fd, &c, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::fsync(fd), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::close(fd), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(ito::io::close(-1), -1);
  EXPECT_EQ(errno, EBADF);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  EXPECT_EQ(ito::io::pread(sv[0], &c, 1, 0), -1);
  EXPECT_EQ(errno, ESPIPE);
  ito::io::close(sv[0]);
  ito::io::close(sv[1]);
  // errno survives a successful delegated call.
  errno = 4321;
  fd = ito::io::open("/dev/null", O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(errno, 4321);
  EXPECT_EQ(ito::io::read(fd, &c, 1), 0);
  EXPECT_EQ(errno, 4321);
  ito::io::close(fd);
}

TEST(io_file, errors_are_the_system_calls_own_from_a_ult) {
  ito::start_main_thread_with_worker_size(2, [] { check_file_errors("/tmp"); });
}

TEST(io_file, errors_are_the_system_calls_own_outside_a_ult) { check_file_errors("/tmp"); }

TEST(io_file, a_blocking_pipe_read_does_not_stall_the_only_worker) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  std::string got;
  // Should the read block the worker, the writer ULT could never run: a
  // watchdog thread then writes something else after 5 s, and the test fails.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    for (int i = 0; i < 500 && !done.load(); ++i) std::this_thread::sleep_for(10ms);
    if (!done.load()) (void)!::write(p[1], "watchdog", 8);
  });
  ito::start_main_thread_with_worker_size(1, [&] {
    auto writer = ito::create_thread([&] {
      ito::sleep_for(20ms);
      EXPECT_EQ(ito::io::write(p[1], "from a ULT", 10), 10);
    });
    char buf[32] = {};
    ssize_t n = ito::io::read(p[0], buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.assign(buf, static_cast<std::size_t>(n));
    ito::join(std::move(writer));
  });
  done = true;
  watchdog.join();
  EXPECT_EQ(got, "from a ULT");
  ito::io::close(p[0]);
  ito::io::close(p[1]);
}

TEST(io_file, sleeps_suspend_only_the_ult) {
  std::chrono::nanoseconds both{};
  ito::start_main_thread_with_worker_size(1, [&] {
    const auto t0 = std::chrono::steady_clock::now();
    auto a = ito::create_thread([] { ito::sleep_for(500ms); });
    auto b = ito::create_thread([] {
      timespec ts{0, 500'000'000}, rem{1, 1};
      EXPECT_EQ(ito::io::nanosleep(&ts, &rem), 0);
      EXPECT_EQ(rem.tv_sec, 0);
      EXPECT_EQ(rem.tv_nsec, 0);
    });
    ito::sleep_until(std::chrono::steady_clock::now() + 500ms);
    ito::join(std::move(a));
    ito::join(std::move(b));
    both = std::chrono::steady_clock::now() - t0;
  });
  // Three 500 ms sleeps on one worker overlap (one after another: 1.5 s; the
  // bound leaves room for a loaded machine or a sanitizer).
  EXPECT_GE(both, 500ms);
  EXPECT_LT(both, 1300ms);
}

void check_bad_sleeps() {
  timespec bad{0, -1};
  EXPECT_EQ(ito::io::nanosleep(&bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  bad = {0, 1'000'000'000};
  EXPECT_EQ(ito::io::nanosleep(&bad, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  ito::sleep_for(-5ms);  // a past deadline returns at once
}

TEST(io_file, bad_sleep_requests_fail_with_einval) {
  check_bad_sleeps();
  ito::start_main_thread_with_worker_size(1, [] { check_bad_sleeps(); });
}

}  // namespace
