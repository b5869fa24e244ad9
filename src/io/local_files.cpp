// SPDX-License-Identifier: Apache-2.0
#include "io/local_files.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

#include "io/delegated_syscall.hpp"
#include "io/errno_now.hpp"
#include "io/fd_table.hpp"

namespace ito::detail {
namespace {

// Disk and memory file systems whose reads can be served from the page
// cache and whose close of a read-only file only drops a reference. Not NFS,
// CIFS or FUSE (close talks to a server or a daemon), nor procfs and sysfs
// (their reads run code that may wait; RWF_NOWAIT is refused there anyway).
bool local_file_system(long type) noexcept {
  switch (static_cast<unsigned long>(type) & 0xffffffffUL) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
      return true;
    default:
      return false;
  }
}

// The rest of a read the page cache served in part, on a pool thread.
ssize_t finish_delegated(int fd, char* buf, std::size_t count, off_t offset, ssize_t got) {
  const ssize_t rest = delegated_syscall([&] {
    return offset < 0 ? ::read(fd, buf + got, count - static_cast<std::size_t>(got))
                      : ::pread(fd, buf + got, count - static_cast<std::size_t>(got), offset + got);
  });
  // Data already taken from the file is the caller's: an error now only
  // shortens the read, as it would have stopped a plain one there.
  return rest > 0 ? got + rest : got;
}

}  // namespace

void classify_opened(int fd, int flags) noexcept {
  struct stat sb;
  struct statfs fs;
  const int saved = errno_now();
  const bool local = ::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && ::fstatfs(fd, &fs) == 0 &&
                     local_file_system(fs.f_type);
  errno_now() = saved;
  // A table entry for a local file (allocated once per 4,096 numbers): its
  // reads and close are then served on the worker.
  fd_state* st = local ? fd_lookup(fd) : fd_find(fd);
  if (!st) return;
  st->reset(local ? fd_kind::local_file : fd_kind::other);
  st->read_only_file.store(local && (flags & (O_ACCMODE | O_PATH)) == O_RDONLY,
                           std::memory_order_relaxed);
}

fd_state* local_file_entry(int fd) noexcept {
  fd_state* st = fd_find(fd);
  return st && st->kind.load(std::memory_order_relaxed) == fd_kind::local_file ? st : nullptr;
}

ssize_t read_local_file(int fd, fd_state& st, void* buf, std::size_t count, off_t offset) {
  const int saved = errno_now();
  iovec one{buf, count};
  const ssize_t r = ::preadv2(fd, &one, 1, offset, RWF_NOWAIT);
  if (r >= 0) {
    if (static_cast<std::size_t>(r) == count || r == 0) return r;
    // Short: the end of the file, or the rest is not cached.
    struct stat sb;
    const off_t at = offset >= 0 ? offset + r : ::lseek(fd, 0, SEEK_CUR);
    const bool at_end = ::fstat(fd, &sb) == 0 && at >= sb.st_size;
    errno_now() = saved;
    return at_end ? r : finish_delegated(fd, static_cast<char*>(buf), count, offset, r);
  }
  const int e = errno_now();
  if (e == EOPNOTSUPP || e == EINVAL || e == ENOSYS) {
    // This file system (or kernel, or emulator) takes no RWF_NOWAIT:
    // delegate this descriptor's reads from now on.
    st.kind.store(fd_kind::other, std::memory_order_relaxed);
  } else if (e != EAGAIN) {
    return -1;  // EBADF (opened write-only), EISDIR...: the plain call's error
  }
  errno_now() = saved;
  return delegated_syscall(
      [&] { return offset < 0 ? ::read(fd, buf, count) : ::pread(fd, buf, count, offset); });
}

}  // namespace ito::detail
