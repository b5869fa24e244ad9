// SPDX-License-Identifier: Apache-2.0
// Regular files on local file systems (io/local_files.hpp): a read from a ULT
// is served on the worker when the page cache has the data, and is still
// whole when only part of it is cached (the rest is read by delegation);
// every other kind of descriptor keeps the delegated path.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "io/errno_now.hpp"
#include "io/fd_table.hpp"
#include "ito/io.hpp"
#include "ito/runtime.hpp"
#include "ito/thread.hpp"

namespace {

using ito::detail::errno_now;  // errno of the OS thread now: a ULT may have moved (io/errno_now.hpp)
using ito::detail::fd_kind;

constexpr std::size_t file_size = 1 << 20;

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir && *dir ? dir : "/tmp";
}

// A file of `file_size` bytes whose byte i is a function of i, written and
// synced (so its pages are clean and can be dropped from the cache).
struct pattern_file {
  std::string path;
  pattern_file() {
    std::string pattern = temp_dir() + "/ito_local_file_XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    const int fd = mkstemp(name.data());
    path = name.data();
    std::vector<unsigned char> bytes(file_size);
    for (std::size_t i = 0; i < file_size; ++i) bytes[i] = byte_at(i);
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(file_size));
    EXPECT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  ~pattern_file() { ::unlink(path.c_str()); }
  static unsigned char byte_at(std::size_t i) { return static_cast<unsigned char>(i * 7 + i / 4096); }
};

fd_kind kind_of(int fd) {
  ito::detail::fd_state* st = ito::detail::fd_find(fd);
  return st ? st->kind.load() : fd_kind::unknown;
}

bool is_pattern(const std::vector<unsigned char>& buf, std::size_t from, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (buf[i] != pattern_file::byte_at(from + i)) return false;
  return true;
}

// Whether the page cache still holds the byte at `offset` (a read that may
// not wait succeeds).
bool cached_at(int fd, off_t offset) {
  unsigned char b;
  iovec one{&b, 1};
  return ::preadv2(fd, &one, 1, offset, RWF_NOWAIT) == 1;
}

TEST(io_local_file, a_read_half_in_the_cache_is_whole_and_ends_at_the_end_of_the_file) {
  pattern_file f;
  ito::start_main_thread_with_worker_size(2, [&] {
    ito::create_thread([&] {
      const int fd = ito::io::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0) << std::strerror(errno);
      if (kind_of(fd) != fd_kind::local_file)
        GTEST_SKIP() << temp_dir() << " is not a local disk or memory file system";
      // Only the first pages in the cache: the whole file dropped (clean
      // pages: it was synced; a range inside a large folio would not be),
      // then 8 KiB read back without read-ahead.
      bool dropped = false;
      for (int i = 0; i < 20 && !dropped; ++i) {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        dropped = !cached_at(fd, 0) && !cached_at(fd, file_size / 2);
        if (!dropped) ::usleep(5000);
      }
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
      std::vector<unsigned char> head(8192);
      ASSERT_EQ(::pread(fd, head.data(), head.size(), 0), 8192);
      const bool part_cached = dropped && cached_at(fd, 0) && !cached_at(fd, file_size / 2);
      std::vector<unsigned char> buf(file_size + 100);
      errno_now() = 1234;  // a read that succeeds leaves errno alone
      ASSERT_EQ(ito::io::read(fd, buf.data(), buf.size()), static_cast<ssize_t>(file_size))
          << "only the first pages cached: " << part_cached;
      EXPECT_EQ(errno_now(), 1234);
      EXPECT_TRUE(is_pattern(buf, 0, file_size));
      EXPECT_EQ(ito::io::read(fd, buf.data(), buf.size()), 0);  // at the end
      // pread: the middle, and past the end.
      ::posix_fadvise(fd, 0, file_size, POSIX_FADV_DONTNEED);
      EXPECT_EQ(ito::io::pread(fd, buf.data(), 10000, 300000), 10000);
      EXPECT_TRUE(is_pattern(buf, 300000, 10000));
      EXPECT_EQ(ito::io::pread(fd, buf.data(), 100, file_size - 40), 40);
      EXPECT_TRUE(is_pattern(buf, file_size - 40, 40));
      EXPECT_EQ(ito::io::pread(fd, buf.data(), 100, file_size + 1), 0);
      // The file position moved only with read.
      EXPECT_EQ(::lseek(fd, 0, SEEK_CUR), static_cast<off_t>(file_size));
      EXPECT_EQ(ito::io::close(fd), 0);
      EXPECT_EQ(kind_of(fd), fd_kind::unknown);
    }).get();
  });
}

TEST(io_local_file, reads_of_a_file_read_in_pieces_follow_the_file_position) {
  pattern_file f;
  ito::start_main_thread_with_worker_size(2, [&] {
    ito::create_thread([&] {
      const int fd = ito::io::open(f.path.c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      std::vector<unsigned char> buf(5000);
      std::size_t at = 0;
      for (int i = 0; i < 50; ++i) {
        if (i % 10 == 5) ito::yield();  // and from whichever worker runs it next
        ASSERT_EQ(ito::io::read(fd, buf.data(), buf.size()), 5000);
        ASSERT_TRUE(is_pattern(buf, at, 5000)) << "piece " << i;
        at += 5000;
      }
      EXPECT_EQ(ito::io::close(fd), 0);
    }).get();
  });
}

TEST(io_local_file, other_descriptors_keep_the_delegated_path_and_the_calls_own_errors) {
  pattern_file f;
  ito::start_main_thread_with_worker_size(1, [&] {
    ito::create_thread([&] {
      // Write-only: a local file, but not read-only, and its read fails as read(2) does.
      const int w = ito::io::open(f.path.c_str(), O_WRONLY);
      ASSERT_GE(w, 0);
      const bool local = kind_of(w) == fd_kind::local_file;
      if (local) {
        EXPECT_FALSE(ito::detail::fd_find(w)->read_only_file.load());
      }
      char c;
      errno_now() = 0;
      EXPECT_EQ(ito::io::read(w, &c, 1), -1);
      EXPECT_EQ(errno_now(), EBADF);
      EXPECT_EQ(ito::io::close(w), 0);
      // A FIFO (opened for both ends, so the open does not wait): not a file.
      const std::string fifo = f.path + ".fifo";
      ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
      const int p = ito::io::open(fifo.c_str(), O_RDWR);
      ASSERT_GE(p, 0);
      EXPECT_EQ(kind_of(p), fd_kind::other);
      EXPECT_EQ(ito::io::write(p, "x", 1), 1);
      EXPECT_EQ(ito::io::read(p, &c, 1), 1);
      EXPECT_EQ(c, 'x');
      EXPECT_EQ(ito::io::close(p), 0);
      ::unlink(fifo.c_str());
      // procfs: its reads run code that may wait, so they stay delegated.
      const int s = ito::io::open("/proc/self/status", O_RDONLY);
      ASSERT_GE(s, 0);
      EXPECT_EQ(kind_of(s), fd_kind::other);
      char text[64];
      EXPECT_GT(ito::io::read(s, text, sizeof text), 0);
      EXPECT_EQ(ito::io::close(s), 0);
      // A directory: a local file system, but not a regular file.
      const int d = ito::io::open(temp_dir().c_str(), O_RDONLY | O_DIRECTORY);
      ASSERT_GE(d, 0);
      EXPECT_EQ(kind_of(d), fd_kind::other);
      EXPECT_EQ(ito::io::read(d, text, sizeof text), -1);
      EXPECT_EQ(errno_now(), EISDIR);
      EXPECT_EQ(ito::io::close(d), 0);
    }).get();
  });
}

}  // namespace
